// SPDX-License-Identifier: GPL-2.0
/*
 * One tier: the /dev/kvtierN character device, made and destroyed with
 * its sysfs and debugfs entries. Its file operations are file.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <linux/kvtier.h>

#include "kvtier.h"

static void kvtier_tier_release(struct device *dev)
{
	struct kvtier_tier *tier = dev_to_tier(dev);

	kvtier_users_destroy(tier);
	kvtier_names_exit(tier);
	cleanup_srcu_struct(&tier->direct_srcu);
	kfree(tier);
}

struct kvtier_tier *kvtier_tier_create(unsigned int id, dev_t devt)
{
	struct kvtier_tier *tier;
	int ret;

	tier = kzalloc(sizeof(*tier), GFP_KERNEL);
	if (!tier)
		return ERR_PTR(-ENOMEM);
	ret = init_srcu_struct(&tier->direct_srcu);
	if (ret) {
		kfree(tier);
		return ERR_PTR(ret);
	}
	ret = kvtier_names_init(tier);
	if (ret) {
		cleanup_srcu_struct(&tier->direct_srcu);
		kfree(tier);
		return ERR_PTR(ret);
	}

	tier->id = id;
	mutex_init(&tier->lock);
	kvtier_knobs_init(&tier->knobs);
	atomic_long_set(&tier->inflight_bytes, 0);
	init_waitqueue_head(&tier->inflight_wait);
	atomic_set(&tier->meta_inflight, 0);
	tier->io_progress = jiffies;
	spin_lock_init(&tier->regions_lock);
	INIT_LIST_HEAD(&tier->regions);
	INIT_LIST_HEAD(&tier->dirty_regions);
	atomic_long_set(&tier->nr_pinned, 0);
	xa_init(&tier->users);
	spin_lock_init(&tier->gpu_lock);
	INIT_LIST_HEAD(&tier->gpu_ranges);
	kvtier_store_init(&tier->store);

	device_initialize(&tier->dev);
	tier->dev.class = &kvtier_class;
	tier->dev.devt = devt;
	tier->dev.groups = kvtier_tier_groups;
	tier->dev.release = kvtier_tier_release;
	ret = dev_set_name(&tier->dev, KVTIER_NAME "%u", id);
	if (ret)
		goto err_put;
	ret = kvtier_pool_init(tier);
	if (ret)
		goto err_put;

	cdev_init(&tier->cdev, &kvtier_fops);
	tier->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&tier->cdev, &tier->dev);
	if (ret)
		goto err_pool;

	kvtier_debugfs_tier_add(tier);
	return tier;

err_pool:
	kvtier_pool_exit(tier);
err_put:
	put_device(&tier->dev);
	return ERR_PTR(ret);
}

/*
 * Called at module unload only: the module refcount (cdev owner) guarantees
 * no file of the tier is open, so only named regions without files and the
 * namespace can remain. Volatile named regions do not outlive the module;
 * persistent ones are written back and committed by the detach.
 */
void kvtier_tier_destroy(struct kvtier_tier *tier)
{
	kvtier_debugfs_tier_remove(tier);
	cdev_device_del(&tier->cdev, &tier->dev);
	kvtier_names_drop_all(tier);

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		kvtier_backing_detach(tier);
	mutex_unlock(&tier->lock);

	kvtier_pool_exit(tier);
	put_device(&tier->dev);
}
