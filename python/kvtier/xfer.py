# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Block offload: store KV blocks into a region and restore them, async.

An :class:`Xfer` moves blocks of ``block_bytes`` between buffers and
region offsets on libkvtier's worker threads (kvtier_xfer_create(3)):
:meth:`Xfer.store` and :meth:`Xfer.restore` return a ticket at once, and
:meth:`Xfer.poll` or :meth:`Xfer.wait` give its result. With
``cuda=True`` the buffers may be CUDA device memory, copied through
pinned staging buffers on low-priority streams.
"""

from __future__ import annotations

import ctypes
import errno
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

from . import _check
from ._buffer import Pinned
from ._lib import lib
from ._resource import Resource
from ._structs import XferAttrStruct
from .errors import check, raise_error
from .region import Region

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["Block", "SupportsDataPtr", "Xfer"]

XFER_CUDA = 1 << 0
"""KVTIER_XFER_CUDA."""

_MAX_STAGING_BUFFERS = 64
_MAX_STAGING_BYTES = 1 << 30


@runtime_checkable
class SupportsDataPtr(Protocol):
    """An object with a device address, such as a torch tensor."""

    def data_ptr(self) -> int:
        """The address of its first byte."""


Block = Union["ReadableBuffer", int, SupportsDataPtr]
"""A block buffer: an object with the buffer protocol; with cuda=True
also a device address (int) or an object with ``data_ptr()``."""


@dataclass
class _Job:
    """What a ticket keeps alive until it is reaped."""

    kind: str
    blocks: int
    held: list[object] = field(default_factory=list)

    def release(self) -> None:
        for h in self.held:
            if isinstance(h, Pinned):
                h.release()
        self.held.clear()


_JOB_HINTS = {
    errno.EIO: "a page could not be read from or written to the namespace, "
               "or (cuda) a CUDA copy failed",
    errno.EFAULT: "a buffer is not valid memory",
    errno.ENOSPC: "the namespace has no room for the blocks",
    errno.ENOENT: "no call of this xfer has that ticket, or it was reaped "
                  "already",
}


class Xfer(Resource):
    """Asynchronous block store and restore on a region.

    ``block_bytes`` is the size of every block (> 0, at most the region's
    size). With ``cuda=True`` (KVTIER_XFER_CUDA) the CUDA runtime is
    loaded (never linked) and ``staging_buffers`` pinned staging buffers
    of ``staging_bytes`` each (0: 4 of 8 MiB) are made on CUDA device
    ``device``; without it one thread moves host buffers through an
    io_uring (four ``pread``/``pwrite`` worker threads where io_uring
    cannot be used).

    The Xfer holds its own file of the region: the :class:`Region` may be
    closed first. A context manager; :meth:`close` waits for every call
    submitted, then releases their buffers.

    Buffers: a store reads each buffer's first ``block_bytes`` bytes, a
    restore writes them; each buffer must hold at least that many. A
    host buffer is any C-contiguous object with the buffer protocol
    (writable for a restore), held exported until its ticket is reaped,
    so it cannot be resized or closed meanwhile (BufferError). With
    ``cuda=True`` a buffer may also be a device address (int, whose
    memory the caller keeps valid) or an object with ``data_ptr()`` (a
    torch tensor, CUDA or CPU, contiguous; kept referenced until its
    ticket is reaped). Until then the caller must not write a stored
    buffer, nor touch a restored one.

    Threads: :meth:`store`, :meth:`restore`, :meth:`poll` and
    :meth:`wait` may be called from several threads at once; of two
    threads waiting on one ticket, one gets the result and the other
    ENOENT. Calls run in submission order; overlapping blocks in flight
    together leave the order of their bytes undefined.
    """

    def __init__(self, region: Region, block_bytes: int, *,
                 staging_buffers: int = 0, staging_bytes: int = 0,
                 cuda: bool = False, device: int = 0) -> None:
        """Create the workers (kvtier_xfer_create(3))."""
        if not isinstance(region, Region):
            raise TypeError(f"region must be a kvtier.Region, not "
                            f"{type(region).__name__}")
        bb = _check.size(block_bytes, "block_bytes")
        if bb == 0:
            raise ValueError("block_bytes must be > 0")
        nbuf = _check.integer(staging_buffers, "staging_buffers", 0,
                              _MAX_STAGING_BUFFERS)
        sbytes = _check.integer(staging_bytes, "staging_bytes", 0,
                                _MAX_STAGING_BYTES)
        dev = _check.integer(device, "device", 0, 2**31 - 1)
        attr = XferAttrStruct(block_bytes=bb, staging_buffers=nbuf,
                              staging_bytes=sbytes,
                              flags=XFER_CUDA if cuda else 0,
                              cuda_device=dev)
        label = region._label
        hints = {errno.EINVAL: f"block_bytes {bb} is larger than the "
                               f"region ({region.size} bytes)",
                 errno.EAGAIN: "no worker thread could be started"}
        if cuda:
            hints[errno.ENOENT] = ("no CUDA runtime could be loaded "
                                   "(libcudart.so.13, .so.12, .so), or it "
                                   "lacks an entry point")
            hints[errno.EIO] = (f"a CUDA call failed on device {dev} (no "
                                "such device, no driver, out of pinned "
                                "memory)")
        handle = ctypes.c_void_p()
        with region._use() as rh:
            ret = lib().kvtier_xfer_create(rh, ctypes.byref(attr),
                                           ctypes.byref(handle))
        check(ret, f"{label}: create an xfer of {bb}-byte blocks"
              + (f" on CUDA device {dev}" if cuda else ""),
              filename=region.name, hints=hints)
        super().__init__()
        self._handle = handle
        self._label = label
        self._name = region.name
        self._size = region.size
        self._block_bytes = bb
        self._cuda = bool(cuda)
        self._jobs: dict[int, _Job] = {}
        self._jobs_lock = threading.Lock()

    def _describe(self) -> str:
        return f"Xfer on {self._label}"

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._jobs)} pending"
        return (f"<kvtier.Xfer {self._label} {self._block_bytes}-byte "
                f"blocks ({state})>")

    def _release(self) -> None:
        lib().kvtier_xfer_destroy(self._handle)    # waits for every call
        self._handle = None
        with self._jobs_lock:
            jobs, self._jobs = self._jobs, {}
        for job in jobs.values():
            job.release()

    @property
    def block_bytes(self) -> int:
        """Bytes per block."""
        return self._block_bytes

    @property
    def cuda(self) -> bool:
        """True if buffers may be CUDA memory (KVTIER_XFER_CUDA)."""
        return self._cuda

    @property
    def pending(self) -> list[int]:
        """Tickets submitted through this object and not yet reaped."""
        with self._jobs_lock:
            return sorted(self._jobs)

    # --- submitting ----------------------------------------------------

    def _address(self, buf: object, i: int, writable: bool,
                 job: _Job) -> int:
        """The address of block buffer ``buf``; what keeps it goes to job."""
        need = self._block_bytes
        if self._cuda and isinstance(buf, int) and not isinstance(buf, bool):
            if buf <= 0 or buf > _check.U64_MAX:
                raise ValueError(f"bufs[{i}]: address {buf:#x} is not a "
                                 "valid pointer")
            return buf
        if self._cuda and isinstance(buf, SupportsDataPtr):
            contiguous = getattr(buf, "is_contiguous", None)
            if callable(contiguous) and not contiguous():
                raise ValueError(f"bufs[{i}] is not contiguous")
            nbytes = getattr(buf, "nbytes", None)
            if isinstance(nbytes, int) and nbytes < need:
                raise ValueError(f"bufs[{i}] has {nbytes} bytes, less than "
                                 f"a block ({need})")
            addr = int(buf.data_ptr())
            if addr <= 0:
                raise ValueError(f"bufs[{i}] has no memory (data_ptr() is "
                                 f"{addr})")
            job.held.append(buf)
            return addr
        try:
            pin = Pinned(buf, writable)
        except TypeError:
            extra = (", a device address or an object with data_ptr()"
                     if self._cuda else
                     " (a CPU tensor: pass t.numpy(); cuda=True also takes "
                     "device addresses and tensors)")
            raise TypeError(f"bufs[{i}] must support the buffer protocol"
                            f"{extra}, not {type(buf).__name__}") from None
        except BufferError as e:
            why = "writable and C-contiguous" if writable else "C-contiguous"
            raise ValueError(f"bufs[{i}] must be {why}: {e}") from None
        job.held.append(pin)
        if pin.nbytes < need:
            raise ValueError(f"bufs[{i}] has {pin.nbytes} bytes, less than "
                             f"a block ({need})")
        return pin.address

    def _submit(self, kind: str, bufs: Sequence[Block],
                offsets: Sequence[int]) -> int:
        if isinstance(bufs, (bytes, bytearray, memoryview)):
            raise TypeError("bufs must be a sequence of buffers (one per "
                            "block), not one buffer")
        blocks = list(bufs)
        offs = list(offsets)
        n = len(blocks)
        if n == 0:
            raise ValueError("no blocks: bufs is empty")
        if len(offs) != n:
            raise ValueError(f"{n} buffers but {len(offs)} offsets")
        if n > _check.U32_MAX:
            raise ValueError(f"{n} blocks in one call: at most 2**32 - 1")
        off_arr = (ctypes.c_uint64 * n)()
        for i, o in enumerate(offs):
            v = _check.size(o, f"offsets[{i}]")
            if v > self._size or self._block_bytes > self._size - v:
                raise ValueError(f"offsets[{i}]: a block of "
                                 f"{self._block_bytes} bytes at {v} is not "
                                 f"inside the region ({self._size} bytes)")
            off_arr[i] = v
        job = _Job(kind, n)
        ptrs = (ctypes.c_void_p * n)()
        ticket = ctypes.c_uint64()
        ret = -errno.EINVAL
        try:
            for i, b in enumerate(blocks):
                ptrs[i] = self._address(b, i, kind == "restore", job)
            fn = (lib().kvtier_xfer_store if kind == "store"
                  else lib().kvtier_xfer_restore)
            with self._use() as h:
                # Recorded before a poll in another thread can reap it.
                with self._jobs_lock:
                    ret = fn(h, ptrs, off_arr, n, ctypes.byref(ticket))
                    if ret >= 0:
                        self._jobs[ticket.value] = job
        finally:
            if ret < 0:         # nothing was submitted: give buffers back
                job.release()
        check(ret, f"{self._label}: {kind} {n} block{'s' * (n != 1)}",
              filename=self._name, hints={
                  errno.EACCES: "the region was opened read-only",
                  errno.EIO: "cudaPointerGetAttributes() failed for a "
                             "buffer"})
        return ticket.value

    def store(self, bufs: Sequence[Block], offsets: Sequence[int]) -> int:
        """Submit the copy of block i from ``bufs[i]`` to region byte
        ``offsets[i]``, for every i; returns the call's ticket.

        Every argument is checked first: on an error nothing moves.
        Stored blocks are durable after :meth:`kvtier.Region.fsync` on a
        region handle (kvtier_xfer_store(3)).
        """
        return self._submit("store", bufs, offsets)

    def restore(self, bufs: Sequence[Block], offsets: Sequence[int]) -> int:
        """Submit the copy of region byte ``offsets[i]`` into ``bufs[i]``
        (writable), for every i; returns the call's ticket."""
        return self._submit("restore", bufs, offsets)

    # --- results -------------------------------------------------------

    def _reaped(self, ticket: int, ret: int) -> None:
        """Ticket ``ticket`` is done with result ``ret`` (>= 0 or -errno)."""
        with self._jobs_lock:
            job = self._jobs.pop(ticket, None)
        if job is not None:
            job.release()
        if ret < 0:
            what = (f"{job.kind} of {job.blocks} block"
                    f"{'s' * (job.blocks != 1)} (ticket {ticket})"
                    if job else f"ticket {ticket}")
            raise_error(ret, f"{self._label}: {what}", filename=self._name,
                        hint=_JOB_HINTS.get(-ret))

    def poll(self, ticket: int) -> bool:
        """True if the call ``ticket`` is done (and succeeded), False while
        it is in flight; raises its error if it failed.

        The first poll or wait that sees a call done reaps its ticket
        (releasing its buffers); later ones raise ENOENT.
        """
        t = _check.integer(ticket, "ticket", 1, _check.U64_MAX)
        with self._use() as h:
            ret = lib().kvtier_xfer_poll(h, t)
            if ret == 0:
                return False
            self._reaped(t, ret)
        return True

    def wait(self, ticket: int) -> None:
        """Block until the call ``ticket`` is done; raise its error if it
        failed (the GIL is released meanwhile). Reaps the ticket."""
        t = _check.integer(ticket, "ticket", 1, _check.U64_MAX)
        with self._use() as h:
            ret = lib().kvtier_xfer_wait(h, t)
            self._reaped(t, ret)

    def wait_all(self) -> None:
        """Wait for every pending ticket of this object; raise the first
        error (after waiting for all of them)."""
        first: BaseException | None = None
        for t in self.pending:
            try:
                self.wait(t)
            except FileNotFoundError:
                pass        # reaped by another thread meanwhile
            except OSError as e:
                first = first or e
        if first is not None:
            raise first
