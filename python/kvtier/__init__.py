# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier: a host-memory and NVMe tier for LLM KV data, from Python.

A binding of libkvtier (the C API over /dev/kvtierN) with ctypes: no
compiler, no build step and no dependency beyond the Python standard
library and libkvtier.so.0 itself, which is loaded on first use
(``KVTIER_LIBRARY`` names another path).

::

    import kvtier

    with kvtier.Tier(0) as tier:
        with tier.open("prefix:sys", 64 << 20, create=True,
                       persistent=True) as region:
            region.pwrite(b"kv bytes", 0)
            region.fsync()
            m = region.map()            # an mmap.mmap of the region

Documentation/userspace-api/kvtier-python.rst describes it all.
"""

from ._version import __version__
from .constants import (ABI_VERSION, DEV_PREFIX, NAME_MAX, GpuMode,
                        GpuVerdict, OpenFlag, RegionFlag, TierFlag)
from .errors import (KvtierBlockingIOError, KvtierBrokenPipeError,
                     KvtierChildProcessError, KvtierConnectionAbortedError,
                     KvtierConnectionRefusedError, KvtierConnectionResetError,
                     KvtierError, KvtierFileExistsError,
                     KvtierFileNotFoundError, KvtierInterruptedError,
                     KvtierIsADirectoryError, KvtierNotADirectoryError,
                     KvtierPermissionError, KvtierProcessLookupError,
                     KvtierTimeoutError, LibraryError, error_class)
from .gpu import GpuHost, gpu_host, gpu_mode_check
from .region import Region, RegionInfo
from .tier import (RegionEntry, Tier, TierInfo, attach, attr, detach, format,
                   set_attr, stats, version)
from .xfer import Block, SupportsDataPtr, Xfer

__all__ = [
    "ABI_VERSION",
    "DEV_PREFIX",
    "NAME_MAX",
    "Block",
    "GpuHost",
    "GpuMode",
    "GpuVerdict",
    "KvtierBlockingIOError",
    "KvtierBrokenPipeError",
    "KvtierChildProcessError",
    "KvtierConnectionAbortedError",
    "KvtierConnectionRefusedError",
    "KvtierConnectionResetError",
    "KvtierError",
    "KvtierFileExistsError",
    "KvtierFileNotFoundError",
    "KvtierInterruptedError",
    "KvtierIsADirectoryError",
    "KvtierNotADirectoryError",
    "KvtierPermissionError",
    "KvtierProcessLookupError",
    "KvtierTimeoutError",
    "LibraryError",
    "OpenFlag",
    "Region",
    "RegionEntry",
    "RegionFlag",
    "RegionInfo",
    "SupportsDataPtr",
    "Tier",
    "TierFlag",
    "TierInfo",
    "Xfer",
    "__version__",
    "attach",
    "attr",
    "detach",
    "error_class",
    "format",
    "gpu_host",
    "gpu_mode_check",
    "set_attr",
    "stats",
    "version",
]
