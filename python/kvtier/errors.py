# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The exceptions kvtier raises.

Every failed call of libkvtier or of the system raises a
:class:`KvtierError`, a subclass of :class:`OSError`. Where Python has an
:class:`OSError` subclass for the errno (:class:`FileNotFoundError` for
ENOENT, :class:`PermissionError` for EACCES and EPERM, ...), the error
raised is a class derived from both, so either ``except`` clause catches
it::

    try:
        tier.open("prefix:sys")
    except FileNotFoundError:       # or except kvtier.KvtierError
        ...

``errno`` holds the error number, ``strerror`` what was being done in
words and why it failed (``"kvtier0: open region 'abc': No such file or
directory"``), ``filename`` the region name or path the call was about.

Bad arguments are refused before any call with :class:`ValueError` or
:class:`TypeError`; the library itself is missing or unusable:
:class:`LibraryError`.
"""

from __future__ import annotations

import errno
import os
from typing import NoReturn

__all__ = [
    "KvtierError",
    "LibraryError",
    "KvtierBlockingIOError",
    "KvtierBrokenPipeError",
    "KvtierChildProcessError",
    "KvtierConnectionAbortedError",
    "KvtierConnectionRefusedError",
    "KvtierConnectionResetError",
    "KvtierFileExistsError",
    "KvtierFileNotFoundError",
    "KvtierInterruptedError",
    "KvtierIsADirectoryError",
    "KvtierNotADirectoryError",
    "KvtierPermissionError",
    "KvtierProcessLookupError",
    "KvtierTimeoutError",
    "error_class",
    "attach_message",
]


class LibraryError(ImportError):
    """libkvtier could not be loaded, or lacks a function this package needs.

    Raised by the first call that needs the library (``import kvtier``
    itself never loads it).
    """


class KvtierError(OSError):
    """A kvtier operation failed.

    ``errno`` is the error number, ``strerror`` the operation in words and
    the reason, ``filename`` the region name or path it concerned (or
    None). ``str()`` of the error is ``strerror``.
    """

    def __str__(self) -> str:
        return str(self.strerror)


class KvtierBlockingIOError(KvtierError, BlockingIOError):
    """EAGAIN, EALREADY, EINPROGRESS: would block, or no thread to start."""


class KvtierBrokenPipeError(KvtierError, BrokenPipeError):
    """EPIPE, ESHUTDOWN."""


class KvtierChildProcessError(KvtierError, ChildProcessError):
    """ECHILD."""


class KvtierConnectionAbortedError(KvtierError, ConnectionAbortedError):
    """ECONNABORTED."""


class KvtierConnectionRefusedError(KvtierError, ConnectionRefusedError):
    """ECONNREFUSED."""


class KvtierConnectionResetError(KvtierError, ConnectionResetError):
    """ECONNRESET."""


class KvtierFileExistsError(KvtierError, FileExistsError):
    """EEXIST: the region exists (exclusive create), or is another user's."""


class KvtierFileNotFoundError(KvtierError, FileNotFoundError):
    """ENOENT: no such region, tier, attribute, path or ticket."""


class KvtierInterruptedError(KvtierError, InterruptedError):
    """EINTR: interrupted by a signal (pins: nothing stays pinned)."""


class KvtierIsADirectoryError(KvtierError, IsADirectoryError):
    """EISDIR."""


class KvtierNotADirectoryError(KvtierError, NotADirectoryError):
    """ENOTDIR."""


class KvtierPermissionError(KvtierError, PermissionError):
    """EACCES, EPERM: the mode, ownership or a capability refuses it."""


class KvtierProcessLookupError(KvtierError, ProcessLookupError):
    """ESRCH."""


class KvtierTimeoutError(KvtierError, TimeoutError):
    """ETIMEDOUT."""


_BY_BUILTIN: dict[type[OSError], type[KvtierError]] = {
    BlockingIOError: KvtierBlockingIOError,
    BrokenPipeError: KvtierBrokenPipeError,
    ChildProcessError: KvtierChildProcessError,
    ConnectionAbortedError: KvtierConnectionAbortedError,
    ConnectionRefusedError: KvtierConnectionRefusedError,
    ConnectionResetError: KvtierConnectionResetError,
    FileExistsError: KvtierFileExistsError,
    FileNotFoundError: KvtierFileNotFoundError,
    InterruptedError: KvtierInterruptedError,
    IsADirectoryError: KvtierIsADirectoryError,
    NotADirectoryError: KvtierNotADirectoryError,
    PermissionError: KvtierPermissionError,
    ProcessLookupError: KvtierProcessLookupError,
    TimeoutError: KvtierTimeoutError,
}


def error_class(err: int) -> type[KvtierError]:
    """The exception class for error number ``err`` (sign ignored).

    The same subclass of :class:`OSError` that Python itself picks for
    that errno, combined with :class:`KvtierError`; :class:`KvtierError`
    where Python has none (EINVAL, EBUSY, ENOSPC, EIO, ...).
    """
    builtin = type(OSError(abs(err), ""))
    return _BY_BUILTIN.get(builtin, KvtierError)


def make_error(err: int, what: str, *, filename: str | None = None,
               hint: str | None = None,
               message: str | None = None) -> KvtierError:
    """The :class:`KvtierError` for error number ``err`` (sign ignored).

    Its ``strerror`` is ``message`` if given, else ``"<what>: <the
    system's text for err>"``, with `` (<hint>)`` appended if given.
    """
    code = abs(err)
    if message is None:
        message = f"{what}: {os.strerror(code)}"
        if hint:
            message += f" ({hint})"
    if filename is None:
        return error_class(code)(code, message)
    return error_class(code)(code, message, filename)


def raise_error(err: int, what: str, *, filename: str | None = None,
                hint: str | None = None,
                message: str | None = None) -> NoReturn:
    """Raise :func:`make_error`'s exception, without exception chaining."""
    raise make_error(err, what, filename=filename, hint=hint,
                     message=message) from None


def check(ret: int, what: str, *, filename: str | None = None,
          hints: dict[int, str] | None = None) -> int:
    """``ret`` if it is not negative; else raise its error.

    ``ret`` is what a libkvtier function returned: a value, or a negative
    errno. ``hints`` maps an errno to words appended to the message.
    """
    if ret >= 0:
        return ret
    hint = hints.get(-ret) if hints else None
    raise_error(ret, what, filename=filename, hint=hint)


def attach_message(tier_id: int, path: str, fmt: bool, err: int) -> str:
    """Why the kernel refused to attach (or format) ``path``, in words.

    The explanations ``kvtierctl attach`` gives (tools/cmd_attach.c,
    attach_error()), for error number ``err`` (sign ignored).
    """
    code = abs(err)
    op = "format" if fmt else "attach"
    to = "for" if fmt else "to"
    head = f"{op} {path} {to} kvtier{tier_id}"
    if code == errno.EMEDIUMTYPE:
        return (f"{path} holds a foreign signature or data (see dmesg); "
                "use attach --format to destroy it")
    if code == errno.EUCLEAN:
        return (f"damaged kvtier metadata on {path}: see dmesg; attach "
                "--format to start over (loses all persistent regions)")
    if code == errno.EOPNOTSUPP:
        return f"{path} has a newer kvtier format than this module"
    if code == errno.ENOSPC:
        return f"{path} is too small for a kvtier namespace"
    if code == errno.EBUSY:
        return (f"{head}: the device is claimed by someone else (a mount, "
                "md/dm, another tier) or the tier is busy")
    if code == errno.EIO:
        return f"{head}: I/O error on the device (see dmesg)"
    if code in (errno.EACCES, errno.EPERM):
        return f"{head}: {os.strerror(code)} (needs root)"
    return f"{head}: {os.strerror(code)}"
