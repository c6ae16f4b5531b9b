// SPDX-License-Identifier: GPL-2.0
/*
 * A region's life: made for a file (file.c), a name (names.c) or a record
 * of the namespace (store.c), made visible in the tier's list, and
 * destroyed with every page and slot when its last user goes.
 *
 * Two counts keep it: @users (bound files, and the name while linked: the
 * bytes exist while there is one) and @ref (short holders: evictors,
 * readahead and prefetch workers, debugfs; destroy waits for them).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/slab.h>

#include "kvtier.h"

static atomic64_t kvtier_region_ids = ATOMIC64_INIT(0);

bool kvtier_region_tryget(struct kvtier_region *region)
{
	return refcount_inc_not_zero(&region->ref);
}

void kvtier_region_put(struct kvtier_region *region)
{
	if (refcount_dec_and_test(&region->ref))
		wake_up_var(&region->ref);
}

/*
 * A new region of @size bytes (a whole number of pages, but for a file
 * of a version-5 namespace) whose mappings share @inode's address_space,
 * with one user (the caller's file). Not yet visible: see
 * kvtier_region_publish().
 */
struct kvtier_region *kvtier_region_new(struct kvtier_tier *tier,
					struct inode *inode, loff_t size)
{
	struct kvtier_region *region;

	/* Charged to the creator's memory cgroup; CRCs come as pages do. */
	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return ERR_PTR(-ENOMEM);
	xa_init(&region->crcs);
	region->tier = tier;
	region->inode = inode;
	if (inode)	/* none for a region whose map is unloaded */
		ihold(inode);
	region->nr_pages = DIV_ROUND_UP(size, PAGE_SIZE);
	region->size = size;
	xa_init(&region->pages);
	INIT_WORK(&region->ra_work, kvtier_ra_work);
	spin_lock_init(&region->pf_lock);
	region->pf_first = ULONG_MAX;
	region->pf_last = 0;
	INIT_WORK(&region->pf_work, kvtier_prefetch_work);
	refcount_set(&region->ref, 1);
	refcount_set(&region->users, 1);
	region->id = atomic64_inc_return(&kvtier_region_ids);
	region->owner = current_fsuid();
	region->gid = current_fsgid();
	region->created = ktime_get_real_seconds();
	region->last_use = jiffies;
	INIT_LIST_HEAD(&region->node);
	INIT_LIST_HEAD(&region->lru_node);
	INIT_LIST_HEAD(&region->dirty_node);
	return region;
}

/*
 * @region's first dirty page (its nr_dirty went from 0 to 1): put it on
 * the tier's dirty list (struct kvtier_region.dirty_node), if it is on
 * the tier's list. Caller holds the page lock, and no lock below it.
 */
void kvtier_region_dirtied(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;

	spin_lock(&tier->regions_lock);
	if (list_empty(&region->dirty_node) && !list_empty(&region->node))
		list_add_tail(&region->dirty_node, &tier->dirty_regions);
	spin_unlock(&tier->regions_lock);
}

/*
 * Make @region @size bytes long, @size larger than it is: its owner is
 * charged for the new pages (unless @exempt), which are absent (zero).
 * Also how a replay applies a size a transaction recorded. Errors: EDQUOT.
 */
int kvtier_region_set_size(struct kvtier_region *region, loff_t size,
			   bool exempt)
{
	struct kvtier_tier *tier = region->tier;
	pgoff_t pages = DIV_ROUND_UP(size, PAGE_SIZE), old = region->nr_pages;
	int ret = 0;

	spin_lock(&tier->regions_lock);
	if (pages > old)
		ret = kvtier_user_charge_pages(region, pages - old, exempt);
	if (!ret) {
		/* Pages first: a fault checks them, a read the size. */
		WRITE_ONCE(region->nr_pages, pages);
		/* Pairs with kvtier_region_size(): a size read covers pages. */
		smp_store_release(&region->size, size);
	}
	spin_unlock(&tier->regions_lock);
	return ret;
}

/*
 * The bytes after the end of @region in its last page, which a mapping may
 * have written, zeroed and on the namespace before the region grows over
 * them, as a file's are: a commit that records the larger size finds the
 * zeroed page's slot recorded already. Nothing is done when they are zero.
 * Caller as kvtier_region_grow().
 */
static int kvtier_region_zero_tail(struct kvtier_region *region)
{
	size_t tail = offset_in_page(region->size);
	pgoff_t last = region->nr_pages - 1;
	struct kvtier_page *kp;
	enum kvtier_get how;
	bool junk;
	void *p;
	int ret;

	if (!tail || !xa_load(&region->pages, last))
		return 0;
	kp = kvtier_get_page(region, last, &how);
	if (IS_ERR(kp))
		return PTR_ERR(kp);
	p = kmap_local_page(kp->page);
	junk = memchr_inv(p + tail, 0, PAGE_SIZE - tail);
	kunmap_local(p);
	ret = junk ? kvtier_page_wait_writeback(kp) : 0;
	if (junk && !ret) {
		memzero_page(kp->page, tail, PAGE_SIZE - tail);
		kvtier_pool_mark_dirty(region->tier, kp);
	}
	unlock_page(kp->page);
	put_page(kp->page);
	if (!junk || ret)
		return ret;
	return kvtier_store_writeback(region, last, last, false);
}

/*
 * Make @region @size bytes long, if that is longer: a kvtierfs file
 * written or truncated past its end (persistent, format version 5); the
 * next commit records the size. Caller holds the kvtierfs inode's lock
 * (a region's size changes under it) and a user reference. Errors: EFBIG
 * (a version-4 namespace, whose sizes are fixed; more pages than a record
 * can say), EPERM (sealed), ENOSPC (larger than the namespace), EDQUOT
 * (its owner's quota, unless @exempt), those of loading its page map and
 * of the last page's read back and write-back.
 */
int kvtier_region_grow(struct kvtier_region *region, loff_t size, bool exempt)
{
	struct kvtier_tier *tier = region->tier;
	loff_t capacity = kvtier_backing_capacity(tier);
	int ret;

	if (size <= region->size)
		return 0;
	if (!region->persistent ||
	    DIV_ROUND_UP_ULL(size, PAGE_SIZE) > (u64)U32_MAX + 1)
		return -EFBIG;
	if (READ_ONCE(region->sealed))
		return -EPERM;
	if (capacity < 0)
		return capacity;
	if (size > capacity)
		return -ENOSPC;
	/* The last page may be on the namespace only, its map unloaded. */
	ret = kvtier_pagemap_load(region);
	if (!ret)
		ret = kvtier_region_zero_tail(region);
	if (ret)
		return ret;
	/*
	 * A commit reads a region's size, then walks its pages, under
	 * store.lock: a size that changed in between would leave pages past
	 * the recorded end, which attach refuses. And an upgrade to version
	 * 5 is version 5 under the lock only once it is committed.
	 */
	mutex_lock(&tier->store.lock);
	ret = kvtier_store_file_sizes(&tier->store) ?
	      kvtier_region_set_size(region, size, exempt) : -EFBIG;
	mutex_unlock(&tier->store.lock);
	if (ret)
		return ret;
	kvtier_journal_region_changed(region);
	atomic64_inc(&tier->store.changes);
	return 0;
}

/* Seconds since the epoch of the region's last fault, read or write. */
time64_t kvtier_region_last_used(struct kvtier_region *region)
{
	return ktime_get_real_seconds() -
		jiffies_to_msecs(jiffies - READ_ONCE(region->last_use)) /
		MSEC_PER_SEC;
}

/*
 * Make a region visible in the tier's list (debugfs, names, detach),
 * charged to its owner, without a bound: a region the namespace holds.
 * Errors: ENOMEM.
 */
int kvtier_region_publish(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	int ret = kvtier_user_prepare(tier, region->owner);

	if (ret)
		return ret;
	spin_lock(&tier->regions_lock);
	kvtier_region_list_add(region);
	spin_unlock(&tier->regions_lock);
	return 0;
}

/*
 * Give back a run of a destroyed region's slots. A persistent region's may
 * be named by the last commit: they are deferred to the next one (queued
 * now), unless the region is only being forgotten (detach), when the
 * namespace keeps them.
 */
static void kvtier_region_free_slots(struct kvtier_region *region,
				     unsigned long *run, unsigned long *len)
{
	struct kvtier_tier *tier = region->tier;

	if (!*len)
		return;
	if (!region->persistent) {
		kvtier_io_discard(tier, *run, *len);
		kvtier_slots_free(&tier->slots, *run, *len);
	} else if (READ_ONCE(tier->store.dropping)) {
		kvtier_slots_free(&tier->slots, *run, *len);
	} else {
		kvtier_slots_defer(&tier->slots, *run, *len);
	}
	*len = 0;
}

/*
 * Wait for evictors and workers to let go, and free every page and slot of
 * the region (discarding the slots). No file, mapping or name remains.
 */
static void kvtier_region_destroy(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long run = 0, len = 0, slot, nr;
	unsigned long index;
	void *entry;

	spin_lock(&tier->regions_lock);
	kvtier_region_list_del(region);
	spin_unlock(&tier->regions_lock);
	kvtier_region_put(region);
	wait_var_event(&region->ref, !refcount_read(&region->ref));
	/* Unlinking loads the map first: only a detach forgets one. */
	if (region->map.unloaded) {
		atomic_long_dec(&tier->store.nr_unloaded);
		if (READ_ONCE(tier->store.dropping))
			kvtier_slots_forget(&tier->slots, atomic_long_read(&region->nr_slots));
		else if (!WARN_ON_ONCE(!region->map.lost))
			atomic_long_add(atomic_long_read(&region->nr_slots),
					&tier->store.lost_slots);
	}

	xa_for_each(&region->pages, index, entry) {
		nr = 1;
		if (kvt_is_extent(entry)) {
			index &= ~(KVT_EXTENT_PAGES - 1);
			slot = kvt_shadow_slot(entry, index);
			nr = KVT_EXTENT_PAGES;
		} else if (xa_is_value(entry)) {
			slot = kvt_shadow_slot(entry, index);
		} else {
			struct kvtier_page *kp = entry;

			slot = kp->slot;
			/*
			 * A WILLNEED prefetch lets go of the region when its
			 * bios are submitted, not when they complete: wait
			 * for the completion, which still writes to kp.
			 */
			folio_wait_locked(page_folio(kp->page));
			/* Pins go with their files, which are all gone. */
			if (WARN_ON_ONCE(kvt_pg_test(kp, KVT_PG_PINNED)))
				atomic_long_dec(&tier->nr_pinned);
			kvtier_pool_del(tier, kp);
			put_page(kp->page);
			kvtier_page_free(kp);
		}
		cond_resched();
		if (slot == KVTIER_NO_SLOT)
			continue;
		if (len && slot == run + len) {
			len += nr;
			continue;
		}
		kvtier_region_free_slots(region, &run, &len);
		run = slot;
		len = nr;
	}
	kvtier_region_free_slots(region, &run, &len);
	kvtier_crc_runs_destroy(region);
	if (region->persistent && !READ_ONCE(tier->store.dropping))
		kvtier_store_kick(tier);
	kvtier_mapext_forget(region);
	xa_destroy(&region->pages);
	if (region->inode)
		iput(region->inode);
	kvtier_crcs_destroy(region);
	kfree(region);
}

/* A file closed, or the name was unlinked. */
void kvtier_region_put_user(struct kvtier_region *region)
{
	/* Read first: after the decrement another put may free it. */
	struct kvtier_tier *tier = region->tier;
	bool persistent = region->persistent;

	if (refcount_dec_and_test(&region->users))
		kvtier_region_destroy(region);
	else if (persistent)
		kvtier_pagemap_kick(tier);
}
