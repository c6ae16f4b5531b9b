# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Loading libkvtier with ctypes, and the prototype of every function used.

The library is loaded on first use, not at import: ``import kvtier``
works (and ``kvtier.__version__`` answers) on a machine without it.

Where it is found: the path in the environment variable
``KVTIER_LIBRARY`` if that is set and not empty (it must be a path, and
it must load), else ``libkvtier.so.0`` by the dynamic linker's search
(the libkvtier0 package, ``make install``, ``LD_LIBRARY_PATH``).

ctypes releases the GIL around every call into the library, so a
blocking call (an xfer wait, a sync) lets other Python threads run.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from ._structs import (GpuHostStruct, RegionEntryStruct, RegionInfoStruct,
                       StatStruct, TierInfoStruct, XferAttrStruct)
from .errors import LibraryError

SONAME = "libkvtier.so.0"
"""The library's soname, loaded when KVTIER_LIBRARY is not set."""

ENV = "KVTIER_LIBRARY"
"""The environment variable naming the library's path."""

_vp = ctypes.c_void_p
_int = ctypes.c_int
_uint = ctypes.c_uint
_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_str = ctypes.c_char_p
_buf = ctypes.POINTER(ctypes.c_char)
_vpp = ctypes.POINTER(ctypes.c_void_p)
_u64p = ctypes.POINTER(ctypes.c_uint64)
_sizep = ctypes.POINTER(ctypes.c_size_t)

# name: (restype, argtypes, the LIBKVTIER_ node that added it)
_PROTOTYPES: dict[str, tuple[Any, list[Any], str]] = {
    "kvtier_version": (_str, [], "0.4"),
    "kvtier_tier_open": (_int, [_uint, _vpp], "0.1"),
    "kvtier_tier_close": (None, [_vp], "0.1"),
    "kvtier_tier_fd": (_int, [_vp], "0.1"),
    "kvtier_tier_info": (_int, [_vp, ctypes.POINTER(TierInfoStruct)], "0.1"),
    "kvtier_attach": (_int, [_uint, _str], "0.1"),
    "kvtier_detach": (_int, [_uint], "0.1"),
    "kvtier_format": (_int, [_uint, _str], "0.2"),
    "kvtier_tier_attr_get": (_int, [_uint, _str, _buf, _size], "0.5"),
    "kvtier_tier_attr_set": (_int, [_uint, _str, _str], "0.5"),
    "kvtier_region_list": (
        _int, [_vp, ctypes.POINTER(ctypes.POINTER(RegionEntryStruct)),
               _sizep], "0.2"),
    "kvtier_region_unlink": (_int, [_vp, _str], "0.2"),
    "kvtier_region_setflags": (_int, [_vp, _str, _uint, _uint], "0.2"),
    "kvtier_region_create": (_int, [_vp, _u64, _vpp], "0.3"),
    "kvtier_region_open": (_int, [_vp, _str, _u64, _uint, _uint, _vpp],
                           "0.3"),
    "kvtier_region_close": (None, [_vp], "0.3"),
    "kvtier_region_fd": (_int, [_vp], "0.3"),
    "kvtier_region_prefetch": (_int, [_vp, _u64, _u64], "0.3"),
    "kvtier_region_cold": (_int, [_vp, _u64, _u64], "0.3"),
    "kvtier_region_pin": (_int, [_vp, _u64, _u64], "0.3"),
    "kvtier_region_unpin": (_int, [_vp, _u64, _u64], "0.3"),
    "kvtier_region_sync": (_int, [_vp], "0.3"),
    "kvtier_region_info": (_int, [_vp, ctypes.POINTER(RegionInfoStruct)],
                           "0.3"),
    "kvtier_tier_stats": (
        _int, [_uint, ctypes.POINTER(ctypes.POINTER(StatStruct)), _sizep],
        "0.3"),
    "kvtier_gpu_host_probe": (_int, [_uint, ctypes.POINTER(GpuHostStruct)],
                              "0.5"),
    "kvtier_gpu_mode_check": (
        _int, [ctypes.POINTER(GpuHostStruct), _int, _buf, _size], "0.5"),
    "kvtier_xfer_create": (
        _int, [_vp, ctypes.POINTER(XferAttrStruct), _vpp], "0.3"),
    "kvtier_xfer_destroy": (None, [_vp], "0.3"),
    "kvtier_xfer_store": (_int, [_vp, _vpp, _u64p, _uint, _u64p], "0.3"),
    "kvtier_xfer_restore": (_int, [_vp, _vpp, _u64p, _uint, _u64p], "0.3"),
    "kvtier_xfer_poll": (_int, [_vp, _u64], "0.3"),
    "kvtier_xfer_wait": (_int, [_vp, _u64], "0.3"),
}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_libc: ctypes.CDLL | None = None


def _where() -> tuple[str, str]:
    """The name to load and how it was chosen, for messages."""
    path = os.environ.get(ENV, "")
    if not path:
        return SONAME, f"{SONAME} (the dynamic linker's search; set {ENV} "\
            "to a path to load another)"
    if "/" not in path:
        raise LibraryError(
            f"{ENV}={path!r} is not a path: give the library's file, "
            f"such as /usr/lib/x86_64-linux-gnu/{SONAME} or ./lib/{SONAME}",
            name=SONAME, path=path)
    return path, f"{ENV}={path}"


def _load() -> ctypes.CDLL:
    name, origin = _where()
    try:
        cdll = ctypes.CDLL(name, use_errno=False)
    except OSError as e:
        hint = ""
        if name == SONAME:
            hint = " (install the libkvtier0 package, or make install)"
        raise LibraryError(f"cannot load libkvtier from {origin}: {e}{hint}",
                           name=SONAME, path=name) from None
    for fn, (restype, argtypes, node) in _PROTOTYPES.items():
        try:
            f = getattr(cdll, fn)
        except AttributeError:
            raise LibraryError(
                f"{name} (from {origin}) has no {fn}(): it is older than "
                f"LIBKVTIER_{node}, which this package needs",
                name=SONAME, path=name) from None
        f.restype = restype
        f.argtypes = argtypes
    return cdll


def lib() -> ctypes.CDLL:
    """libkvtier, loaded and with its prototypes set (once per process).

    Raises :class:`kvtier.LibraryError` if it cannot be loaded or lacks a
    function; the next call tries again.
    """
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
    return _lib


def free(ptr: Any) -> None:
    """free(3) an array libkvtier allocated (regions, stats)."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None)
        _libc.free.restype = None
        _libc.free.argtypes = [ctypes.c_void_p]
    _libc.free(ctypes.cast(ptr, ctypes.c_void_p))
