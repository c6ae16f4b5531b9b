// SPDX-License-Identifier: GPL-2.0
/*
 * Extents: a region's pages that are only on the namespace, in runs, held
 * by one xarray entry per aligned group of KVT_EXTENT_PAGES pages instead
 * of one per page (kvtier.h, kvt_mk_extent()).
 *
 * A page's own entry (a shadow) costs a slot of a leaf node: a 576-byte
 * node per 64 pages, 9 bytes a page. When every page of a group is a
 * shadow, in consecutive slots, with no change the next commit has to
 * record (KVT_XA_CHANGED), the group becomes one multi-index entry in the
 * node above and its leaf goes: kvtier_mapext_make_locked(). That is
 * tried where a group can become whole: when a page is evicted (pool.c)
 * or its read failed (page.c), when a map is loaded (pagemap.c), when a
 * commit has recorded the group's changes (journal.c, store.c), after a
 * direct write (direct.c) and after a replayed change (journal.c).
 * Kernels without CONFIG_XARRAY_MULTI (no multi-index entries) make
 * none, and every page keeps its own entry.
 *
 * Anything that gives one page of an extent its own entry (a page read
 * back, a direct write, a replayed change) splits the extent into shadows
 * first, each with its own slot: kvtier_mapext_split(). Readers need
 * nothing: kvt_shadow_slot() reads either kind, so a lookup under RCU
 * that sees the extent, a half-split leaf (the extent in every slot) or
 * the shadows finds the same slot.
 *
 * The eviction clock of an extent is the newest of its pages': a refault
 * of a page evicted earlier than that counts as one evicted then, which
 * overcounts refaults of a group evicted over a long time, never misses
 * one.
 *
 * Locking: the region's xa_lock for every change (the _locked helpers say
 * so). @nr_extents of the region and @xa_extents of the tier count the
 * extents, for the metadata gauge (store.c, kvtier_meta_mem()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/xarray.h>

#include "kvtier.h"

/* Distance of eviction clock @clock from @now: the smaller, the newer. */
static unsigned long kvt_clock_age(unsigned long now, unsigned long clock)
{
	return clock ? (now - clock) & KVT_CLOCK_MASK : ULONG_MAX;
}

/*
 * Make the group of @index one extent if it can be. Caller holds the
 * region's xa_lock. The node above the leaf exists unless the leaf is the
 * whole tree; making that one costs a node without waiting, and where
 * none is free the group simply stays as it is.
 */
void kvtier_mapext_make_locked(struct kvtier_region *r, pgoff_t index)
{
	pgoff_t base = index & ~(KVT_EXTENT_PAGES - 1);
	unsigned long now = atomic_long_read(&r->tier->evict_clock);
	unsigned long slot = 0, clock = 0, age = ULONG_MAX;
	XA_STATE(xas, &r->pages, base);
	pgoff_t n = 0;
	void *entry;

	/* A region of one group, or a group past its end: no node to save. */
	if (!IS_ENABLED(CONFIG_XARRAY_MULTI) || r->nr_pages <= KVT_EXTENT_PAGES ||
	    base + KVT_EXTENT_PAGES > r->nr_pages)
		return;
	xas_for_each(&xas, entry, base + KVT_EXTENT_PAGES - 1) {
		if (!xa_is_value(entry) || kvt_is_extent(entry) ||
		    xas.xa_index != base + n ||
		    xas_get_mark(&xas, KVT_XA_CHANGED))
			return;
		if (!n)
			slot = kvt_shadow_slot(entry, base);
		else if (kvt_shadow_slot(entry, base + n) != slot + n)
			return;
		if (kvt_clock_age(now, kvt_shadow_clock(entry)) < age) {
			clock = kvt_shadow_clock(entry);
			age = kvt_clock_age(now, clock);
		}
		n++;
	}
	if (n != KVT_EXTENT_PAGES)
		return;
	xas_set_order(&xas, base, KVT_EXTENT_ORDER);
	xas_store(&xas, kvt_mk_extent(slot, clock));
	if (xas_error(&xas))
		return;
	atomic_long_inc(&r->nr_extents);
	atomic_long_inc(&r->tier->xa_extents);
}

/*
 * Give the pages of extent @extent, which @xas (order 0, its index in the
 * extent) found, their own entries: xas_split() leaves the extent in each
 * slot of the new leaf, and each then gets its page's shadow. Caller holds
 * the xa_lock and allocated the leaf (xas_split_alloc()).
 */
static void kvtier_mapext_spread(struct kvtier_region *r, struct xa_state *xas,
				 void *extent)
{
	pgoff_t base = xas->xa_index & ~(KVT_EXTENT_PAGES - 1);
	pgoff_t i;

	xas_split(xas, extent, KVT_EXTENT_ORDER);
	for (i = 0; i < KVT_EXTENT_PAGES; i++) {
		xas_set(xas, base + i);
		xas_store(xas, kvt_extent_shadow(extent, base + i));
	}
	atomic_long_dec(&r->nr_extents);
	atomic_long_dec(&r->tier->xa_extents);
}

/*
 * Make sure the page at @index has an entry of its own: split its extent,
 * if it is in one, allocating the leaf with @gfp. Takes the xa_lock.
 * Errors: -ENOMEM.
 */
int kvtier_mapext_split(struct kvtier_region *r, pgoff_t index, gfp_t gfp)
{
	XA_STATE(xas, &r->pages, index);
	void *entry, *now;

	for (;;) {
		entry = xa_load(&r->pages, index);
		if (!kvt_is_extent(entry))
			return 0;
		/* The leaf comes filled with @entry: readers may see it. */
		xas_split_alloc(&xas, entry, KVT_EXTENT_ORDER, gfp);
		if (xas_error(&xas))
			return xas_error(&xas);
		xas_lock(&xas);
		now = xas_load(&xas);
		if (now == entry)
			kvtier_mapext_spread(r, &xas, entry);
		xas_unlock(&xas);
		/* No error: frees the leaf if it was not used. */
		xas_nomem(&xas, 0);
		if (now == entry)
			return 0;
		xas_reset(&xas);
	}
}

/*
 * kvtier_mapext_split() for a caller that holds the xa_lock: the leaf is
 * allocated without waiting. Errors: -ENOMEM.
 */
int kvtier_mapext_split_locked(struct kvtier_region *r, pgoff_t index)
{
	XA_STATE(xas, &r->pages, index);
	void *entry = xas_load(&xas);

	if (!kvt_is_extent(entry))
		return 0;
	xas_split_alloc(&xas, entry, KVT_EXTENT_ORDER,
			GFP_NOWAIT | __GFP_NOWARN);
	if (xas_error(&xas))
		return xas_error(&xas);
	xas_reset(&xas);
	kvtier_mapext_spread(r, &xas, entry);
	return 0;
}

/*
 * Make extents of every whole group of @r, a map just loaded: the groups
 * that hold an entry, found with xa_find() (a large region may hold few).
 * Takes the xa_lock, a group at a time.
 */
void kvtier_mapext_make_all(struct kvtier_region *r)
{
	unsigned long index = 0;

	while (index < r->nr_pages &&
	       xa_find(&r->pages, &index, r->nr_pages - 1, XA_PRESENT)) {
		xa_lock(&r->pages);
		kvtier_mapext_make_locked(r, index);
		xa_unlock(&r->pages);
		index = (index | (KVT_EXTENT_PAGES - 1)) + 1;
		cond_resched();
	}
}

/*
 * For a walk of @r's xarray that clears KVT_XA_CHANGED (a commit): once it
 * leaves a group, try to make that group an extent. Call after each entry
 * with @xas at it, and once at the end with @xas NULL; *@group starts at
 * ULONG_MAX. Caller holds the xa_lock; the walk goes on after a pause.
 */
void kvtier_mapext_walked(struct kvtier_region *r, struct xa_state *xas,
			  unsigned long *group)
{
	unsigned long cur = xas ? xas->xa_index >> KVT_EXTENT_ORDER : ULONG_MAX;

	if (*group == cur)
		return;
	if (*group != ULONG_MAX) {
		if (xas)
			xas_pause(xas);
		kvtier_mapext_make_locked(r, *group << KVT_EXTENT_ORDER);
	}
	*group = cur;
}

/* @r's xarray is being emptied (xa_destroy()): its extents go with it. */
void kvtier_mapext_forget(struct kvtier_region *r)
{
	atomic_long_sub(atomic_long_xchg(&r->nr_extents, 0),
			&r->tier->xa_extents);
}
