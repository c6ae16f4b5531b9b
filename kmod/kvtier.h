/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier internals shared by the files of kmod/.
 *
 * File map:
 *   main.c     module load/unload, the num_tiers parameter, the class
 *   tier.c     one tier: its character device and file operations
 *   backing.c  attaching and detaching the namespace (block device)
 *   sysfs.c    /sys/class/kvtier/kvtierN/ attributes
 *   debugfs.c  /sys/kernel/debug/kvtier/
 *   compat.h   kernel API differences, from conftest.sh's HAVE_* probes
 *
 * Lock order (outermost first):
 *   kvtier_tier.lock
 */
#ifndef KVTIER_H
#define KVTIER_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "compat.h"

#define KVTIER_NAME		"kvtier"
#define KVTIER_MAX_TIERS	64

/**
 * struct kvtier_backing - the namespace a tier stages pages to
 * @kb: the exclusively claimed block device; kb.bdev is NULL when detached
 * @path: the path it was attached by, as shown by sysfs backing_dev
 * @nr_sectors: size in 512-byte sectors, sampled at attach
 * @lbs: logical block size in bytes
 */
struct kvtier_backing {
	struct kvtier_bdev kb;
	char *path;
	sector_t nr_sectors;
	unsigned int lbs;
};

/**
 * struct kvtier_tier - one tier: /dev/kvtierN, its host pool, its namespace
 * @id: N
 * @dev: the class device; its release frees the tier
 * @cdev: /dev/kvtierN
 * @lock: protects @backing and @nr_open. Held across the block device
 *        open and close of attach/detach; never taken on the I/O path.
 * @backing: the attached namespace (protected by @lock)
 * @nr_open: open files of /dev/kvtierN (protected by @lock); while any
 *           exists the namespace cannot be detached
 * @debugfs: /sys/kernel/debug/kvtier/kvtierN
 */
struct kvtier_tier {
	unsigned int id;
	struct device dev;
	struct cdev cdev;
	struct mutex lock;		/* attach/detach vs open, see above */
	struct kvtier_backing backing;
	unsigned int nr_open;
	struct dentry *debugfs;
};

static inline struct kvtier_tier *dev_to_tier(struct device *dev)
{
	return container_of(dev, struct kvtier_tier, dev);
}

/* main.c */
extern struct class kvtier_class;

/* tier.c */
struct kvtier_tier *kvtier_tier_create(unsigned int id, dev_t devt);
void kvtier_tier_destroy(struct kvtier_tier *tier);

/* backing.c: callers hold tier->lock */
bool kvtier_backing_attached(const struct kvtier_tier *tier);
int kvtier_backing_attach(struct kvtier_tier *tier, const char *path);
int kvtier_backing_detach(struct kvtier_tier *tier);

/* sysfs.c */
extern const struct attribute_group *kvtier_tier_groups[];

/* debugfs.c */
void kvtier_debugfs_init(void);
void kvtier_debugfs_exit(void);
void kvtier_debugfs_tier_add(struct kvtier_tier *tier);
void kvtier_debugfs_tier_remove(struct kvtier_tier *tier);

#endif /* KVTIER_H */
