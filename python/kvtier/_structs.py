# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""ctypes mirrors of the structures libkvtier exchanges.

Field for field as ``<linux/kvtier.h>`` (the module's user-space ABI) and
``<kvtier.h>`` (libkvtier) declare them; ctypes lays them out with the C
compiler's rules, and ``tests/test_host.py`` checks every size and offset
against a program compiled from the headers.
"""

from __future__ import annotations

import ctypes

NAME_MAX = 64
"""Bytes of a region name field, its terminating NUL included."""

TENANT_MAX = 32
"""Bytes of a GPU range's tenant label field, NUL included."""

_u32 = ctypes.c_uint32
_s32 = ctypes.c_int32
_u64 = ctypes.c_uint64
_s64 = ctypes.c_int64
_int = ctypes.c_int
_uint = ctypes.c_uint


class TierInfoStruct(ctypes.Structure):
    """struct kvtier_tier_info (KVTIER_IOC_TIER_INFO)."""

    _fields_ = [
        ("abi_version", _u32),
        ("tier_id", _u32),
        ("flags", _u32),
        ("logical_block_size", _u32),
        ("capacity_bytes", _u64),
        ("reserved", _u64 * 4),
    ]


class RegionEntryStruct(ctypes.Structure):
    """struct kvtier_region_entry (one row of KVTIER_IOC_REGION_LIST)."""

    _fields_ = [
        ("name", ctypes.c_char * NAME_MAX),
        ("size", _u64),
        ("resident", _u64),
        ("namespace", _u64),
        ("created", _s64),
        ("last_used", _s64),
        ("owner", _u32),
        ("mode", _u32),
        ("users", _u32),
        ("flags", _u32),
    ]


class RegionInfoStruct(ctypes.Structure):
    """struct kvtier_region_info (KVTIER_IOC_REGION_INFO)."""

    _fields_ = [
        ("name", ctypes.c_char * NAME_MAX),
        ("id", _u64),
        ("size", _u64),
        ("resident", _u64),
        ("namespace", _u64),
        ("dirty", _u64),
        ("pinned", _u64),
        ("faults", _u64),
        ("refaults", _u64),
        ("gpu_bytes", _u64),
        ("owner", _u32),
        ("mode", _u32),
        ("users", _u32),
        ("flags", _u32),
        ("error", _s32),
        ("reserved0", _u32),
        ("reserved", _u64 * 4),
    ]


class StatStruct(ctypes.Structure):
    """struct kvtier_stat (one counter of kvtier_tier_stats())."""

    _fields_ = [
        ("name", ctypes.c_char * 48),
        ("value", _s64),
    ]


class GpuHostStruct(ctypes.Structure):
    """struct kvtier_gpu_host (kvtier_gpu_host_probe())."""

    _fields_ = [
        ("kernel", ctypes.c_char * 65),
        ("machine", ctypes.c_char * 65),
        ("config_path", ctypes.c_char * 128),
        ("hmm_mirror", _int),
        ("device_private", _int),
        ("nvidia", _int),
        ("nvidia_open", _int),
        ("nvidia_version", ctypes.c_char * 32),
        ("uvm", _int),
        ("uvm_hmm_disabled", _int),
        ("tier_id", _uint),
        ("tier", _int),
        ("tier_device", ctypes.c_char * 128),
        ("pageable", _int),
        ("host_page_tables", _int),
        ("reserved", _int * 8),
    ]


class XferAttrStruct(ctypes.Structure):
    """struct kvtier_xfer_attr (kvtier_xfer_create())."""

    _fields_ = [
        ("block_bytes", ctypes.c_size_t),
        ("staging_buffers", _uint),
        ("staging_bytes", ctypes.c_size_t),
        ("flags", _uint),
        ("cuda_device", _int),
        ("reserved", _u64 * 4),
    ]


STRUCTS: dict[str, type[ctypes.Structure]] = {
    "kvtier_tier_info": TierInfoStruct,
    "kvtier_region_entry": RegionEntryStruct,
    "kvtier_region_info": RegionInfoStruct,
    "kvtier_stat": StatStruct,
    "kvtier_gpu_host": GpuHostStruct,
    "kvtier_xfer_attr": XferAttrStruct,
}
"""Every mirror by its C struct name (the layout test walks this)."""
