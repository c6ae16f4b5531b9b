# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Argument checks made before any call, with the messages they give.

A value that C could not even represent (a negative size, a name that
would be cut at a NUL or does not fit its field, a string where a number
belongs) is refused here with ValueError or TypeError; values that are
well-formed but that the library or the module refuses (a flag
combination, an unaligned pin, a mode above 0777) reach them and come
back as :class:`kvtier.KvtierError` with their errno.
"""

from __future__ import annotations

import operator
import os
from typing import Union

from .constants import NAME_MAX

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1
OFF_MAX = (1 << 63) - 1
"""The largest offset or size: byte offsets are off_t in the kernel."""

PathArg = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
"""A file system path, as :func:`os.fsencode` takes it."""


def integer(value: object, what: str, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi]; TypeError or ValueError otherwise.

    Anything with ``__index__`` (numpy integers) is taken; bool is not.
    """
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool")
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an integer, not "
                        f"{type(value).__name__}") from None
    if n < lo or n > hi:
        if hi == OFF_MAX:
            span = f"{lo} to 2**63 - 1"
        elif hi == U64_MAX:
            span = f"{lo} to 2**64 - 1"
        elif hi == U32_MAX:
            span = f"{lo} to 2**32 - 1"
        else:
            span = f"{lo} to {hi}"
        raise ValueError(f"{what} must be {span}, not {n}")
    return n


def tier_id(value: object) -> int:
    """A tier number (N of /dev/kvtierN)."""
    return integer(value, "tier id", 0, U32_MAX)


def size(value: object, what: str = "size") -> int:
    """A byte count or offset: 0 to 2**63 - 1."""
    return integer(value, what, 0, OFF_MAX)


def u32(value: object, what: str) -> int:
    """An unsigned int of the C API."""
    return integer(value, what, 0, U32_MAX)


def region_name(name: object) -> bytes:
    """A region name as the module takes it, encoded.

    1 to 63 bytes of printable ASCII other than space and '/'
    (``str`` or ``bytes``).
    """
    if isinstance(name, str):
        try:
            raw = name.encode("ascii")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"region name {name!r} is not ASCII: names are 1 to "
                f"{NAME_MAX} bytes of printable ASCII other than space "
                f"and '/' ({name[e.start]!r} at {e.start})") from None
    elif isinstance(name, (bytes, bytearray)):
        raw = bytes(name)
    else:
        raise TypeError(f"region name must be str or bytes, not "
                        f"{type(name).__name__}")
    if not raw:
        raise ValueError("region name is empty: names are 1 to "
                         f"{NAME_MAX} bytes")
    if len(raw) > NAME_MAX:
        raise ValueError(f"region name {raw.decode('latin-1')!r} is "
                         f"{len(raw)} bytes long: at most {NAME_MAX}")
    for i, b in enumerate(raw):
        if b < 0x21 or b > 0x7e or b == 0x2f:
            raise ValueError(
                f"region name {raw.decode('latin-1')!r} has byte "
                f"{bytes([b])!r} at {i}: names are printable ASCII other "
                "than space and '/'")
    return raw


def attr_name(name: object) -> bytes:
    """A sysfs attribute name of a tier's directory, encoded."""
    if not isinstance(name, str):
        raise TypeError(f"attribute name must be str, not "
                        f"{type(name).__name__}")
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"attribute name {name!r} is not a file name of "
                         "/sys/class/kvtier/kvtierN/")
    return os.fsencode(name)


def attr_value(value: object) -> bytes:
    """An attribute value: str or int, as written to sysfs."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"attribute value must be str or int, not "
                        f"{type(value).__name__}")
    text = str(value)
    if "\0" in text:
        raise ValueError("attribute value contains a NUL byte")
    return os.fsencode(text)


def device_path(path: object) -> tuple[bytes, str]:
    """A block device path for attach and format: (encoded, for messages)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be str, bytes or os.PathLike, not "
                        f"{type(path).__name__}")
    raw = os.fsencode(path)
    shown = os.fsdecode(raw)
    if not raw:
        raise ValueError("path is empty")
    if b"\0" in raw:
        raise ValueError(f"path {shown!r} contains a NUL byte")
    if raw == b"none":
        raise ValueError("'none' is backing_dev's detach keyword, not a "
                         "device: use kvtier.detach()")
    return raw, shown
