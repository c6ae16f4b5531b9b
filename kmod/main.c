// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier: a memory tier for LLM KV data below the GPU.
 *
 * Module load and unload: the num_tiers parameter, the "kvtier" class,
 * the character device region and one tier per minor (crc.c has the
 * crc32c parameter).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "kvtier.h"

static unsigned int num_tiers = 1;

static int num_tiers_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret || n < 1 || n > KVTIER_MAX_TIERS) {
		pr_err("num_tiers=%s: not a number in 1..%u\n", val, KVTIER_MAX_TIERS);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = n;
	return 0;
}

static const struct kernel_param_ops num_tiers_ops = {
	.set = num_tiers_set,
	.get = param_get_uint,
};

module_param_cb(num_tiers, &num_tiers_ops, &num_tiers, 0444);
MODULE_PARM_DESC(num_tiers,
		 "Number of tiers, /dev/kvtier0..N-1 (count, default 1, range 1-64)");

struct class kvtier_class = {
	.name = KVTIER_NAME,
};

/* Pseudo filesystem for the per-file anonymous inodes (address_spaces). */
#define KVTIER_FS_MAGIC	0x6b767469	/* "kvti" */

static int kvtier_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, KVTIER_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type kvtier_fs_type = {
	.name = KVTIER_NAME,
	.init_fs_context = kvtier_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

struct vfsmount *kvtier_mnt;
struct kmem_cache *kvtier_page_cache;
struct workqueue_struct *kvtier_wq;
struct workqueue_struct *kvtier_lease_wq;
struct workqueue_struct *kvtier_direct_wq;

static dev_t kvtier_devt;
static struct kvtier_tier **kvtier_tiers;

/*
 * Tier @id, or NULL if there is none. Tiers live as long as the module:
 * a caller that holds a module reference (an open file, a mount) may keep
 * the pointer.
 */
struct kvtier_tier *kvtier_tier_by_id(unsigned int id)
{
	return id < num_tiers ? kvtier_tiers[id] : NULL;
}

static void kvtier_destroy_tiers(unsigned int n)
{
	while (n--)
		kvtier_tier_destroy(kvtier_tiers[n]);
}

static int __init kvtier_init(void)
{
	unsigned int i;
	int ret;

	kvtier_tiers = kcalloc(num_tiers, sizeof(*kvtier_tiers), GFP_KERNEL);
	if (!kvtier_tiers)
		return -ENOMEM;

	ret = kvtier_crc_module_init();
	if (ret)
		goto err_free;
	ret = -ENOMEM;
	kvtier_page_cache = KMEM_CACHE(kvtier_page, 0);
	if (!kvtier_page_cache)
		goto err_crc;
	ret = kvtier_slots_module_init();
	if (ret)
		goto err_cache;
	ret = -ENOMEM;
	/* Write-back runs here under memory pressure: it must make progress. */
	kvtier_wq = alloc_workqueue("kvtier", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!kvtier_wq)
		goto err_slots;
	/*
	 * Lease renewals on a queue of their own, high priority: work queued
	 * on kvtier_wq (prefetch, write-back) must never delay one past the
	 * takeover wait of another host (lease.c).
	 */
	kvtier_lease_wq = alloc_workqueue("kvtier_lease",
					  WQ_MEM_RECLAIM | WQ_HIGHPRI | WQ_UNBOUND, 0);
	if (!kvtier_lease_wq)
		goto err_wq;
	/*
	 * The ends of asynchronous direct reads (direct.c) may wait for
	 * budget, that is for room_work on kvtier_wq: never from kvtier_wq.
	 */
	kvtier_direct_wq = alloc_workqueue("kvtier_direct",
					   WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
	if (!kvtier_direct_wq)
		goto err_lease_wq;
	kvtier_mnt = kern_mount(&kvtier_fs_type);
	if (IS_ERR(kvtier_mnt)) {
		ret = PTR_ERR(kvtier_mnt);
		goto err_direct_wq;
	}

	ret = class_register(&kvtier_class);
	if (ret)
		goto err_mnt;

	ret = alloc_chrdev_region(&kvtier_devt, 0, num_tiers, KVTIER_NAME);
	if (ret)
		goto err_class;

	kvtier_debugfs_init();
	kvtier_sysfs_init();

	for (i = 0; i < num_tiers; i++) {
		struct kvtier_tier *tier;

		tier = kvtier_tier_create(i, MKDEV(MAJOR(kvtier_devt), i));
		if (IS_ERR(tier)) {
			ret = PTR_ERR(tier);
			goto err_tiers;
		}
		kvtier_tiers[i] = tier;
	}

	/* Last: a mount may find every tier once it is registered. */
	ret = kvtierfs_init();
	if (ret)
		goto err_tiers_all;

	pr_info("loaded: %u tier(s), major %d\n", num_tiers, MAJOR(kvtier_devt));
	return 0;

err_tiers_all:
	i = num_tiers;
err_tiers:
	kvtier_destroy_tiers(i);
	kvtier_debugfs_exit();
	unregister_chrdev_region(kvtier_devt, num_tiers);
err_class:
	class_unregister(&kvtier_class);
err_mnt:
	kern_unmount(kvtier_mnt);
err_direct_wq:
	destroy_workqueue(kvtier_direct_wq);
err_lease_wq:
	destroy_workqueue(kvtier_lease_wq);
err_wq:
	destroy_workqueue(kvtier_wq);
err_slots:
	kvtier_slots_module_exit();
err_cache:
	kmem_cache_destroy(kvtier_page_cache);
err_crc:
	kvtier_crc_module_exit();
err_free:
	kfree(kvtier_tiers);
	return ret;
}

static void __exit kvtier_exit(void)
{
	kvtierfs_exit();
	kvtier_destroy_tiers(num_tiers);
	kvtier_debugfs_exit();
	unregister_chrdev_region(kvtier_devt, num_tiers);
	class_unregister(&kvtier_class);
	kern_unmount(kvtier_mnt);
	destroy_workqueue(kvtier_direct_wq);
	destroy_workqueue(kvtier_lease_wq);
	destroy_workqueue(kvtier_wq);
	kvtier_slots_module_exit();
	kmem_cache_destroy(kvtier_page_cache);
	kvtier_crc_module_exit();
	kfree(kvtier_tiers);
	pr_info("unloaded\n");
}

module_init(kvtier_init);
module_exit(kvtier_exit);

MODULE_DESCRIPTION("kvtier: a host-memory and NVMe tier for LLM KV data");
MODULE_AUTHOR("The kvtier authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(KVTIER_VERSION);
