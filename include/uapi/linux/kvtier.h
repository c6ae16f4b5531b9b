/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvtier user-space ABI: the ioctls of /dev/kvtierN.
 *
 * Documented in Documentation/userspace-api/kvtier.rst. Structures are
 * fixed-size and versioned by KVTIER_ABI_VERSION; reserved fields are zero.
 */
#ifndef _UAPI_LINUX_KVTIER_H
#define _UAPI_LINUX_KVTIER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define KVTIER_ABI_VERSION	1

/* Character devices are /dev/kvtier0 .. /dev/kvtier<num_tiers - 1>. */
#define KVTIER_DEV_PREFIX	"/dev/kvtier"

/* struct kvtier_tier_info.flags */
#define KVTIER_TIER_ATTACHED	(1U << 0)	/* a namespace is attached */

/**
 * struct kvtier_tier_info - KVTIER_IOC_TIER_INFO result
 * @abi_version: KVTIER_ABI_VERSION of the running module
 * @tier_id: N of /dev/kvtierN
 * @flags: KVTIER_TIER_* bits
 * @logical_block_size: of the attached namespace, in bytes (0 if detached)
 * @capacity_bytes: size of the attached namespace in bytes (0 if detached)
 * @reserved: zero
 */
struct kvtier_tier_info {
	__u32 abi_version;
	__u32 tier_id;
	__u32 flags;
	__u32 logical_block_size;
	__u64 capacity_bytes;
	__u64 reserved[4];
};

/**
 * struct kvtier_region_create - KVTIER_IOC_REGION_CREATE argument
 * @size: region size in bytes, rounded up to the page size; > 0
 * @flags: zero (no flags are defined yet)
 *
 * Gives a fresh file an unnamed, zero-filled region without mapping it, for
 * pread/pwrite. mmap(MAP_SHARED) of a fresh file does the same implicitly.
 */
struct kvtier_region_create {
	__u64 size;
	__u64 flags;
};

/**
 * struct kvtier_pin - KVTIER_IOC_PIN / KVTIER_IOC_UNPIN argument
 * @offset: start of the range in the region, bytes, page aligned
 * @length: bytes, page aligned, > 0; the range must lie inside the region
 * @flags: zero
 *
 * PIN makes every page of the range resident (reading or zero-filling it)
 * and keeps it out of eviction until UNPIN or the region's end. Pinned
 * bytes of a tier are bounded by the pin_budget_mb knob and by half of
 * host_budget_mb.
 */
struct kvtier_pin {
	__u64 offset;
	__u64 length;
	__u64 flags;
};

#define KVTIER_IOC_MAGIC	0xCB

#define KVTIER_IOC_TIER_INFO	_IOR(KVTIER_IOC_MAGIC, 0x00, struct kvtier_tier_info)
#define KVTIER_IOC_REGION_CREATE _IOW(KVTIER_IOC_MAGIC, 0x01, struct kvtier_region_create)
#define KVTIER_IOC_PIN		_IOW(KVTIER_IOC_MAGIC, 0x02, struct kvtier_pin)
#define KVTIER_IOC_UNPIN	_IOW(KVTIER_IOC_MAGIC, 0x03, struct kvtier_pin)

#endif /* _UAPI_LINUX_KVTIER_H */
