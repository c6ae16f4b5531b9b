// SPDX-License-Identifier: GPL-2.0
/*
 * One tier: the /dev/kvtierN character device and its file operations.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <linux/kvtier.h>

#include "kvtier.h"

static int kvtier_open(struct inode *inode, struct file *file)
{
	struct kvtier_tier *tier = container_of(inode->i_cdev,
						struct kvtier_tier, cdev);

	mutex_lock(&tier->lock);
	tier->nr_open++;
	mutex_unlock(&tier->lock);
	file->private_data = tier;
	return 0;
}

static int kvtier_release(struct inode *inode, struct file *file)
{
	struct kvtier_tier *tier = file->private_data;

	mutex_lock(&tier->lock);
	tier->nr_open--;
	mutex_unlock(&tier->lock);
	return 0;
}

static long kvtier_ioctl_tier_info(struct kvtier_tier *tier,
				   struct kvtier_tier_info __user *uinfo)
{
	struct kvtier_tier_info info = {
		.abi_version = KVTIER_ABI_VERSION,
		.tier_id = tier->id,
	};

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier)) {
		info.flags |= KVTIER_TIER_ATTACHED;
		info.logical_block_size = tier->backing.lbs;
		info.capacity_bytes = (u64)tier->backing.nr_sectors << SECTOR_SHIFT;
	}
	mutex_unlock(&tier->lock);

	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long kvtier_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kvtier_tier *tier = file->private_data;

	switch (cmd) {
	case KVTIER_IOC_TIER_INFO:
		return kvtier_ioctl_tier_info(tier, (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations kvtier_fops = {
	.owner = THIS_MODULE,
	.open = kvtier_open,
	.release = kvtier_release,
	.unlocked_ioctl = kvtier_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static void kvtier_tier_release(struct device *dev)
{
	kfree(dev_to_tier(dev));
}

struct kvtier_tier *kvtier_tier_create(unsigned int id, dev_t devt)
{
	struct kvtier_tier *tier;
	int ret;

	tier = kzalloc(sizeof(*tier), GFP_KERNEL);
	if (!tier)
		return ERR_PTR(-ENOMEM);

	tier->id = id;
	mutex_init(&tier->lock);

	device_initialize(&tier->dev);
	tier->dev.class = &kvtier_class;
	tier->dev.devt = devt;
	tier->dev.groups = kvtier_tier_groups;
	tier->dev.release = kvtier_tier_release;
	ret = dev_set_name(&tier->dev, KVTIER_NAME "%u", id);
	if (ret)
		goto err_put;

	cdev_init(&tier->cdev, &kvtier_fops);
	tier->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&tier->cdev, &tier->dev);
	if (ret)
		goto err_put;

	kvtier_debugfs_tier_add(tier);
	return tier;

err_put:
	put_device(&tier->dev);
	return ERR_PTR(ret);
}

/*
 * Called at module unload only: the module refcount (cdev owner) guarantees
 * no file of the tier is open, so only the namespace can still be attached.
 */
void kvtier_tier_destroy(struct kvtier_tier *tier)
{
	kvtier_debugfs_tier_remove(tier);
	cdev_device_del(&tier->cdev, &tier->dev);

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		kvtier_backing_detach(tier);
	mutex_unlock(&tier->lock);

	put_device(&tier->dev);
}
