// SPDX-License-Identifier: GPL-2.0
/*
 * Pins (KVTIER_IOC_PIN / UNPIN): pages kept resident, never evicted.
 *
 * A pin belongs to the open file (the binding) that took it, as a
 * mlock()ed range belongs to its mm: the file records the indices it
 * pinned in kvtier_file.pins, UNPIN through it releases only those, and
 * its release drops the rest. A page stays pinned while any binding pins
 * it: kvtier_page.pins counts them, KVT_PG_PINNED is set while it is not
 * zero (the bit is what eviction tests without the page lock).
 *
 * Two bounds, both checked before a page is touched:
 *   - the tier's pinned pages (distinct pages, the memory actually held):
 *     pin_budget_mb, and never more than half the pool;
 *   - each user's pins (one per binding and page, charged to the user who
 *     opened the file): user_pin_mb, unless CAP_SYS_RESOURCE.
 * So one member of the kvtier group can neither take the whole pin budget
 * nor release another's pins.
 *
 * Locks: kvtier_file.pin_lock serialises one file's pins and is taken
 * before the page lock; the per-user counts are users.c's.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "kvtier.h"

/* In kvtier_file.pins: taken by the PIN call in progress (undone if it fails). */
#define KVT_PIN_NEW	XA_MARK_0

/* Pages a tier may pin: pin_budget_mb, and never more than half the pool. */
static unsigned long kvtier_pin_limit(struct kvtier_tier *tier)
{
	unsigned long pin = kvtier_mb_pages(READ_ONCE(tier->knobs.pin_budget_mb));

	return min(pin, kvtier_budget_pages(tier) / 2);
}

/* Pins are charged to the user who opened the file. */
static int kvtier_pin_charge(struct kvtier_tier *tier, struct file *file,
			     unsigned long nr)
{
	return kvtier_user_charge_pins(tier, file->f_cred->fsuid, nr);
}

static void kvtier_pin_uncharge(struct kvtier_tier *tier, struct file *file,
				unsigned long nr)
{
	kvtier_user_uncharge_pins(tier, file->f_cred->fsuid, nr);
}

/*
 * Drop @kf's pin of the page at @index, if it holds one. Caller holds
 * kf->pin_lock. Returns the pins dropped (0 or 1), for the user's charge.
 */
static unsigned long kvtier_unpin_index(struct kvtier_file *kf, pgoff_t index)
{
	struct kvtier_region *region = kf->region;
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page *kp;
	struct page *page;
	void *entry;

	lockdep_assert_held(&kf->pin_lock);
	if (!xa_erase(&kf->pins, index))
		return 0;
	xa_lock(&region->pages);
	entry = xa_load(&region->pages, index);
	/* A pinned page is never evicted, so it is still resident. */
	if (WARN_ON_ONCE(!entry || xa_is_value(entry))) {
		xa_unlock(&region->pages);
		return 1;
	}
	kp = entry;
	page = kp->page;
	get_page(page);
	xa_unlock(&region->pages);
	lock_page(page);
	if (!WARN_ON_ONCE(!kvtier_page_is_at(region, index, kp, page) ||
			  !kp->pins) &&
	    !--kp->pins) {
		kvt_pg_clear(kp, KVT_PG_PINNED);
		atomic_long_dec(&tier->nr_pinned);
		atomic_long_dec(&region->nr_pinned);
	}
	unlock_page(page);
	put_page(page);
	return 1;
}

/* Drop @kf's pins in [first, last]. Caller holds kf->pin_lock. */
static unsigned long kvtier_unpin_range(struct kvtier_file *kf, pgoff_t first,
					pgoff_t last)
{
	unsigned long index = first, dropped = 0;

	while (xa_find(&kf->pins, &index, last, XA_PRESENT)) {
		dropped += kvtier_unpin_index(kf, index);
		if (index == last)
			break;
		index++;
		cond_resched();
	}
	return dropped;
}

/* Pin the page at @index for @kf. Caller holds kf->pin_lock. */
static int kvtier_pin_index(struct kvtier_file *kf, pgoff_t index)
{
	struct kvtier_region *region = kf->region;
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page *kp;
	enum kvtier_get how;
	int ret;

	lockdep_assert_held(&kf->pin_lock);
	ret = xa_insert(&kf->pins, index, xa_mk_value(0), GFP_KERNEL);
	if (ret)
		return ret;
	xa_set_mark(&kf->pins, index, KVT_PIN_NEW);
	kp = kvtier_get_page(region, index, &how);
	if (IS_ERR(kp)) {
		xa_erase(&kf->pins, index);
		return PTR_ERR(kp);
	}
	if (!kp->pins++) {
		kvt_pg_set(kp, KVT_PG_PINNED);
		atomic_long_inc(&region->nr_pinned);
	} else {
		/* Another binding's pin holds it already: no new memory. */
		atomic_long_dec(&tier->nr_pinned);
	}
	unlock_page(kp->page);
	put_page(kp->page);
	return 0;
}

/*
 * KVTIER_IOC_PIN / UNPIN. Pinning charges the whole range to the user and
 * reserves it against the tier's pin limit first, then brings each page in
 * and pins it; a page this file pinned already gives both back, and so
 * does (for the tier) a page another binding pins. On failure the pins
 * this call took are undone (they carry KVT_PIN_NEW until it ends). UNPIN
 * drops only this file's pins. Errors:
 * ENXIO (no region), EINVAL (flags, zero or unaligned length or offset,
 * range outside the region), EDQUOT (over user_pin_mb), ENOSPC (over the
 * tier's pin limit), EIO/ENOMEM (a page could not be brought in), EINTR.
 */
long kvtier_file_pin(struct file *file, const struct kvtier_pin *pin, bool pin_it)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_region *region = kvtier_file_region(file);
	unsigned long given_back = 0, index;
	struct kvtier_tier *tier;
	pgoff_t first, nr, i;
	long ret = 0;

	if (!region)
		return -ENXIO;
	tier = region->tier;
	if (pin->flags || !pin->length || !PAGE_ALIGNED(pin->offset) ||
	    !PAGE_ALIGNED(pin->length) ||
	    pin->offset >= (u64)region->nr_pages << PAGE_SHIFT ||
	    pin->length > ((u64)region->nr_pages << PAGE_SHIFT) - pin->offset)
		return -EINVAL;
	first = pin->offset >> PAGE_SHIFT;
	nr = pin->length >> PAGE_SHIFT;

	mutex_lock(&kf->pin_lock);
	if (!pin_it) {
		kvtier_pin_uncharge(tier, file,
				    kvtier_unpin_range(kf, first, first + nr - 1));
		/* Its dirty pages count for background write-back again. */
		kvtier_pool_kick(tier);
		goto out;
	}

	if (atomic_long_add_return(nr, &tier->nr_pinned) > kvtier_pin_limit(tier)) {
		atomic_long_sub(nr, &tier->nr_pinned);
		ret = -ENOSPC;
		goto out;
	}
	ret = kvtier_pin_charge(tier, file, nr);
	if (ret) {
		atomic_long_sub(nr, &tier->nr_pinned);
		goto out;
	}
	for (i = 0; i < nr; i++) {
		if (xa_load(&kf->pins, first + i)) {
			/* Pinned by this file already: a no-op. */
			atomic_long_dec(&tier->nr_pinned);
			given_back++;
			continue;
		}
		ret = kvtier_pin_index(kf, first + i);
		if (ret)
			break;
		cond_resched();
	}
	if (ret) {
		/* Give back the reservations of the pages never reached. */
		atomic_long_sub(nr - i, &tier->nr_pinned);
		given_back += nr - i;
	}
	/* End the call: keep its new pins, or undo them all on failure. */
	for (index = first;
	     xa_find(&kf->pins, &index, first + nr - 1, KVT_PIN_NEW); index++) {
		if (ret)
			given_back += kvtier_unpin_index(kf, index);
		else
			xa_clear_mark(&kf->pins, index, KVT_PIN_NEW);
		if (index == first + nr - 1)
			break;
		cond_resched();
	}
	kvtier_pin_uncharge(tier, file, given_back);
out:
	mutex_unlock(&kf->pin_lock);
	return ret;
}

/* The file is being released: drop every pin it holds. */
void kvtier_pin_release(struct file *file)
{
	struct kvtier_file *kf = file->private_data;

	if (!kf->region)
		return;
	mutex_lock(&kf->pin_lock);
	kvtier_pin_uncharge(kf->region->tier, file,
			    kvtier_unpin_range(kf, 0, kf->region->nr_pages - 1));
	mutex_unlock(&kf->pin_lock);
	xa_destroy(&kf->pins);
}
