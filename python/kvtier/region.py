# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Regions: an open file of a tier bound to a region, and what it moves.

A :class:`Region` comes from :meth:`kvtier.Tier.create` (unnamed) or
:meth:`kvtier.Tier.open` (named). Its bytes are reached three ways:

- mapped: :meth:`Region.map` returns a :class:`mmap.mmap` (MAP_SHARED) of
  the region; ``memoryview(m)``, ``numpy.frombuffer(m)`` and
  ``torch.frombuffer(memoryview(m))`` are views of the region's pages,
  without a copy (:meth:`Region.as_array`, :meth:`Region.as_tensor`);
- explicitly, without a mapping: :meth:`Region.pread`,
  :meth:`Region.readinto` and :meth:`Region.pwrite` (pread(2) and
  pwrite(2) on the region's file, as kvtier_region_read(3) does);
- in blocks, asynchronously: :class:`kvtier.Xfer`.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from . import _check
from ._lib import lib
from ._resource import Resource
from ._structs import RegionInfoStruct
from .constants import RegionFlag, RegionFlagViews
from .errors import check, raise_error

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

    from .tier import Tier

__all__ = ["Region", "RegionInfo"]

_IO_HINTS = {
    errno.EACCES: "the region was opened read-only",
    errno.EFBIG: "at or past the end of the region",
    errno.ENOBUFS: "the tier's host budget is full and nothing could be "
                   "evicted for about 2 s",
    errno.EIO: "a page could not be read back or written; see the "
               "region's error in info() and the kernel log",
}


@dataclass(frozen=True)
class RegionInfo(RegionFlagViews):
    """Where the bytes of a region are: a snapshot (kvtier_region_info(3)).

    Byte counts are in bytes, taken without stopping the region.
    """

    name: str | None
    """The region's name; None for an unnamed region."""
    id: int
    """Its id in the tier (debugfs "regions", tracepoints)."""
    size: int
    """Size in bytes (a multiple of the page size)."""
    resident: int
    """Bytes in the host pool."""
    namespace: int
    """Bytes of namespace slots held."""
    dirty: int
    """Resident bytes newer than their namespace copy."""
    pinned: int
    """Bytes pinned in host memory (:meth:`Region.pin`)."""
    faults: int
    """Page faults served."""
    refaults: int
    """Of those, pages read back from the namespace."""
    gpu_bytes: int
    """Bytes registered as GPU (HMM) ranges by the CUDA shim."""
    owner: int
    """uid of the creator."""
    mode: int
    """Permission bits."""
    users: int
    """Open files bound to the region."""
    flags: RegionFlag
    """PERSISTENT, RDONLY (this handle is read-only), PINNED, SEALED."""
    error: int
    """The sticky first write-back error as a negative errno, or 0."""

    @property
    def is_readonly(self) -> bool:
        """This handle is bound read-only."""
        return bool(self.flags & RegionFlag.RDONLY)

    @classmethod
    def _from(cls, s: RegionInfoStruct) -> RegionInfo:
        name = s.name.decode("ascii", "backslashreplace") or None
        return cls(name=name, id=s.id, size=s.size, resident=s.resident,
                   namespace=s.namespace, dirty=s.dirty, pinned=s.pinned,
                   faults=s.faults, refaults=s.refaults,
                   gpu_bytes=s.gpu_bytes, owner=s.owner, mode=s.mode,
                   users=s.users, flags=RegionFlag(s.flags), error=s.error)


def _byte_view(buf: object, writable: bool) -> memoryview:
    """``buf`` as a flat memoryview of bytes, without a copy."""
    try:
        view = memoryview(buf)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"buffer must support the buffer protocol (bytes, bytearray, "
            f"memoryview, mmap, numpy array), not {type(buf).__name__}"
        ) from None
    if writable and view.readonly:
        raise TypeError(f"buffer must be writable ({type(buf).__name__} "
                        "is read-only)")
    if not view.c_contiguous:
        raise ValueError("buffer must be C-contiguous")
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view


class Region(Resource):
    """An open file of a tier bound to a region.

    Not made directly: :meth:`kvtier.Tier.create` and
    :meth:`kvtier.Tier.open` return one. A context manager; the file is
    closed by :meth:`close`, the end of a ``with`` block, or garbage
    collection (with a ResourceWarning). An unnamed region is freed when
    its file and its last mapping are gone; a named one stays until it is
    unlinked.

    Sizes and offsets are in bytes. Methods may be called from several
    threads (:meth:`close` waits for the calls in progress), but what
    concurrent writes to the same bytes leave is undefined, as with any
    shared memory.
    """

    def __init__(self, tier: Tier, handle: ctypes.c_void_p,
                 name: str | None, readonly: bool) -> None:
        """Take over ``handle`` (a struct kvtier_region) of ``tier``.

        For :class:`kvtier.Tier` only.
        """
        fd = lib().kvtier_region_fd(handle)
        info = RegionInfoStruct()
        ret = lib().kvtier_region_info(handle, ctypes.byref(info))
        label = f"kvtier{tier.id}: " + (f"region {name!r}" if name
                                         else "unnamed region")
        if fd < 0 or ret < 0:
            lib().kvtier_region_close(handle)
            tier._orphan()
            check(min(fd, ret), f"{label}: region information",
                  filename=name)
        super().__init__()
        self._handle = handle
        self._tier = tier
        self._fd: int = fd
        self._name = name
        self._readonly = readonly
        self._size: int = info.size
        self._label = label

    def _describe(self) -> str:
        return f"Region {self._label}"

    def _release(self) -> None:
        lib().kvtier_region_close(self._handle)
        self._handle = None
        self._tier._orphan()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._size} bytes"
        return f"<kvtier.Region {self._label} ({state})>"

    @property
    def tier(self) -> Tier:
        """The :class:`kvtier.Tier` the region was opened from."""
        return self._tier

    @property
    def name(self) -> str | None:
        """The region's name; None for an unnamed region."""
        return self._name

    @property
    def size(self) -> int:
        """The region's size in bytes (a multiple of the page size)."""
        return self._size

    @property
    def readonly(self) -> bool:
        """True if the region was opened read-only."""
        return self._readonly

    def fileno(self) -> int:
        """The region's file descriptor (kvtier_region_fd(3)).

        It stays owned by the region: do not close it. Valid until
        :meth:`close`.
        """
        with self._use():
            return self._fd

    def info(self) -> RegionInfo:
        """A snapshot of where the region's bytes are (:class:`RegionInfo`)."""
        s = RegionInfoStruct()
        with self._use() as h:
            ret = lib().kvtier_region_info(h, ctypes.byref(s))
        check(ret, f"{self._label}: region information",
              filename=self._name)
        return RegionInfo._from(s)

    # --- mapping -------------------------------------------------------

    def map(self, writable: bool | None = None, *, offset: int = 0,
            length: int | None = None) -> mmap.mmap:
        """Map the region (or ``length`` bytes at ``offset``), MAP_SHARED.

        ``writable`` None maps read-write unless the region was opened
        read-only. ``offset`` is a multiple of :data:`mmap.PAGESIZE`;
        ``length`` None maps to the end of the region.

        The :class:`mmap.mmap` is the caller's: it holds its own
        duplicate of the region's file, so it stays valid after
        :meth:`close` (an unnamed region lives until it is closed too).
        ``memoryview(m)`` and ``numpy.frombuffer(m)`` are views without a
        copy; while one exists, ``m.close()`` raises BufferError instead
        of unmapping memory in use. ``torch.frombuffer`` does not keep
        that hold: give it ``memoryview(m)``, which it keeps alive with
        the tensor (as :meth:`as_tensor` does).
        """
        write = (not self._readonly) if writable is None else bool(writable)
        off = _check.size(offset, "offset")
        if off % mmap.ALLOCATIONGRANULARITY:
            raise ValueError(f"offset {off} is not a multiple of the page "
                             f"size ({mmap.ALLOCATIONGRANULARITY})")
        if off >= self._size:
            raise ValueError(f"offset {off} is not inside the region "
                             f"({self._size} bytes)")
        n = self._size - off if length is None else _check.size(length,
                                                                "length")
        if n == 0 or n > self._size - off:
            raise ValueError(f"length {n} at offset {off} is not inside "
                             f"the region ({self._size} bytes)")
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if write else 0)
        how = "read-write" if write else "read-only"
        with self._use():
            try:
                return mmap.mmap(self._fd, n, flags=mmap.MAP_SHARED,
                                 prot=prot, offset=off)
            except OSError as e:
                raise_error(e.errno or errno.EINVAL,
                            f"{self._label}: map {n} bytes at {off} {how}",
                            filename=self._name,
                            hint=_IO_HINTS.get(e.errno or 0))

    def as_array(self, dtype: Any = "uint8", shape: Any = None, *,
                 writable: bool | None = None) -> Any:
        """The region as a numpy array over a new mapping, without a copy.

        ``dtype`` is any numpy dtype; the array has ``size //
        itemsize`` elements, reshaped to ``shape`` if given. It keeps its
        mapping alive and is read-only if the mapping is (``writable`` as
        for :meth:`map`). Needs numpy (imported here, not at import).
        """
        try:
            import numpy as np
        except ImportError:
            raise ImportError("Region.as_array() needs numpy (Debian: "
                              "python3-numpy; pip: numpy)") from None
        m = self.map(writable)
        dt = np.dtype(dtype)
        arr = np.frombuffer(m, dtype=dt, count=len(m) // dt.itemsize)
        return arr if shape is None else arr.reshape(shape)

    def as_tensor(self, dtype: Any, shape: Any = None, *,
                  writable: bool | None = None) -> Any:
        """The region as a CPU torch tensor over a new mapping, no copy.

        ``dtype`` is a torch dtype (``torch.float16``...); the tensor has
        ``size // element_size`` elements, viewed as ``shape`` if given.
        It keeps a memoryview of its mapping, so the mapping stays until
        the tensor (and every view of it) is gone. torch has no read-only
        tensors: on a read-only mapping torch warns, and writing into the
        tensor kills the process with SIGSEGV; copy it (``.clone()``,
        ``.to("cuda")``) instead. Needs PyTorch (imported here).
        """
        try:
            import torch
        except ImportError:
            raise ImportError("Region.as_tensor() needs PyTorch (torch), "
                              "which is not installed") from None
        m = self.map(writable)
        t = torch.frombuffer(memoryview(m), dtype=dtype)
        return t if shape is None else t.view(shape)

    # --- explicit I/O --------------------------------------------------

    def _io_error(self, err: int | None, what: str) -> NoReturn:
        raise_error(err or errno.EIO, f"{self._label}: {what}",
                    filename=self._name, hint=_IO_HINTS.get(err or 0))

    def pread(self, n: int, offset: int = 0) -> bytes:
        """``n`` bytes at ``offset``; fewer if the region ends first.

        Pages not in the host pool are read back from the namespace;
        bytes never written read as zeros. Short reads are continued
        until ``n`` bytes, the end, or an error (raised only if nothing
        was read). Reading at or past the end returns b"".
        """
        want = _check.size(n, "n")
        off = _check.size(offset, "offset")
        if want > _check.OFF_MAX - off:
            raise ValueError(f"{want} bytes at {off} run past 2**63 - 1")
        parts: list[bytes] = []
        done = 0
        with self._use():
            while done < want:
                try:
                    got = os.pread(self._fd, want - done, off + done)
                except OSError as e:
                    if done:
                        break
                    self._io_error(e.errno, f"read {want} bytes at {off}")
                if not got:
                    break
                parts.append(got)
                done += len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def readinto(self, buf: WriteableBuffer, offset: int = 0) -> int:
        """Read into ``buf`` from ``offset``: how many bytes were read.

        ``buf`` is any writable, C-contiguous object with the buffer
        protocol (bytearray, memoryview, mmap, numpy array); the bytes go
        straight into it with preadv(2), no copy. Fills it all unless the
        region ends first; errors as for :meth:`pread`.
        """
        view = _byte_view(buf, writable=True)
        off = _check.size(offset, "offset")
        want = view.nbytes
        if want > _check.OFF_MAX - off:
            raise ValueError(f"{want} bytes at {off} run past 2**63 - 1")
        done = 0
        with self._use():
            while done < want:
                try:
                    got = os.preadv(self._fd, [view[done:]], off + done)
                except OSError as e:
                    if done:
                        break
                    self._io_error(e.errno, f"read {want} bytes at {off}")
                if not got:
                    break
                done += got
        return done

    def pwrite(self, buf: ReadableBuffer, offset: int = 0) -> int:
        """Write all of ``buf`` at ``offset``: how many bytes were written.

        ``buf`` is any C-contiguous object with the buffer protocol,
        written straight from its memory with pwrite(2). Short writes are
        continued; the count is less than ``len(buf)`` only where the
        region ends. Writing at or past the end raises EFBIG; an error
        after some bytes were written returns their count. Durable on the
        namespace after :meth:`fsync`.
        """
        view = _byte_view(buf, writable=False)
        off = _check.size(offset, "offset")
        want = view.nbytes
        if want > _check.OFF_MAX - off:
            raise ValueError(f"{want} bytes at {off} run past 2**63 - 1")
        done = 0
        with self._use():
            while done < want:
                try:
                    got = os.pwrite(self._fd, view[done:], off + done)
                except OSError as e:
                    if done:
                        break
                    self._io_error(e.errno, f"write {want} bytes at {off}")
                if not got:
                    break
                done += got
        return done

    def fsync(self) -> None:
        """Make the region durable on the namespace (kvtier_region_sync(3)).

        Writes every dirty page back, flushes the device and, for a
        persistent region, commits its record: bytes written before the
        call (mapped, :meth:`pwrite`, :class:`kvtier.Xfer` stores)
        survive a crash, a module reload or a reboot. Pages stay resident.
        """
        with self._use() as h:
            ret = lib().kvtier_region_sync(h)
        check(ret, f"{self._label}: sync", filename=self._name,
              hints=_IO_HINTS)

    # --- hints and pins ------------------------------------------------

    def fadvise(self, offset: int, length: int, advice: int) -> None:
        """posix_fadvise(2) on the region's file.

        kvtier acts on ``os.POSIX_FADV_WILLNEED`` (as :meth:`prefetch`)
        and ``os.POSIX_FADV_DONTNEED`` (as :meth:`cold`).
        """
        off = _check.size(offset, "offset")
        n = _check.size(length, "length")
        adv = _check.integer(advice, "advice", 0, 2**31 - 1)
        with self._use():
            try:
                os.posix_fadvise(self._fd, off, n, adv)
            except OSError as e:
                self._io_error(e.errno, f"fadvise({off}, {n}, {adv})")

    def _range_call(self, fn: str, what: str, offset: int,
                    length: int | None, hints: dict[int, str]) -> None:
        off = _check.size(offset, "offset")
        if length is None:
            n = self._size - off if off < self._size else 0
        else:
            n = _check.size(length, "length")
        with self._use() as h:
            ret = getattr(lib(), fn)(h, off, n)
        check(ret, f"{self._label}: {what} {n} bytes at {off}",
              filename=self._name, hints=hints)

    def prefetch(self, offset: int = 0, length: int = 0) -> None:
        """Start reading a range into the host pool; returns at once.

        ``length`` 0 means to the end of the region, and a range past the
        end stops there; unaligned ranges cover every page they touch
        (kvtier_region_prefetch(3)).
        """
        self._range_call("kvtier_region_prefetch", "prefetch", offset,
                         length, {})

    def cold(self, offset: int = 0, length: int = 0) -> None:
        """Write a range back and drop it from host memory; data is kept.

        Returns when the write-back is done; pinned pages stay. Ranges as
        for :meth:`prefetch` (kvtier_region_cold(3)).
        """
        self._range_call("kvtier_region_cold", "cold", offset, length,
                         _IO_HINTS)

    def pin(self, offset: int = 0, length: int | None = None) -> None:
        """Make a range resident and keep it from eviction until unpinned.

        ``offset`` and ``length`` are multiples of the page size (the
        module refuses others with EINVAL); ``length`` None means to the
        end of the region. Pins belong to this handle and end with
        :meth:`close`; they are bounded by the tier's pin budget (ENOSPC)
        and the user's (EDQUOT) (kvtier_region_pin(3)).
        """
        self._range_call("kvtier_region_pin", "pin", offset, length, {
            errno.EINVAL: "offset and length must be page multiples, "
                          "length > 0, inside the region",
            errno.ENOSPC: "over the tier's pin limit (pin_budget_mb, half "
                          "of host_budget_mb)",
            errno.EDQUOT: "over the user's pin limit (user_pin_mb)",
        })

    def unpin(self, offset: int = 0, length: int | None = None) -> None:
        """Release this handle's pins of a range (as for :meth:`pin`)."""
        self._range_call("kvtier_region_unpin", "unpin", offset, length, {})
