# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Tiers: /dev/kvtierN, its named regions, its knobs and counters.

Module functions for what needs no open tier (attaching a namespace,
reading and setting sysfs attributes, counters), and :class:`Tier`, an
open tier that lists, opens, creates and changes regions.
"""

from __future__ import annotations

import ctypes
import errno
from dataclasses import dataclass

from . import _check
from ._check import PathArg
from ._lib import free, lib
from ._resource import Resource
from ._structs import RegionEntryStruct, StatStruct, TierInfoStruct
from .constants import DEV_PREFIX, OpenFlag, RegionFlag, RegionFlagViews, TierFlag
from .errors import attach_message, check, raise_error
from .gpu import GpuHost, gpu_host
from .region import Region

__all__ = [
    "RegionEntry",
    "Tier",
    "TierInfo",
    "attach",
    "attr",
    "detach",
    "format",
    "set_attr",
    "stats",
    "version",
]

_ATTR_MAX = 4096
"""Room for one attribute's value (sysfs hands out at most a page)."""


def version() -> str:
    """The kvtier release libkvtier was built from (kvtier_version(3)).

    The version ``modinfo kvtier`` and ``kvtierctl --version`` show; this
    package's ``kvtier.__version__`` is the same for the same release.
    """
    raw: bytes = lib().kvtier_version()
    return raw.decode("ascii", "backslashreplace")


def attach(tier_id: int, path: PathArg) -> None:
    """Attach the block device ``path`` as the namespace of a tier (root).

    A device holding a kvtier format is attached as it is (its persistent
    regions come back); an all-zero one is formatted; anything else is
    refused, with nothing written (kvtier_attach(3)). Errors say why in
    the words of ``kvtierctl attach``.
    """
    tid = _check.tier_id(tier_id)
    raw, shown = _check.device_path(path)
    ret = lib().kvtier_attach(tid, raw)
    if ret < 0:
        raise_error(ret, "", filename=shown,
                    message=attach_message(tid, shown, False, ret))


def format(tier_id: int, path: PathArg) -> None:
    """Write a fresh kvtier format to ``path`` and attach it (root).

    Destroys whatever the device holds, persistent regions included,
    without looking at it first (kvtier_format(3)).
    """
    tid = _check.tier_id(tier_id)
    raw, shown = _check.device_path(path)
    ret = lib().kvtier_format(tid, raw)
    if ret < 0:
        raise_error(ret, "", filename=shown,
                    message=attach_message(tid, shown, True, ret))


def detach(tier_id: int) -> None:
    """Detach a tier's namespace (root); a detached tier stays detached.

    Writes back and commits the persistent regions first. EBUSY while the
    tier is open or has named regions that are not persistent.
    """
    tid = _check.tier_id(tier_id)
    check(lib().kvtier_detach(tid), f"detach kvtier{tid}", hints={
        errno.EBUSY: "the tier is open, or has named regions that are "
                     "not persistent",
        errno.EACCES: "needs root",
    })


def attr(tier_id: int, name: str) -> str:
    """A sysfs attribute of a tier as text, without its newline.

    ``name`` is a file of /sys/class/kvtier/kvtierN/ (a knob such as
    ``host_budget_mb``, or ``state``, ``backing_dev``...; their units are
    in the ABI file). Most need no privilege (kvtier_tier_attr_get(3)).
    """
    tid = _check.tier_id(tier_id)
    key = _check.attr_name(name)
    buf = ctypes.create_string_buffer(_ATTR_MAX)
    check(lib().kvtier_tier_attr_get(tid, key, buf, _ATTR_MAX),
          f"kvtier{tid}: read attribute {name}", filename=name, hints={
              errno.ENOENT: f"no tier {tid}, or it has no attribute "
                            f"{name}"})
    return buf.value.decode("utf-8", "backslashreplace")


def set_attr(tier_id: int, name: str, value: str | int) -> None:
    """Write ``value`` to a tier's sysfs attribute, in one write (root).

    The module validates it: a value out of range or in the wrong form is
    EINVAL, a knob that needs a detached tier EBUSY; nothing changes then.
    """
    tid = _check.tier_id(tier_id)
    key = _check.attr_name(name)
    val = _check.attr_value(value)
    check(lib().kvtier_tier_attr_set(tid, key, val),
          f"kvtier{tid}: set {name} to {value!r}", filename=name, hints={
              errno.ENOENT: f"no tier {tid}, or it has no attribute "
                            f"{name}",
              errno.EBUSY: "this knob can only change while no namespace "
                           "is attached",
              errno.EACCES: "needs root",
          })


def stats(tier_id: int = 0) -> dict[str, int]:
    """The counters and gauges of a tier, by name (kvtier_tier_stats(3)).

    Counters from the module's load (faults_minor, faults_major,
    faults_zero_fill, refaults, evictions_clean, evictions_dirty,
    writeback_pages, writeback_bytes, read_pages, read_bytes,
    readahead_pages, prefetch_pages, budget_stalls, checksum_errors,
    io_errors, inflight_bytes, writeback_background, writeback_unchecked,
    direct_read_pages, pages_reused; the last four from a module of
    December 2026 on), then the gauges resident_bytes,
    pinned_bytes, used_bytes, capacity_bytes and budget_bytes. Any user
    may read them.
    """
    tid = _check.tier_id(tier_id)
    arr = ctypes.POINTER(StatStruct)()
    count = ctypes.c_size_t()
    check(lib().kvtier_tier_stats(tid, ctypes.byref(arr),
                                  ctypes.byref(count)),
          f"kvtier{tid}: read counters", hints={
              errno.ENOENT: f"no tier {tid}: is the kvtier module loaded?"})
    try:
        return {arr[i].name.decode("ascii", "backslashreplace"): arr[i].value
                for i in range(count.value)}
    finally:
        free(arr)


@dataclass(frozen=True)
class TierInfo:
    """The state of a tier (kvtier_tier_info(3))."""

    abi_version: int
    """The running module's KVTIER_ABI_VERSION."""
    tier_id: int
    """N of /dev/kvtierN."""
    flags: TierFlag
    """TierFlag.ATTACHED when a namespace is attached."""
    logical_block_size: int
    """The namespace's logical block size in bytes; 0 when detached."""
    capacity_bytes: int
    """The namespace's size in bytes; 0 when detached."""

    @property
    def attached(self) -> bool:
        """A namespace is attached."""
        return bool(self.flags & TierFlag.ATTACHED)


@dataclass(frozen=True)
class RegionEntry(RegionFlagViews):
    """One named region of a tier, as :meth:`Tier.regions` lists it."""

    name: str
    """The region's name."""
    size: int
    """Size in bytes."""
    resident: int
    """Bytes in the host pool."""
    namespace: int
    """Bytes of namespace slots held."""
    created: int
    """Creation time, seconds since the epoch."""
    last_used: int
    """Time of the last fault, read or write, seconds since the epoch."""
    owner: int
    """uid of the creator."""
    mode: int
    """Permission bits."""
    users: int
    """Open files bound to it now."""
    flags: RegionFlag
    """PERSISTENT, PINNED, SEALED."""


    @classmethod
    def _from(cls, s: RegionEntryStruct) -> RegionEntry:
        return cls(name=s.name.decode("ascii", "backslashreplace"),
                   size=s.size, resident=s.resident, namespace=s.namespace,
                   created=s.created, last_used=s.last_used, owner=s.owner,
                   mode=s.mode, users=s.users, flags=RegionFlag(s.flags))


_OPEN_HINTS = {
    errno.ENOENT: "no region has that name; create=True creates it",
    errno.EEXIST: "it exists and exclusive=True was given; or create=True "
                  "without shared=True and another user owns it; or "
                  "persistent=True and it is not persistent",
    errno.EINVAL: "exclusive or shared without create, exclusive with "
                  "shared, mode above 0o777, size 0 for a new region, or a "
                  "size other than 0 or the existing region's",
    errno.ENOSPC: "size is larger than the namespace, or it has no room "
                  "for a persistent region's record",
    errno.ENODEV: "no namespace is attached to the tier",
    errno.EPERM: "the region is sealed: open it with readonly=True",
}

_OWNER_HINT = "only its owner or root (CAP_FOWNER) may"


class Tier(Resource):
    """An open tier, /dev/kvtierN (kvtier_tier_open(3)).

    A context manager. While it is open, the tier's namespace cannot be
    detached. Closing it while regions opened from it are still open is
    allowed: they keep working, and the tier's own file is closed with
    the last of them.

    Methods may be called from several threads; :meth:`close` waits for
    calls in progress.
    """

    def __init__(self, id: int = 0) -> None:
        """Open tier ``id`` for reading and writing (close-on-exec).

        ENOENT: no such tier (the module is not loaded, or has fewer);
        EACCES: the caller is not in the kvtier group.
        """
        tid = _check.tier_id(id)
        handle = ctypes.c_void_p()
        dev = f"{DEV_PREFIX}{tid}"
        check(lib().kvtier_tier_open(tid, ctypes.byref(handle)),
              f"kvtier{tid}: open {dev}", filename=dev, hints={
                  errno.ENOENT: "no such tier: is the kvtier module "
                                f"loaded, with num_tiers above {tid}?",
                  errno.EACCES: "needs root or the kvtier group",
                  errno.EPERM: "needs root or the kvtier group",
              })
        super().__init__()
        self._handle = handle
        self._id = tid
        self._children = 0

    def _describe(self) -> str:
        return f"Tier kvtier{self._id}"

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<kvtier.Tier kvtier{self._id} ({state})>"

    def _adopt(self) -> None:
        """A region of this tier was opened (under self._use())."""
        with self._cond:
            self._children += 1

    def _orphan(self) -> None:
        """A region of this tier was closed: maybe close the tier's file."""
        with self._cond:
            self._children -= 1
            handle = None
            if self._closed and not self._children:
                handle, self._handle = self._handle, None
        if handle is not None:
            lib().kvtier_tier_close(handle)

    def _release(self) -> None:
        with self._cond:
            if self._children:
                return      # the last region's close does it
            handle, self._handle = self._handle, None
        if handle is not None:
            lib().kvtier_tier_close(handle)

    @property
    def id(self) -> int:
        """N of /dev/kvtierN."""
        return self._id

    def fileno(self) -> int:
        """The tier's file descriptor (kvtier_tier_fd(3)), owned by it."""
        with self._use() as h:
            return check(lib().kvtier_tier_fd(h), f"kvtier{self._id}: fd")

    def info(self) -> TierInfo:
        """The tier's state: ABI version, namespace, capacity."""
        s = TierInfoStruct()
        with self._use() as h:
            ret = lib().kvtier_tier_info(h, ctypes.byref(s))
        check(ret, f"kvtier{self._id}: tier information")
        return TierInfo(abi_version=s.abi_version, tier_id=s.tier_id,
                        flags=TierFlag(s.flags),
                        logical_block_size=s.logical_block_size,
                        capacity_bytes=s.capacity_bytes)

    def stats(self) -> dict[str, int]:
        """The tier's counters and gauges (see :func:`kvtier.stats`)."""
        with self._use():
            return stats(self._id)

    def attr(self, name: str) -> str:
        """A sysfs attribute of the tier (see :func:`kvtier.attr`)."""
        with self._use():
            return attr(self._id, name)

    def set_attr(self, name: str, value: str | int) -> None:
        """Set a sysfs attribute of the tier (see :func:`kvtier.set_attr`)."""
        with self._use():
            set_attr(self._id, name, value)

    def gpu_host(self) -> GpuHost:
        """What a GPU may do with the tier here (:func:`kvtier.gpu_host`)."""
        with self._use():
            return gpu_host(self._id)

    # --- named regions -------------------------------------------------

    def regions(self) -> list[RegionEntry]:
        """The named regions the caller may open for reading, in the
        module's order (all of them for root; at most 4096).

        Anyone who can open the tier sees names, sizes and owners, never
        data (kvtier_region_list(3)).
        """
        arr = ctypes.POINTER(RegionEntryStruct)()
        count = ctypes.c_size_t()
        with self._use() as h:
            ret = lib().kvtier_region_list(h, ctypes.byref(arr),
                                           ctypes.byref(count))
        check(ret, f"kvtier{self._id}: list regions", hints={
            errno.ENODEV: "no namespace is attached"})
        try:
            return [RegionEntry._from(arr[i]) for i in range(count.value)]
        finally:
            free(arr)

    def unlink(self, name: str) -> None:
        """Remove a named region (its owner or root).

        Files bound to it keep its bytes until they close; the name can
        be created again at once. A persistent region's removal is
        committed to the namespace.
        """
        raw = _check.region_name(name)
        with self._use() as h:
            ret = lib().kvtier_region_unlink(h, raw)
        check(ret, f"kvtier{self._id}: unlink region {name!r}",
              filename=str(name), hints={
                  errno.EPERM: f"{_OWNER_HINT} remove it",
                  errno.EROFS: "the tier is attached read-only"})

    def set_flags(self, name: str, set: int = 0, clear: int = 0) -> None:
        """Set and clear :class:`kvtier.RegionFlag` bits of a persistent
        region, and commit them (kvtier_region_setflags(3)).

        PINNED keeps it from capacity reclaim (setting it needs root,
        CAP_SYS_RESOURCE); SEALED makes it immutable for good (it needs a
        region no file is bound to, EBUSY otherwise). Only the owner or
        root may change them.
        """
        raw = _check.region_name(name)
        bits_set = _check.u32(set, "set")
        bits_clear = _check.u32(clear, "clear")
        with self._use() as h:
            ret = lib().kvtier_region_setflags(h, raw, bits_set, bits_clear)
        check(ret, f"kvtier{self._id}: set flags of region {name!r} (set "
              f"{bits_set:#x}, clear {bits_clear:#x})", filename=str(name),
              hints={
                  errno.EINVAL: "the region is not persistent, or a bit is "
                                "unknown or both set and cleared",
                  errno.EPERM: f"{_OWNER_HINT} change its flags; pinning "
                               "needs root (CAP_SYS_RESOURCE); a seal is "
                               "never cleared",
                  errno.EBUSY: "files still have it open (close them "
                               "first)",
                  errno.EROFS: "the tier is attached read-only: nothing on "
                               "it can change",
                  errno.ENODEV: "no namespace is attached",
              })

    def pin(self, name: str) -> None:
        """Keep a persistent region from capacity reclaim (flag PINNED)."""
        self.set_flags(name, set=RegionFlag.PINNED)

    def unpin(self, name: str) -> None:
        """Let a persistent region be reclaimed again (clear PINNED)."""
        self.set_flags(name, clear=RegionFlag.PINNED)

    def seal(self, name: str) -> None:
        """Make a persistent region immutable, for good (flag SEALED).

        No file may be bound to it. Afterwards it opens only with
        ``readonly=True`` (EPERM otherwise); its owner can still unlink it.
        """
        self.set_flags(name, set=RegionFlag.SEALED)

    # --- opening regions -----------------------------------------------

    def create(self, size: int) -> Region:
        """A new unnamed, zero-filled region of ``size`` bytes (> 0,
        rounded up to the page size), freed when it is closed and its last
        mapping is gone (kvtier_region_create(3)).
        """
        n = _check.size(size)
        if n == 0:
            raise ValueError("size must be > 0")
        handle = ctypes.c_void_p()
        with self._use() as h:
            ret = lib().kvtier_region_create(h, n, ctypes.byref(handle))
            check(ret, f"kvtier{self._id}: create a region of {n} bytes",
                  hints={errno.ENODEV: "no namespace is attached",
                         errno.ENOSPC: "larger than the namespace"})
            self._adopt()
        return Region(self, handle, None, False)

    def open(self, name: str, size: int = 0, *, create: bool = False,
             exclusive: bool = False, persistent: bool = False,
             readonly: bool = False, shared: bool = False,
             mode: int = 0o600) -> Region:
        """Open the named region ``name`` (kvtier_region_open(3)).

        ``name`` is 1 to 63 bytes of printable ASCII other than space and
        '/'. ``size``: for a region this call creates, its size in bytes
        (rounded up to the page size); for an existing one 0 or its exact
        size.

        - ``create``: create it if it does not exist, with ``size`` bytes
          and permission bits ``mode`` (0 to 0o777, checked against later
          openers as for files). Without ``shared`` an existing region is
          opened only if the caller owns it (EEXIST otherwise), so a
          region someone else made under the expected name is never taken
          for one's own.
        - ``exclusive`` (with create): fail with EEXIST if it exists.
        - ``shared`` (with create): another user's region may be opened.
        - ``persistent``: a new region is kept on the namespace across
          process exits, module reloads and reboots (its bytes after
          :meth:`Region.fsync`); an existing region opened with it must be
          persistent.
        - ``readonly``: bind for reading only; writes, stores and
          writable mappings are refused with EACCES.

        Errors: ENOENT (no such region, without create), EEXIST, EACCES
        (the mode refuses the caller), EINVAL (a flag combination, mode,
        size), ENOSPC, ENODEV (no namespace attached), EPERM (a sealed
        region opened for writing).
        """
        raw = _check.region_name(name)
        n = _check.size(size)
        bits = _check.u32(mode, "mode")
        flags = OpenFlag(0)
        for on, flag in ((create, OpenFlag.CREATE),
                         (exclusive, OpenFlag.EXCL),
                         (persistent, OpenFlag.PERSISTENT),
                         (readonly, OpenFlag.RDONLY),
                         (shared, OpenFlag.SHARED)):
            if on:
                flags |= flag
        shown = raw.decode("ascii")
        hints = dict(_OPEN_HINTS)
        hints[errno.EACCES] = ("its mode does not let you open it" +
                               ("" if readonly else " for writing"))
        handle = ctypes.c_void_p()
        with self._use() as h:
            ret = lib().kvtier_region_open(h, raw, n, int(flags), bits,
                                           ctypes.byref(handle))
            check(ret, f"kvtier{self._id}: open region {shown!r}",
                  filename=shown, hints=hints)
            self._adopt()
        return Region(self, handle, shown, readonly)
