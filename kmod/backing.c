// SPDX-License-Identifier: GPL-2.0
/*
 * Attaching and detaching a tier's namespace: an exclusively claimed block
 * device. The claim's holder is the tier, so a second tier, a mount or any
 * other exclusive opener of the same device gets -EBUSY from the block layer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/slab.h>

#include "kvtier.h"

/*
 * Bytes of the attached namespace a region may use (its slots), or -ENODEV.
 * Takes tier->lock; an open file of the tier keeps the answer valid, since
 * detach is refused while one exists.
 */
loff_t kvtier_backing_capacity(struct kvtier_tier *tier)
{
	loff_t bytes = -ENODEV;

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		bytes = (loff_t)tier->slots.nr << PAGE_SHIFT;
	mutex_unlock(&tier->lock);
	return bytes;
}

/* Caller holds tier->lock. */
bool kvtier_backing_attached(const struct kvtier_tier *tier)
{
	lockdep_assert_held(&tier->lock);
	return tier->backing.kb.bdev;
}

/*
 * Caller holds tier->lock.
 *
 * Errors: -EBUSY if a namespace is already attached or the device is claimed
 * by someone else, -ENOENT if @path does not exist, -EINVAL if it is not a
 * block device or its logical block size exceeds PAGE_SIZE, -ENOMEM, or what
 * the block layer returns for the open.
 */
int kvtier_backing_attach(struct kvtier_tier *tier, const char *path)
{
	struct kvtier_backing *b = &tier->backing;
	unsigned long slots;
	unsigned int lbs;
	char *copy;
	int ret;

	lockdep_assert_held(&tier->lock);
	if (kvtier_backing_attached(tier))
		return -EBUSY;

	copy = kstrdup(path, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;

	ret = kvtier_bdev_open_excl(path, tier, &b->kb);
	if (ret) {
		/* lookup_bdev() says -ENOTBLK for a path that is not a block device. */
		if (ret == -ENOTBLK)
			ret = -EINVAL;
		goto err_free;
	}

	lbs = bdev_logical_block_size(b->kb.bdev);
	if (lbs > PAGE_SIZE) {
		dev_err(&tier->dev, "%s: logical block size %u exceeds page size\n",
			path, lbs);
		ret = -EINVAL;
		goto err_close;
	}

	b->nr_sectors = bdev_nr_sectors(b->kb.bdev);
	slots = b->nr_sectors >> (PAGE_SHIFT - SECTOR_SHIFT);
	/* Shadow entries hold KVT_SLOT_BITS of slot number. */
	if (slots > KVT_SLOT_MASK) {
		dev_warn(&tier->dev, "%s: using the first %llu bytes only\n",
			 path, (unsigned long long)KVT_SLOT_MASK << PAGE_SHIFT);
		slots = KVT_SLOT_MASK;
	}
	ret = kvtier_slots_init(&tier->slots, slots);
	if (ret)
		goto err_close;
	/* Statistics of a tier describe its current attachment. */
	kvtier_latency_reset(tier);
	memset(tier->io_sizes, 0, sizeof(tier->io_sizes));
	tier->first_error = 0;
	b->path = copy;
	b->lbs = lbs;
	dev_info(&tier->dev, "attached %s (%llu bytes, %u-byte blocks)\n",
		 path, (unsigned long long)b->nr_sectors << SECTOR_SHIFT, lbs);
	return 0;

err_close:
	kvtier_bdev_close(&b->kb, tier);
	b->nr_sectors = 0;
err_free:
	kfree(copy);
	return ret;
}

/*
 * Caller holds tier->lock.
 *
 * Detaching a detached tier is a no-op. Errors: -EBUSY while the tier is open
 * or has named regions.
 */
int kvtier_backing_detach(struct kvtier_tier *tier)
{
	struct kvtier_backing *b = &tier->backing;

	lockdep_assert_held(&tier->lock);
	if (!kvtier_backing_attached(tier))
		return 0;
	/* Open files and named regions (open or not) hold namespace space. */
	if (tier->nr_open || !list_empty(&tier->regions))
		return -EBUSY;

	kvtier_slots_exit(&tier->slots);
	kvtier_bdev_close(&b->kb, tier);
	dev_info(&tier->dev, "detached %s\n", b->path);
	kfree(b->path);
	b->path = NULL;
	b->nr_sectors = 0;
	b->lbs = 0;
	return 0;
}
