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

/* Region names: 1 to 63 bytes of 0x21..0x7e except '/', NUL-terminated. */
#define KVTIER_NAME_MAX		64

/* struct kvtier_region_open.flags */
#define KVTIER_OPEN_CREATE	(1U << 0)	/* create if it does not exist */
#define KVTIER_OPEN_EXCL	(1U << 1)	/* with CREATE: fail if it exists */
#define KVTIER_OPEN_PERSISTENT	(1U << 2)	/* keep on the namespace */
#define KVTIER_OPEN_RDONLY	(1U << 3)	/* bind for reading only */
#define KVTIER_OPEN_SHARED	(1U << 4)	/* with CREATE: may bind another user's */

/**
 * struct kvtier_region_open - KVTIER_IOC_REGION_OPEN argument
 * @name: the region's name, NUL-terminated
 * @size: with CREATE, the size of a new region in bytes (rounded up to the
 *        page size); when opening an existing region, 0 or its exact size
 * @flags: KVTIER_OPEN_*
 * @mode: with CREATE, permission bits (0 to 0777) checked against later
 *        openers as for files: owner, group, others; root overrides
 * @reserved: zero
 *
 * Binds a fresh file to a named region, which lives until it is unlinked
 * and its last file is closed (and its last mapping unmapped).
 *
 * With CREATE|PERSISTENT a new region is persistent: its name, attributes
 * and (after fsync or msync(MS_SYNC)) its bytes are on the namespace and
 * survive the process, module reloads and reboots; creating it commits.
 * Opening an existing region with PERSISTENT fails with EEXIST if that
 * region is not persistent (and vice versa PERSISTENT is not required to
 * open a persistent region). A persistent region is at most 2^32 pages.
 *
 * Names are one namespace per tier, shared by every user of it. CREATE
 * without EXCL binds an existing region only if the caller owns it, or with
 * SHARED (the caller expects another user's region, e.g. a shared prefix
 * cache): otherwise EEXIST, so a region pre-created by someone else under
 * an expected name is never taken for one's own. @mode applies only to a
 * region this call creates. Without CREATE any region the mode allows is
 * opened.
 */
struct kvtier_region_open {
	char name[KVTIER_NAME_MAX];
	__u64 size;
	__u32 flags;
	__u32 mode;
	__u64 reserved[2];
};

/* KVTIER_IOC_REGION_UNLINK argument. */
struct kvtier_region_name {
	char name[KVTIER_NAME_MAX];
};

/**
 * struct kvtier_region_entry - one named region in KVTIER_IOC_REGION_LIST
 * @name: NUL-terminated
 * @size: bytes
 * @resident: bytes in the host pool
 * @namespace: bytes of namespace slots held
 * @created: seconds since the epoch
 * @last_used: seconds since the epoch of the last fault, read or write
 * @owner: uid of the creator
 * @mode: permission bits
 * @users: open files bound to it
 * @flags: KVTIER_OPEN_PERSISTENT if persistent, KVTIER_REGION_PINNED if
 *         pinned against capacity reclaim
 */
struct kvtier_region_entry {
	char name[KVTIER_NAME_MAX];
	__u64 size;
	__u64 resident;
	__u64 namespace;
	__s64 created;
	__s64 last_used;
	__u32 owner;
	__u32 mode;
	__u32 users;
	__u32 flags;
};

/**
 * struct kvtier_region_list - KVTIER_IOC_REGION_LIST argument
 * @entries: user pointer to an array of @count entries
 * @count: in: room in @entries; out: named regions in the tier that the
 *         caller may open for reading, all of them with CAP_DAC_OVERRIDE
 *         (may be more than were copied: call again with a larger array)
 * @reserved: zero
 */
struct kvtier_region_list {
	__u64 entries;
	__u32 count;
	__u32 reserved;
};

/* struct kvtier_region_entry.flags and struct kvtier_region_flags bits */
#define KVTIER_REGION_PINNED	(1U << 8)	/* never reclaimed for space */
#define KVTIER_REGION_SEALED	(1U << 9)	/* immutable: read-only binds only */

/**
 * struct kvtier_region_flags - KVTIER_IOC_REGION_SETFLAGS argument
 * @name: a persistent region's name, NUL-terminated
 * @set: KVTIER_REGION_* bits to set
 * @clear: KVTIER_REGION_* bits to clear (not also in @set)
 * @reserved: zero
 *
 * Changes a persistent region's flags and commits them. Only its owner (or
 * CAP_FOWNER) may. When the namespace is full, persistent regions that no
 * file or mapping uses and that are not pinned are reclaimed (unlinked)
 * least recently used first; a pinned one stays until it is unpinned.
 *
 * KVTIER_REGION_SEALED makes the region immutable, for good: it needs a
 * region no file is bound to (EBUSY), writes its pages back, and commits;
 * from then on it can only be bound with KVTIER_OPEN_RDONLY (EPERM
 * otherwise), also by a read-only tier on another host, and clearing the
 * bit is EPERM. A sealed region can still be unlinked by its owner.
 */
struct kvtier_region_flags {
	char name[KVTIER_NAME_MAX];
	__u32 set;
	__u32 clear;
	__u64 reserved;
};

/**
 * struct kvtier_region_info - KVTIER_IOC_REGION_INFO result
 * @name: NUL-terminated; empty for an unnamed region
 * @id: the region's id in the tier (debugfs "regions" and tracepoints)
 * @size: bytes
 * @resident: bytes in the host pool
 * @namespace: bytes of namespace slots held
 * @dirty: resident bytes newer than their namespace copy
 * @pinned: bytes pinned in host memory (KVTIER_IOC_PIN)
 * @faults: page faults served
 * @refaults: of those, pages read back from the namespace
 * @gpu_bytes: bytes of the region registered as GPU ranges (KVTIER_GPU_HMM)
 * @owner: uid of the creator
 * @mode: permission bits
 * @users: open files bound to it
 * @flags: KVTIER_OPEN_PERSISTENT, KVTIER_OPEN_RDONLY (this file is bound
 *         read-only), KVTIER_REGION_PINNED
 * @error: the region's sticky first write-back error (negative errno), or 0
 * @reserved: zero
 *
 * Asked of a file bound to a region (ENXIO otherwise). Byte counts are a
 * snapshot taken without stopping the region.
 */
struct kvtier_region_info {
	char name[KVTIER_NAME_MAX];
	__u64 id;
	__u64 size;
	__u64 resident;
	__u64 namespace;
	__u64 dirty;
	__u64 pinned;
	__u64 faults;
	__u64 refaults;
	__u64 gpu_bytes;
	__u32 owner;
	__u32 mode;
	__u32 users;
	__u32 flags;
	__s32 error;
	__u32 reserved0;
	__u64 reserved[4];
};

/* struct kvtier_gpu_range.mode */
#define KVTIER_GPU_HMM		1	/* a mapping of this tier the GPU reaches through HMM */
#define KVTIER_GPU_MANAGED	2	/* CUDA managed memory, registered for accounting */

/* Tenant labels: 0 to 31 bytes of 0x21..0x7e, NUL-terminated. */
#define KVTIER_TENANT_MAX	32

/**
 * struct kvtier_gpu_range - KVTIER_IOC_GPU_REGISTER / _UNREGISTER argument
 * @va: start of the range in the caller's address space, page aligned
 * @length: bytes, > 0, rounded up to the page size
 * @gpu_uuid: the GPU's 16-byte UUID (cuDeviceGetUuid)
 * @mode: KVTIER_GPU_*
 * @flags: zero
 * @tenant: NUL-terminated label (may be empty)
 * @reserved: zero
 *
 * REGISTER records a GPU allocation the CUDA shim placed: it appears in
 * debugfs "gpu_ranges" (and, for KVTIER_GPU_HMM, in the gpu_bytes of the
 * region it lies in) until it is unregistered or the registering file is
 * closed. A KVTIER_GPU_HMM range must lie inside one MAP_SHARED mapping of
 * this tier in the caller's address space (EINVAL otherwise). Ranges
 * registered through one tier may not overlap in one process (EEXIST).
 * UNREGISTER takes @va of a range this file registered from this process
 * (ENOENT otherwise); its other fields must be zero or equal those
 * registered.
 */
struct kvtier_gpu_range {
	__u64 va;
	__u64 length;
	__u8 gpu_uuid[16];
	__u32 mode;
	__u32 flags;
	char tenant[KVTIER_TENANT_MAX];
	__u64 reserved[2];
};

#define KVTIER_IOC_MAGIC	0xCB

#define KVTIER_IOC_TIER_INFO	_IOR(KVTIER_IOC_MAGIC, 0x00, struct kvtier_tier_info)
#define KVTIER_IOC_REGION_CREATE _IOW(KVTIER_IOC_MAGIC, 0x01, struct kvtier_region_create)
#define KVTIER_IOC_PIN		_IOW(KVTIER_IOC_MAGIC, 0x02, struct kvtier_pin)
#define KVTIER_IOC_UNPIN	_IOW(KVTIER_IOC_MAGIC, 0x03, struct kvtier_pin)
#define KVTIER_IOC_REGION_OPEN	_IOW(KVTIER_IOC_MAGIC, 0x04, struct kvtier_region_open)
#define KVTIER_IOC_REGION_UNLINK _IOW(KVTIER_IOC_MAGIC, 0x05, struct kvtier_region_name)
#define KVTIER_IOC_REGION_LIST	_IOWR(KVTIER_IOC_MAGIC, 0x06, struct kvtier_region_list)
#define KVTIER_IOC_REGION_SETFLAGS _IOW(KVTIER_IOC_MAGIC, 0x07, struct kvtier_region_flags)
#define KVTIER_IOC_REGION_INFO	_IOR(KVTIER_IOC_MAGIC, 0x08, struct kvtier_region_info)
#define KVTIER_IOC_GPU_REGISTER	_IOW(KVTIER_IOC_MAGIC, 0x09, struct kvtier_gpu_range)
#define KVTIER_IOC_GPU_UNREGISTER _IOW(KVTIER_IOC_MAGIC, 0x0a, struct kvtier_gpu_range)

#endif /* _UAPI_LINUX_KVTIER_H */
