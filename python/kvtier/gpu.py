# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""What this host lets a GPU do with a tier, and why.

:func:`gpu_host` gathers the evidence from files, without calling CUDA
(kvtier_gpu_host_probe(3)); :meth:`GpuHost.check` gives the verdict on a
placement mode with the reason and what to do about it
(kvtier_gpu_mode_check(3)).
"""

from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass

from . import _check
from ._lib import lib
from ._structs import GpuHostStruct
from .constants import GpuMode, GpuVerdict
from .errors import check

__all__ = ["GpuHost", "gpu_host", "gpu_mode_check"]

_WHY_MAX = 4096

_TEXT_FIELDS = ("kernel", "machine", "config_path", "nvidia_version",
                "tier_device")


@dataclass(frozen=True)
class GpuHost:
    """The evidence of what a GPU can do with a tier on this host.

    Integer fields are 1 (yes), 0 (no) or -1 (unknown). ``pageable`` and
    ``host_page_tables`` are not probed: a caller that can ask CUDA sets
    them for one device (``dataclasses.replace(host, pageable=1)``)
    before :meth:`check`.
    """

    kernel: str
    """uname -r."""
    machine: str
    """uname -m."""
    config_path: str
    """Where the kernel configuration was read; "" if none was found."""
    hmm_mirror: int
    """CONFIG_HMM_MIRROR."""
    device_private: int
    """CONFIG_DEVICE_PRIVATE."""
    nvidia: int
    """An NVIDIA kernel module is loaded."""
    nvidia_open: int
    """It is the open kernel modules (1) or the proprietary one (0)."""
    nvidia_version: str
    """Its version ("550.54.15"), or ""."""
    uvm: int
    """nvidia_uvm is loaded."""
    uvm_hmm_disabled: int
    """Its uvm_disable_hmm parameter."""
    tier_id: int
    """The tier asked about."""
    tier: int
    """1 attached, 0 detached, -1 no such tier (or no module)."""
    tier_device: str
    """The tier's backing_dev."""
    pageable: int = -1
    """CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS of one device."""
    host_page_tables: int = -1
    """..._PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES (ATS)."""

    def _struct(self) -> GpuHostStruct:
        s = GpuHostStruct()
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _TEXT_FIELDS:
                room = getattr(GpuHostStruct, f.name).size - 1
                setattr(s, f.name, str(value).encode("utf-8")[:room])
            elif f.name == "tier_id":
                setattr(s, f.name, _check.tier_id(value))
            else:
                setattr(s, f.name, _check.integer(value, f.name, -2**31,
                                                  2**31 - 1))
        return s

    def check(self, mode: GpuMode | int | str) -> tuple[GpuVerdict, str]:
        """The verdict on ``mode`` for this host, and the reason in words.

        ``mode`` is a :class:`kvtier.GpuMode` or its name ("hmm",
        "managed", "offload"). MAYBE means the host allows it and only
        the device's answer (``pageable``), not given, decides.
        """
        return gpu_mode_check(self, mode)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def gpu_host(tier_id: int = 0) -> GpuHost:
    """Probe what a GPU can do with tier ``tier_id`` on this host.

    Reads the kernel's configuration, the NVIDIA kernel modules and the
    tier; files that cannot be read are evidence (unknown), not errors.
    Works without the kvtier module (``tier`` is then -1).
    """
    tid = _check.tier_id(tier_id)
    s = GpuHostStruct()
    check(lib().kvtier_gpu_host_probe(tid, ctypes.byref(s)),
          f"kvtier{tid}: probe the GPU host")
    values: dict[str, object] = {}
    for f in dataclasses.fields(GpuHost):
        raw = getattr(s, f.name)
        values[f.name] = _decode(raw) if f.name in _TEXT_FIELDS else raw
    return GpuHost(**values)  # type: ignore[arg-type]


def _mode(mode: GpuMode | int | str) -> GpuMode:
    if isinstance(mode, str):
        try:
            return GpuMode[mode.upper()]
        except KeyError:
            raise ValueError(f"GPU mode {mode!r} is not one of hmm, "
                             "managed, offload") from None
    if isinstance(mode, bool) or not isinstance(mode, int):
        raise TypeError(f"GPU mode must be a GpuMode, int or str, not "
                        f"{type(mode).__name__}")
    try:
        return GpuMode(mode)
    except ValueError:
        raise ValueError(f"GPU mode {mode} is not one of "
                         f"{', '.join(str(int(m)) for m in GpuMode)}"
                         ) from None


def gpu_mode_check(host: GpuHost,
                   mode: GpuMode | int | str) -> tuple[GpuVerdict, str]:
    """The verdict on ``mode`` for ``host`` (see :meth:`GpuHost.check`)."""
    if not isinstance(host, GpuHost):
        raise TypeError(f"host must be a GpuHost, not {type(host).__name__}")
    m = _mode(mode)
    s = host._struct()
    why = ctypes.create_string_buffer(_WHY_MAX)
    ret = check(lib().kvtier_gpu_mode_check(ctypes.byref(s), int(m), why,
                                            _WHY_MAX),
                f"kvtier{host.tier_id}: check GPU mode {m.name.lower()}")
    return GpuVerdict(ret), _decode(why.value)
