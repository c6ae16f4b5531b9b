// SPDX-License-Identifier: GPL-2.0
/*
 * Attaching and detaching a tier's namespace: an exclusively claimed block
 * device. The claim's holder is the tier, so a second tier, a mount or any
 * other exclusive opener of the same device gets -EBUSY from the block layer.
 * What the namespace holds is the store's business (store.c): attach opens
 * it (formatting a blank or, on request, any namespace), detach closes it.
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
 * Caller holds tier->lock. With @format, whatever the namespace holds is
 * destroyed and an empty store written.
 *
 * Errors: -EBUSY if a namespace is already attached or the device is claimed
 * by someone else, -ENOENT if @path does not exist, -EINVAL if it is not a
 * block device or its logical block size exceeds PAGE_SIZE, what
 * kvtier_store_open() returns (-EMEDIUMTYPE, -EUCLEAN, -EOPNOTSUPP,
 * -ENOSPC, -EIO), -ENOMEM, or what the block layer returns for the open.
 */
int kvtier_backing_attach(struct kvtier_tier *tier, const char *path,
			  bool format)
{
	struct kvtier_backing *b = &tier->backing;
	unsigned int lbs;
	char *copy;
	int ret;

	lockdep_assert_held(&tier->lock);
	if (kvtier_backing_attached(tier))
		return -EBUSY;

	copy = kstrdup(path, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;

	b->read_only = READ_ONCE(tier->knobs.read_only);
	ret = kvtier_bdev_open_excl(path, tier, &b->kb, !b->read_only);
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
	b->path = copy;
	b->lbs = lbs;
	/* Statistics of a tier describe its current attachment. */
	kvtier_latency_reset(tier);
	memset(tier->io_sizes, 0, sizeof(tier->io_sizes));
	memset(tier->io_pages, 0, sizeof(tier->io_pages));
	tier->first_error = 0;
	ret = kvtier_store_open(tier, format);
	if (ret) {
		b->path = NULL;
		b->lbs = 0;
		goto err_close;
	}
	dev_info(&tier->dev, "attached %s (%llu bytes, %u-byte blocks%s)\n",
		 path, (unsigned long long)b->nr_sectors << SECTOR_SHIFT, lbs,
		 b->read_only ? ", read-only" : "");
	kvtier_store_opened(tier);
	return 0;

err_close:
	kvtier_bdev_close(&b->kb, tier);
	b->nr_sectors = 0;
err_free:
	kfree(copy);
	return ret;
}

/*
 * Any open file, kvtierfs mount, or region but persistent ones without
 * users? Caller holds tier->lock.
 */
static bool kvtier_backing_busy(struct kvtier_tier *tier)
{
	struct kvtier_region *r;
	bool busy = tier->nr_open || tier->nr_mounts;

	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node)
		busy |= !r->persistent || refcount_read(&r->users) > 1;
	spin_unlock(&tier->regions_lock);
	return busy;
}

/*
 * Caller holds tier->lock.
 *
 * Persistent regions are written back, committed and forgotten (they come
 * back at the next attach). Detaching a detached tier is a no-op. Errors:
 * -EBUSY while the tier is open, mounted or has volatile named regions (nothing
 * changes); a write-back or commit error (-EIO...): the tier is detached
 * anyway, and the namespace holds the last commit that succeeded.
 */
int kvtier_backing_detach(struct kvtier_tier *tier)
{
	struct kvtier_backing *b = &tier->backing;
	int ret;

	lockdep_assert_held(&tier->lock);
	if (!kvtier_backing_attached(tier))
		return 0;
	/* Open files, a mount and volatile named regions hold namespace space. */
	if (kvtier_backing_busy(tier))
		return -EBUSY;

	ret = kvtier_store_close(tier);
	kvtier_io_drain(tier);
	kvtier_spare_free(tier, ULONG_MAX);	/* no page comes back in now */
	kvtier_bdev_close(&b->kb, tier);
	dev_info(&tier->dev, "detached %s\n", b->path);
	kfree(b->path);
	b->path = NULL;
	b->nr_sectors = 0;
	b->lbs = 0;
	return ret;
}
