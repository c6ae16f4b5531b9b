# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The lifetime of a native handle shared by threads.

Each method of a Tier, Region or Xfer runs inside ``with self._use():``.
That refuses an object already closed with ValueError, as Python's files
do, and makes :meth:`Resource.close` wait until the calls other threads
have in progress return before the handle is freed: a close never pulls
a handle from under a call.
"""

from __future__ import annotations

import threading
import warnings
from types import TracebackType
from typing import Any, Self


class _Use:
    """The context manager of one call on a resource."""

    __slots__ = ("_res",)

    def __init__(self, res: Resource) -> None:
        self._res = res

    def __enter__(self) -> Any:
        res = self._res
        with res._cond:
            if res._closed:
                raise ValueError(f"{res._describe()} is closed")
            res._busy += 1
        return res._handle

    def __exit__(self, typ: type[BaseException] | None,
                 exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        res = self._res
        with res._cond:
            res._busy -= 1
            if not res._busy:
                res._cond.notify_all()


class Resource:
    """Base of the classes that own a libkvtier handle.

    Subclasses set ``_handle`` and implement :meth:`_release` (free the
    handle; called once, with no call in progress) and :meth:`_describe`.
    """

    _handle: Any = None
    _closed: bool = True

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._busy = 0
        self._closed = False

    def _use(self) -> _Use:
        return _Use(self)

    def _describe(self) -> str:
        return type(self).__name__

    def _release(self) -> None:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Release the handle; later calls raise ValueError.

        Waits for calls in progress in other threads to return. Closing a
        closed object does nothing.
        """
        cond = getattr(self, "_cond", None)
        if cond is None:        # __init__ did not get that far
            return
        with cond:
            if self._closed:
                return
            self._closed = True
            while self._busy:
                cond.wait()
        self._release()

    def __enter__(self) -> Self:
        with self._use():
            return self

    def __exit__(self, typ: type[BaseException] | None,
                 exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
        warnings.warn(f"unclosed {self._describe()}", ResourceWarning,
                      stacklevel=2, source=self)
        try:
            self.close()
        except Exception:       # interpreter shutdown: nothing left to do
            pass
