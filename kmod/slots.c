// SPDX-License-Identifier: GPL-2.0
/*
 * Namespace space: one PAGE_SIZE data slot per page written back. Free
 * slots are kept as extents (runs of consecutive slots) in a tree sorted
 * by first slot, so the memory this takes follows how fragmented the
 * namespace is, not how large: a blank 15 TiB namespace is one extent.
 * Every operation is O(log n) in the number of extents: each node keeps
 * the longest run of its subtree, so a run of a given length is found
 * without visiting the shorter ones. Allocation takes a write-back batch's
 * run from the front of the first free extent long enough for all of it,
 * at or after the end of the last allocation (next fit), then from the
 * start, and only when no extent is long enough from the longest one: the
 * pages of a batch, neighbours in a region, stay neighbours on the
 * namespace (one bio for write-back and readahead), short holes are left
 * to short runs, and a region filled into a fragmented namespace gets as
 * few runs as its holes allow. Taking the front of an extent never splits
 * it, so allocation never allocates memory.
 *
 * A slot that a committed checkpoint may name (one a persistent region
 * let go of) must not be written again until a later commit no longer
 * names it: it is deferred, not freed. It stays allocated (counted in
 * @used) and is put in @deferred; a commit moves @deferred to its own set
 * before taking its snapshot and frees that set once its superblock is on
 * the media (kvtier_slots_freeze(), kvtier_slots_release()).
 *
 * Only adding a run that touches no extent of a set, and claiming a slot
 * from the middle of a free extent at attach, need a new tree node. Frees
 * cannot fail: they sleep for the node (GFP_NOIO, __GFP_NOFAIL: write-back
 * frees under page locks), as ext4 and XFS do for their free extents.
 */
#include <linux/rbtree_augmented.h>
#include <linux/slab.h>

#include "kvtier.h"

static struct kmem_cache *kvtier_extent_cache;

/* Each node keeps the longest run in its subtree (@max), for first fit. */
#define kvtier_extent_len(e)	((e)->len)
RB_DECLARE_CALLBACKS_MAX(static, kvtier_extent_cb, struct kvtier_extent, node,
			 unsigned long, max, kvtier_extent_len)

static struct kvtier_extent *kvtier_extent_of(struct rb_node *n)
{
	return n ? rb_entry(n, struct kvtier_extent, node) : NULL;
}

int __init kvtier_slots_module_init(void)
{
	kvtier_extent_cache = KMEM_CACHE(kvtier_extent, 0);
	return kvtier_extent_cache ? 0 : -ENOMEM;
}

void kvtier_slots_module_exit(void)
{
	kmem_cache_destroy(kvtier_extent_cache);
}

static unsigned long kvtier_extent_end(const struct kvtier_extent *e)
{
	return e->start + e->len;
}

void kvtier_extents_init(struct kvtier_extents *set)
{
	set->root = RB_ROOT;
	set->nr = 0;
	set->units = 0;
}

/* Free every node of @set; it is empty after. */
void kvtier_extents_destroy(struct kvtier_extents *set)
{
	struct kvtier_extent *e, *n;

	rbtree_postorder_for_each_entry_safe(e, n, &set->root, node)
		kmem_cache_free(kvtier_extent_cache, e);
	kvtier_extents_init(set);
}

/* The first extent of @set that ends after @pos (it holds @pos or follows it). */
static struct kvtier_extent *kvtier_extent_after(struct kvtier_extents *set,
						 unsigned long pos)
{
	struct rb_node *n = set->root.rb_node;
	struct kvtier_extent *best = NULL;

	while (n) {
		struct kvtier_extent *e = rb_entry(n, struct kvtier_extent, node);

		if (kvtier_extent_end(e) > pos) {
			best = e;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return best;
}

static void kvtier_extent_link(struct kvtier_extents *set,
			       struct kvtier_extent *e)
{
	struct rb_node **p = &set->root.rb_node, *parent = NULL;

	e->max = e->len;
	while (*p) {
		struct kvtier_extent *pe = kvtier_extent_of(*p);

		parent = *p;
		if (pe->max < e->len)
			pe->max = e->len;
		if (e->start < pe->start)
			p = &parent->rb_left;
		else
			p = &parent->rb_right;
	}
	rb_link_node(&e->node, parent, p);
	rb_insert_augmented(&e->node, &set->root, &kvtier_extent_cb);
	set->nr++;
}

/* Take @e out of @set without freeing it. */
static void kvtier_extent_erase(struct kvtier_extents *set,
				struct kvtier_extent *e)
{
	rb_erase_augmented(&e->node, &set->root, &kvtier_extent_cb);
	set->nr--;
}

static void kvtier_extent_unlink(struct kvtier_extents *set,
				 struct kvtier_extent *e)
{
	kvtier_extent_erase(set, e);
	kmem_cache_free(kvtier_extent_cache, e);
}

/* @e's length changed in place: the subtree maxima above it follow. */
static void kvtier_extent_resized(struct kvtier_extent *e)
{
	kvtier_extent_cb_propagate(&e->node, NULL);
}

/* The first extent, in order, of the subtree at @n that has @want slots. */
static struct kvtier_extent *
kvtier_extent_leftmost_fit(struct rb_node *n, unsigned long want)
{
	while (n) {
		struct kvtier_extent *e = kvtier_extent_of(n);
		struct kvtier_extent *l = kvtier_extent_of(n->rb_left);

		if (e->max < want)
			return NULL;
		if (l && l->max >= want) {
			n = n->rb_left;
			continue;
		}
		if (e->len >= want)
			return e;
		n = n->rb_right;
	}
	return NULL;
}

/*
 * The first extent that ends after @pos and has at least @want slots, or
 * NULL: from the first extent after @pos, on in order, skipping subtrees
 * whose longest run is too short. O(log n).
 */
static struct kvtier_extent *kvtier_extent_fit(struct kvtier_extents *set,
					       unsigned long pos,
					       unsigned long want)
{
	struct kvtier_extent *e = kvtier_extent_after(set, pos);
	struct rb_node *n, *p;

	while (e) {
		if (e->len >= want)
			return e;
		n = &e->node;
		if (n->rb_right && kvtier_extent_of(n->rb_right)->max >= want)
			return kvtier_extent_leftmost_fit(n->rb_right, want);
		/* Up to the first ancestor whose left subtree holds us. */
		while ((p = rb_parent(n)) && n == p->rb_right)
			n = p;
		e = kvtier_extent_of(p);
	}
	return NULL;
}

/*
 * Add [@start, @start + @len) to @set, merging it with the extents it
 * touches. Only a run that touches none needs a node: *@spare is used for
 * it (and set to NULL). Returns -EEXIST if the run overlaps the set (set
 * unchanged), -ENOMEM if a node is needed and *@spare is NULL.
 */
static int kvtier_extents_add(struct kvtier_extents *set, unsigned long start,
			      unsigned long len, struct kvtier_extent **spare)
{
	struct kvtier_extent *next = kvtier_extent_after(set, start);
	struct kvtier_extent *prev;
	struct rb_node *pn;
	bool to_prev, to_next;

	if (next && next->start < start + len)
		return -EEXIST;
	pn = next ? rb_prev(&next->node) : rb_last(&set->root);
	prev = pn ? rb_entry(pn, struct kvtier_extent, node) : NULL;
	to_prev = prev && kvtier_extent_end(prev) == start;
	to_next = next && next->start == start + len;
	if (to_prev && to_next) {
		unsigned long grow = len + next->len;

		/* Out of the tree first: a rotation meets no stale maximum. */
		kvtier_extent_unlink(set, next);
		prev->len += grow;
		kvtier_extent_resized(prev);
	} else if (to_prev) {
		prev->len += len;
		kvtier_extent_resized(prev);
	} else if (to_next) {
		next->start = start;	/* still after prev: order holds */
		next->len += len;
		kvtier_extent_resized(next);
	} else {
		if (!*spare)
			return -ENOMEM;
		(*spare)->start = start;
		(*spare)->len = len;
		kvtier_extent_link(set, *spare);
		*spare = NULL;
	}
	set->units += len;
	return 0;
}

/*
 * Take [@start, @start + @len) out of @set; it must lie inside one extent
 * (-ENOENT otherwise, set unchanged). Taking the middle of an extent
 * splits it, which needs a node of @gfp (-ENOMEM).
 */
static int kvtier_extents_take(struct kvtier_extents *set, unsigned long start,
			       unsigned long len, gfp_t gfp)
{
	struct kvtier_extent *e = kvtier_extent_after(set, start);
	struct kvtier_extent *tail;
	unsigned long end = start + len;

	if (!len || end < start || !e || e->start > start ||
	    kvtier_extent_end(e) < end)
		return -ENOENT;
	if (e->start == start && e->len == len) {
		kvtier_extent_unlink(set, e);
	} else if (e->start == start) {
		e->start = end;
		e->len -= len;
		kvtier_extent_resized(e);
	} else if (kvtier_extent_end(e) == end) {
		e->len -= len;
		kvtier_extent_resized(e);
	} else {
		tail = kmem_cache_alloc(kvtier_extent_cache, gfp | __GFP_NOWARN);
		if (!tail)
			return -ENOMEM;
		tail->start = end;
		tail->len = kvtier_extent_end(e) - end;
		e->len = start - e->start;
		kvtier_extent_resized(e);
		kvtier_extent_link(set, tail);
	}
	set->units -= len;
	return 0;
}

/*
 * Add a run that may not fail: sleep for a node if one is needed. Caller
 * holds slots->lock, which is dropped while it sleeps. Returns -EEXIST if
 * the run overlaps the set (a slot freed twice).
 */
static int kvtier_extents_add_nofail(struct kvtier_slots *slots,
				     struct kvtier_extents *set,
				     unsigned long start, unsigned long len)
{
	struct kvtier_extent *spare = NULL;
	int ret;

	lockdep_assert_held(&slots->lock);
	while ((ret = kvtier_extents_add(set, start, len, &spare)) == -ENOMEM) {
		mutex_unlock(&slots->lock);
		spare = kmem_cache_alloc(kvtier_extent_cache,
					 GFP_NOIO | __GFP_NOFAIL);
		mutex_lock(&slots->lock);
	}
	if (spare)
		kmem_cache_free(kvtier_extent_cache, spare);
	return ret;
}

/*
 * Move every extent of @src into @dst, reusing its nodes; @src is empty
 * after. Returns the slots moved (a run that overlaps @dst, a slot freed
 * twice, warns and is dropped).
 */
static unsigned long kvtier_extents_move(struct kvtier_extents *dst,
					 struct kvtier_extents *src)
{
	unsigned long moved = 0;
	struct rb_node *n;

	if (!dst->nr) {
		moved = src->units;
		swap(*dst, *src);
		return moved;
	}
	while ((n = rb_first(&src->root))) {
		struct kvtier_extent *e = kvtier_extent_of(n);
		unsigned long len = e->len;

		kvtier_extent_erase(src, e);
		src->units -= len;
		/* Disjoint sets: a run overlapping @dst is a slot freed twice. */
		if (!WARN_ON_ONCE(kvtier_extents_add(dst, e->start, len, &e)))
			moved += len;
		if (e)
			kmem_cache_free(kvtier_extent_cache, e);
	}
	return moved;
}

/* The longest run of free slots. Caller holds slots->lock. */
static unsigned long kvtier_slots_largest_locked(struct kvtier_slots *slots)
{
	struct kvtier_extent *root = kvtier_extent_of(slots->free.root.rb_node);

	return root ? root->max : 0;
}

/* The free set changed: update the gauges read without the lock. */
static void kvtier_slots_changed(struct kvtier_slots *slots)
{
	WRITE_ONCE(slots->largest, kvtier_slots_largest_locked(slots));
}

int kvtier_slots_init(struct kvtier_slots *slots, unsigned long nr)
{
	struct kvtier_extent *all;

	mutex_init(&slots->lock);
	kvtier_extents_init(&slots->free);
	kvtier_extents_init(&slots->deferred);
	slots->nr = 0;
	slots->used = 0;
	slots->hint = 0;
	slots->largest = 0;
	if (!nr)
		return 0;
	all = kmem_cache_alloc(kvtier_extent_cache, GFP_KERNEL);
	if (!all)
		return -ENOMEM;
	kvtier_extents_add(&slots->free, 0, nr, &all);
	slots->nr = nr;
	slots->largest = nr;
	return 0;
}

void kvtier_slots_exit(struct kvtier_slots *slots)
{
	WARN_ON_ONCE(slots->used);
	kvtier_extents_destroy(&slots->free);
	kvtier_extents_destroy(&slots->deferred);
	slots->nr = 0;
	WRITE_ONCE(slots->largest, 0);
}

/*
 * Mark @nr slots from @slot, which a loaded checkpoint names, allocated.
 * Returns -EUCLEAN if one is out of range or already named (corrupt
 * metadata), -ENOMEM. Attach only.
 */
int kvtier_slots_claim(struct kvtier_slots *slots, unsigned long slot,
		       unsigned long nr)
{
	int ret;

	mutex_lock(&slots->lock);
	ret = kvtier_extents_take(&slots->free, slot, nr, GFP_KERNEL);
	if (!ret)
		slots->used += nr;
	kvtier_slots_changed(slots);
	mutex_unlock(&slots->lock);
	return ret == -ENOENT ? -EUCLEAN : ret;
}

/*
 * Allocate up to @want consecutive slots. Returns the first slot and sets
 * *@got (1..@want), or returns KVTIER_NO_SLOT when the namespace is full.
 */
unsigned long kvtier_slots_alloc(struct kvtier_slots *slots,
				 unsigned long want, unsigned long *got)
{
	struct kvtier_extent *e;
	unsigned long start;

	if (kvtier_should_fail(KVT_FAIL_SLOT_ALLOC))
		return KVTIER_NO_SLOT;
	mutex_lock(&slots->lock);
	e = kvtier_extent_fit(&slots->free, slots->hint, want);
	if (!e)
		e = kvtier_extent_fit(&slots->free, 0, want);
	/* No run is long enough: the longest there is, so runs stay long. */
	if (!e)
		e = kvtier_extent_leftmost_fit(slots->free.root.rb_node,
					       kvtier_slots_largest_locked(slots));
	if (!e) {
		mutex_unlock(&slots->lock);
		return KVTIER_NO_SLOT;
	}
	start = e->start;
	*got = min(want, e->len);
	/* From the front of an extent: never a split, never an allocation. */
	kvtier_extents_take(&slots->free, start, *got, GFP_NOWAIT);
	slots->used += *got;
	slots->hint = start + *got;
	kvtier_slots_changed(slots);
	mutex_unlock(&slots->lock);
	return start;
}

/* Is [@slot, @slot + @nr) a non-empty range of data slots (no wrap)? */
static bool kvtier_slots_range_ok(struct kvtier_slots *slots,
				  unsigned long slot, unsigned long nr)
{
	return nr && nr <= slots->nr && slot <= slots->nr - nr;
}

void kvtier_slots_free(struct kvtier_slots *slots, unsigned long slot,
		       unsigned long nr)
{
	int ret = -EINVAL;

	mutex_lock(&slots->lock);
	if (kvtier_slots_range_ok(slots, slot, nr) && nr <= slots->used)
		ret = kvtier_extents_add_nofail(slots, &slots->free, slot, nr);
	if (!WARN_ON_ONCE(ret))
		slots->used -= nr;
	kvtier_slots_changed(slots);
	mutex_unlock(&slots->lock);
}

/*
 * Forget @nr used slots that no region in memory names any more: those of
 * a region whose page map was still on the namespace when it went (a
 * detach, or records that could not be read: pagemap.c). They stay out of
 * the free extents; the next attach finds them named, or free.
 */
void kvtier_slots_forget(struct kvtier_slots *slots, unsigned long nr)
{
	mutex_lock(&slots->lock);
	if (!WARN_ON_ONCE(nr > slots->used))
		slots->used -= nr;
	mutex_unlock(&slots->lock);
}

/* Free @nr slots from @slot after the next commit (see the top). */
void kvtier_slots_defer(struct kvtier_slots *slots, unsigned long slot,
			unsigned long nr)
{
	int ret = -EINVAL;

	mutex_lock(&slots->lock);
	if (kvtier_slots_range_ok(slots, slot, nr))
		ret = kvtier_extents_add_nofail(slots, &slots->deferred, slot, nr);
	WARN_ON_ONCE(ret);
	mutex_unlock(&slots->lock);
}

/*
 * Move the deferred slots into @set (a commit's); returns how many moved.
 * Slots deferred from now on wait for a later commit. Caller serialises
 * the use of @set.
 */
unsigned long kvtier_slots_freeze(struct kvtier_slots *slots,
				  struct kvtier_extents *set)
{
	unsigned long n;

	mutex_lock(&slots->lock);
	n = kvtier_extents_move(set, &slots->deferred);
	mutex_unlock(&slots->lock);
	return n;
}

/* Free every slot of @set (frozen, then committed); @set is empty after. */
void kvtier_slots_release(struct kvtier_slots *slots,
			  struct kvtier_extents *set)
{
	unsigned long moved;

	mutex_lock(&slots->lock);
	moved = kvtier_extents_move(&slots->free, set);
	if (!WARN_ON_ONCE(moved > slots->used))
		slots->used -= moved;
	kvtier_slots_changed(slots);
	mutex_unlock(&slots->lock);
}

/* Extents the allocator holds now (free and deferred); a racy gauge. */
unsigned long kvtier_slots_extents(struct kvtier_slots *slots)
{
	return READ_ONCE(slots->free.nr) + READ_ONCE(slots->deferred.nr);
}
