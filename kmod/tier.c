// SPDX-License-Identifier: GPL-2.0
/*
 * One tier: the /dev/kvtierN character device and its file operations.
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

static int kvtier_open(struct inode *inode, struct file *file)
{
	struct kvtier_tier *tier = container_of(inode->i_cdev,
						struct kvtier_tier, cdev);
	struct kvtier_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL);
	if (!kf)
		return -ENOMEM;
	/*
	 * Each file gets its own address_space before any mmap, so all
	 * mappings of its region are linked into one i_mmap tree that
	 * eviction can unmap through.
	 */
	kf->inode = alloc_anon_inode(kvtier_mnt->mnt_sb);
	if (IS_ERR(kf->inode)) {
		int ret = PTR_ERR(kf->inode);

		kfree(kf);
		return ret;
	}
	kf->tier = tier;
	mutex_init(&kf->lock);
	mutex_init(&kf->pin_lock);
	xa_init(&kf->pins);
	file->f_mapping = kf->inode->i_mapping;
	file->private_data = kf;

	mutex_lock(&tier->lock);
	tier->nr_open++;
	mutex_unlock(&tier->lock);
	return 0;
}

static int kvtier_release(struct inode *inode, struct file *file)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_tier *tier = kf->tier;

	kvtier_gpu_release(kf);
	kvtier_pin_release(file);
	if (kf->region)
		kvtier_region_put_user(kf->region);
	iput(kf->inode);
	kfree(kf);

	mutex_lock(&tier->lock);
	tier->nr_open--;
	mutex_unlock(&tier->lock);
	return 0;
}

/*
 * Give @kf its region. Caller holds kf->lock. Errors: EEXIST (already has
 * one), EINVAL (size 0), ENODEV (no namespace attached), ENOSPC (larger
 * than the namespace, or the tier has max_regions), EDQUOT (over
 * user_quota_mb or user_max_regions), EROFS (read-only tier), ENOMEM.
 * The bounds are checked before anything is allocated, and again when the
 * region is linked.
 */
int kvtier_file_create_region(struct kvtier_file *kf, loff_t size)
{
	struct kvtier_tier *tier = kf->tier;
	struct kvtier_region *region;
	loff_t capacity;
	bool exempt;
	int ret;

	lockdep_assert_held(&kf->lock);
	if (kf->region)
		return -EEXIST;
	if (size <= 0)
		return -EINVAL;

	capacity = kvtier_backing_capacity(tier);
	if (capacity < 0)
		return capacity;
	if (size > capacity)
		return -ENOSPC;
	if (tier->backing.read_only)
		return -EROFS;

	exempt = capable(CAP_SYS_RESOURCE);
	ret = kvtier_region_admit_early(tier, round_up(size, PAGE_SIZE) >>
					PAGE_SHIFT, exempt);
	if (ret)
		return ret;
	region = kvtier_region_create(tier, kf->inode,
				      round_up(size, PAGE_SIZE));
	if (IS_ERR(region))
		return PTR_ERR(region);
	spin_lock(&tier->regions_lock);
	ret = kvtier_region_admit(tier, region->owner, region->nr_pages, exempt);
	if (!ret)
		kvtier_region_link(region);
	spin_unlock(&tier->regions_lock);
	if (ret) {
		kvtier_region_put_user(region);	/* never visible */
		return ret;
	}
	kf->region = region;
	return 0;
}

static long kvtier_ioctl_region_create(struct kvtier_file *kf,
				       struct kvtier_region_create __user *uarg)
{
	struct kvtier_region_create arg;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || !arg.size || arg.size > (u64)MAX_LFS_FILESIZE)
		return -EINVAL;
	mutex_lock(&kf->lock);
	ret = kvtier_file_create_region(kf, arg.size);
	mutex_unlock(&kf->lock);
	return ret;
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
	struct kvtier_file *kf = file->private_data;

	switch (cmd) {
	case KVTIER_IOC_TIER_INFO:
		return kvtier_ioctl_tier_info(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_CREATE:
		return kvtier_ioctl_region_create(kf, (void __user *)arg);
	case KVTIER_IOC_REGION_OPEN:
		return kvtier_ioctl_region_open(file, (void __user *)arg);
	case KVTIER_IOC_REGION_UNLINK:
		return kvtier_ioctl_region_unlink(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_LIST:
		return kvtier_ioctl_region_list(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_SETFLAGS:
		return kvtier_ioctl_region_setflags(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_INFO:
		return kvtier_ioctl_region_info(file, (void __user *)arg);
	case KVTIER_IOC_GPU_REGISTER:
		return kvtier_ioctl_gpu_register(kf, (void __user *)arg);
	case KVTIER_IOC_GPU_UNREGISTER:
		return kvtier_ioctl_gpu_unregister(kf, (void __user *)arg);
	case KVTIER_IOC_PIN:
	case KVTIER_IOC_UNPIN: {
		struct kvtier_pin pin;

		if (copy_from_user(&pin, (void __user *)arg, sizeof(pin)))
			return -EFAULT;
		return kvtier_file_pin(file, &pin, cmd == KVTIER_IOC_PIN);
	}
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
	.mmap = kvtier_file_mmap,
	.read_iter = kvtier_file_read_iter,
	.write_iter = kvtier_file_write_iter,
	.fsync = kvtier_file_fsync,
	.fadvise = kvtier_file_fadvise,
	.llseek = default_llseek,
};

/* Defaults of the sysfs knobs, documented in sysfs-class-kvtier. */
static const struct kvtier_knobs kvtier_knob_defaults = {
	.host_budget_mb = 256,
	.watermark_high = 90,
	.watermark_low = 75,
	.readahead_kb = 512,
	.writeback_batch_kb = 1024,
	.max_inflight_kb = 16384,
	.pin_budget_mb = 64,
	.user_pin_mb = 32,
	.discard = true,
	.checksum = true,
	.user_quota_mb = 0,
	.max_regions = 1048576,
	.user_max_regions = 65536,
	.lease_interval_ms = 1000,
};

static void kvtier_tier_release(struct device *dev)
{
	struct kvtier_tier *tier = dev_to_tier(dev);

	kvtier_users_destroy(tier);
	kfree(tier);
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
	tier->knobs = kvtier_knob_defaults;
	atomic_long_set(&tier->inflight_bytes, 0);
	init_waitqueue_head(&tier->inflight_wait);
	atomic_set(&tier->meta_inflight, 0);
	tier->io_progress = jiffies;
	spin_lock_init(&tier->regions_lock);
	INIT_LIST_HEAD(&tier->regions);
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
