/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvtier: the C API over /dev/kvtierN. The only public header.
 *
 * Every function returns 0 (or a non-negative value where documented) on
 * success and a negative errno on failure; errno itself is not relied on.
 * One man page per function: kvtier_tier_open(3), kvtier_tier_info(3),
 * kvtier_attach(3), kvtier_format(3), kvtier_tier_attr_get(3),
 * kvtier_region_list(3), kvtier_region_unlink(3), kvtier_region_setflags(3),
 * kvtier_region_open(3), kvtier_region_map(3), kvtier_region_read(3),
 * kvtier_region_prefetch(3), kvtier_region_pin(3), kvtier_region_sync(3),
 * kvtier_region_info(3), kvtier_gpu_register(3), kvtier_gpu_host_probe(3),
 * kvtier_tier_stats(3), kvtier_xfer_create(3), kvtier_xfer_store(3),
 * kvtier_xfer_poll(3), kvtier_version(3).
 */
#ifndef LIBKVTIER_H
#define LIBKVTIER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/kvtier.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kvtier_tier;

const char *kvtier_version(void);

int kvtier_tier_open(unsigned int id, struct kvtier_tier **tierp);
void kvtier_tier_close(struct kvtier_tier *tier);
int kvtier_tier_fd(const struct kvtier_tier *tier);
int kvtier_tier_info(struct kvtier_tier *tier, struct kvtier_tier_info *info);

int kvtier_attach(unsigned int id, const char *path);
int kvtier_detach(unsigned int id);
int kvtier_format(unsigned int id, const char *path);

/*
 * A sysfs attribute of tier @id (/sys/class/kvtier/kvtierN/@attr: a knob,
 * state, error, ...) as text without its newline, and setting one.
 */
int kvtier_tier_attr_get(unsigned int id, const char *attr, char *buf,
			 size_t len);
int kvtier_tier_attr_set(unsigned int id, const char *attr, const char *value);

int kvtier_region_list(struct kvtier_tier *tier,
		       struct kvtier_region_entry **entriesp, size_t *countp);
int kvtier_region_unlink(struct kvtier_tier *tier, const char *name);
int kvtier_region_setflags(struct kvtier_tier *tier, const char *name,
			   unsigned int set, unsigned int clear);

/*
 * Regions: a struct kvtier_region is one open file of the tier bound to a
 * region (unnamed or named), and at most one whole-region mapping of it.
 */
struct kvtier_region;

int kvtier_region_create(struct kvtier_tier *tier, uint64_t size,
			 struct kvtier_region **regionp);
int kvtier_region_open(struct kvtier_tier *tier, const char *name,
		       uint64_t size, unsigned int flags, unsigned int mode,
		       struct kvtier_region **regionp);
void kvtier_region_close(struct kvtier_region *region);
int kvtier_region_fd(const struct kvtier_region *region);
int kvtier_region_map(struct kvtier_region *region, int prot, void **addrp);
int kvtier_region_unmap(struct kvtier_region *region);
ssize_t kvtier_region_read(struct kvtier_region *region, void *buf,
			   size_t len, uint64_t offset);
ssize_t kvtier_region_write(struct kvtier_region *region, const void *buf,
			    size_t len, uint64_t offset);
int kvtier_region_prefetch(struct kvtier_region *region, uint64_t offset,
			   uint64_t len);
int kvtier_region_cold(struct kvtier_region *region, uint64_t offset,
		       uint64_t len);
int kvtier_region_pin(struct kvtier_region *region, uint64_t offset,
		      uint64_t len);
int kvtier_region_unpin(struct kvtier_region *region, uint64_t offset,
			uint64_t len);
int kvtier_region_sync(struct kvtier_region *region);
int kvtier_region_info(struct kvtier_region *region,
		       struct kvtier_region_info *info);

/* GPU ranges placed by the CUDA shim (KVTIER_IOC_GPU_REGISTER). */
int kvtier_gpu_register(struct kvtier_tier *tier,
			const struct kvtier_gpu_range *range);
int kvtier_gpu_unregister(struct kvtier_tier *tier, uint64_t va);

/*
 * The counters of tier @id (/sys/class/kvtier/kvtierN/stat, no root
 * needed) and its gauges: name/value pairs, free() the array.
 */
struct kvtier_stat {
	char name[48];
	int64_t value;
};

int kvtier_tier_stats(unsigned int id, struct kvtier_stat **statsp,
		      size_t *countp);

/*
 * What this host lets a GPU do with tier @id (kvtier_gpu_host_probe(3)):
 * the evidence, read from the kernel's configuration, the NVIDIA kernel
 * modules and the tier; then a verdict per placement mode with its reason
 * and what to do about it (kvtier_gpu_mode_check(3)). -1: not known.
 */
struct kvtier_gpu_host {
	char kernel[65];		/* uname -r */
	char machine[65];		/* uname -m */
	char config_path[128];		/* where the configuration was read, "" */
	int hmm_mirror;			/* CONFIG_HMM_MIRROR: 1 set, 0 unset, -1 */
	int device_private;		/* CONFIG_DEVICE_PRIVATE: 1, 0, -1 */
	int nvidia;			/* an NVIDIA kernel module is loaded: 1, 0 */
	int nvidia_open;		/* open kernel modules 1, proprietary 0, -1 */
	char nvidia_version[32];	/* "550.54.15", or "" */
	int uvm;			/* nvidia_uvm is loaded: 1, 0 */
	int uvm_hmm_disabled;		/* its uvm_disable_hmm: 1, 0, -1 */
	unsigned int tier_id;
	int tier;			/* 1 attached, 0 detached, -1 no such tier */
	char tier_device[128];		/* its backing_dev */
	/* Not probed: the caller sets them from CUDA for one device. */
	int pageable;			/* CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS */
	int host_page_tables;		/* ..._USES_HOST_PAGE_TABLES (ATS) */
	int reserved[8];
};

/* HMM and MANAGED have the values of the uapi's KVTIER_GPU_HMM/_MANAGED. */
#define KVTIER_GPU_MODE_HMM	1	/* the shim maps tier regions for the GPU */
#define KVTIER_GPU_MODE_MANAGED	2	/* the shim's managed memory */
#define KVTIER_GPU_MODE_OFFLOAD	3	/* the engine copies through kvtier_xfer */

#define KVTIER_GPU_NO		0
#define KVTIER_GPU_YES		1
#define KVTIER_GPU_MAYBE	2	/* the host allows it; the device decides */

int kvtier_gpu_host_probe(unsigned int id, struct kvtier_gpu_host *host);
int kvtier_gpu_mode_check(const struct kvtier_gpu_host *host, int mode,
			  char *why, size_t len);

/*
 * Block offload: store N blocks of block_bytes from host or (with
 * KVTIER_XFER_CUDA) device buffers at region offsets, and restore them,
 * asynchronously. A ticket names one store or restore call.
 */
#define KVTIER_XFER_CUDA	(1U << 0)

struct kvtier_xfer_attr {
	size_t block_bytes;		/* bytes per block, > 0 */
	unsigned int staging_buffers;	/* pinned staging buffers; 0: 4 */
	size_t staging_bytes;		/* bytes each; 0: 8 MiB */
	unsigned int flags;		/* KVTIER_XFER_* */
	int cuda_device;		/* with KVTIER_XFER_CUDA */
	uint64_t reserved[4];		/* zero */
};

struct kvtier_xfer;

int kvtier_xfer_create(struct kvtier_region *region,
		       const struct kvtier_xfer_attr *attr,
		       struct kvtier_xfer **xferp);
void kvtier_xfer_destroy(struct kvtier_xfer *xfer);
int kvtier_xfer_store(struct kvtier_xfer *xfer, void *const *bufs,
		      const uint64_t *offsets, unsigned int n,
		      uint64_t *ticketp);
int kvtier_xfer_restore(struct kvtier_xfer *xfer, void *const *bufs,
			const uint64_t *offsets, unsigned int n,
			uint64_t *ticketp);
int kvtier_xfer_poll(struct kvtier_xfer *xfer, uint64_t ticket);
int kvtier_xfer_wait(struct kvtier_xfer *xfer, uint64_t ticket);

#ifdef __cplusplus
}
#endif

#endif /* LIBKVTIER_H */
