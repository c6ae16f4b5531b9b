# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The flag and mode values of ``<linux/kvtier.h>`` and ``<kvtier.h>``.

They are ``enum.IntFlag`` and ``enum.IntEnum`` members, so they combine
and compare as the plain integers of the C headers do.
"""

from __future__ import annotations

import enum

ABI_VERSION = 1
"""KVTIER_ABI_VERSION: the module ABI this package was written for."""

NAME_MAX = 63
"""The longest region name, in bytes (KVTIER_NAME_MAX less its NUL)."""

DEV_PREFIX = "/dev/kvtier"
"""KVTIER_DEV_PREFIX: tier N is the character device /dev/kvtierN."""


class TierFlag(enum.IntFlag):
    """Bits of :attr:`kvtier.TierInfo.flags` (KVTIER_TIER_*)."""

    ATTACHED = 1 << 0
    """A namespace is attached."""


class OpenFlag(enum.IntFlag):
    """Flags of a named-region open (KVTIER_OPEN_*).

    :meth:`kvtier.Tier.open` sets them from its keyword arguments.
    """

    CREATE = 1 << 0
    """Create the region if it does not exist."""
    EXCL = 1 << 1
    """With CREATE: fail if it exists."""
    PERSISTENT = 1 << 2
    """Keep a new region on the namespace (across exits and reboots)."""
    RDONLY = 1 << 3
    """Bind for reading only."""
    SHARED = 1 << 4
    """With CREATE: an existing region of another user may be opened."""


class RegionFlag(enum.IntFlag):
    """Bits of a region's ``flags`` in listings and region information.

    PERSISTENT and RDONLY have the values of the open flags of the same
    name; PINNED and SEALED are also the bits that
    :meth:`kvtier.Tier.set_flags` sets and clears (KVTIER_REGION_*).
    """

    PERSISTENT = 1 << 2
    """The region is kept on the namespace."""
    RDONLY = 1 << 3
    """(Region information only) this handle is bound read-only."""
    PINNED = 1 << 8
    """Never reclaimed when the namespace runs out of space."""
    SEALED = 1 << 9
    """Immutable: only read-only binds are allowed, for good."""



class RegionFlagViews:
    """``is_persistent``, ``is_pinned`` and ``is_sealed`` of a record
    with ``flags`` (RegionEntry, RegionInfo)."""

    flags: RegionFlag

    @property
    def is_persistent(self) -> bool:
        """The region is kept on the namespace."""
        return bool(self.flags & RegionFlag.PERSISTENT)

    @property
    def is_pinned(self) -> bool:
        """The region is kept from capacity reclaim (a region flag)."""
        return bool(self.flags & RegionFlag.PINNED)

    @property
    def is_sealed(self) -> bool:
        """The region is immutable: only read-only binds."""
        return bool(self.flags & RegionFlag.SEALED)

class GpuMode(enum.IntEnum):
    """GPU placement modes (KVTIER_GPU_MODE_*) for GPU host verdicts."""

    HMM = 1
    """The CUDA shim maps tier regions for the GPU (HMM or ATS)."""
    MANAGED = 2
    """The shim's CUDA managed memory, registered for accounting."""
    OFFLOAD = 3
    """The engine copies blocks through :class:`kvtier.Xfer`."""


class GpuVerdict(enum.IntEnum):
    """What a GPU host check answers (KVTIER_GPU_NO, _YES, _MAYBE)."""

    NO = 0
    """The host does not allow the mode."""
    YES = 1
    """The host (and device, if described) allows it."""
    MAYBE = 2
    """The host allows it; only the device's answer, not given, decides."""
