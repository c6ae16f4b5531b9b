# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Buffers handed to libkvtier by address, held until it is done with them.

A :class:`Pinned` takes the buffer of any object with the buffer protocol
(bytes, bytearray, memoryview, mmap, array.array, numpy arrays) through
``PyObject_GetBuffer()``, the C API's own way: its address is stable and
the exporter refuses to resize or close it (BufferError) until
:meth:`Pinned.release`. Read-only objects can be pinned for reading,
which ctypes' ``from_buffer()`` cannot do without a copy.
"""

from __future__ import annotations

import ctypes
import threading

_PyBUF_WRITABLE = 0x0001
_PyBUF_C_CONTIGUOUS = 0x0038


class _PyBuffer(ctypes.Structure):
    """Py_buffer of the CPython C API (part of the stable ABI)."""

    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


_get = ctypes.pythonapi.PyObject_GetBuffer
_get.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get.restype = ctypes.c_int
_rel = ctypes.pythonapi.PyBuffer_Release
_rel.argtypes = [ctypes.POINTER(_PyBuffer)]
_rel.restype = None


class Pinned:
    """The C-contiguous buffer of an object, exported until released.

    Raises TypeError if the object has no buffer protocol, and
    BufferError if it is not C-contiguous or (``writable``) is read-only
    (exporters say so with BufferError or ValueError: both become
    BufferError).
    """

    __slots__ = ("_view", "_held", "_lock", "address", "nbytes")

    def __init__(self, obj: object, writable: bool) -> None:
        self._held = False
        self._lock = threading.Lock()
        self._view = _PyBuffer()
        flags = _PyBUF_C_CONTIGUOUS | (_PyBUF_WRITABLE if writable else 0)
        try:
            _get(obj, ctypes.byref(self._view), flags)
        except ValueError as e:
            raise BufferError(str(e)) from None
        self._held = True
        self.address: int = self._view.buf or 0
        """The address of the buffer's first byte (0 if it is empty)."""
        self.nbytes: int = self._view.len
        """Its length in bytes."""

    def release(self) -> None:
        """Give the buffer back to its object (once; then a no-op)."""
        with self._lock:
            if not self._held:
                return
            self._held = False
        _rel(ctypes.byref(self._view))

    def __del__(self) -> None:
        if getattr(self, "_held", False):
            self.release()
