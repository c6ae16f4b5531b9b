// SPDX-License-Identifier: GPL-2.0
/*
 * Namespace space: one PAGE_SIZE data slot per page written back, tracked
 * in a bitmap. Allocation prefers runs of consecutive slots so pages that
 * are neighbours in a region are neighbours on the namespace, and
 * write-back and readahead can move them in one bio.
 *
 * A slot that a committed checkpoint may name (one a persistent region
 * let go of) must not be written again until a later commit no longer
 * names it: it is deferred, not freed. It stays allocated in @map and is
 * set in @deferred; a commit moves @deferred to its own set before taking
 * its snapshot and frees that set once its superblock is on the media
 * (kvtier_slots_freeze, kvtier_slots_release in store.c).
 */
#include <linux/bitmap.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kvtier.h"

int kvtier_slots_init(struct kvtier_slots *slots, unsigned long nr)
{
	spin_lock_init(&slots->lock);
	slots->map = kvcalloc(BITS_TO_LONGS(nr), sizeof(unsigned long),
			      GFP_KERNEL);
	slots->deferred = kvcalloc(BITS_TO_LONGS(nr), sizeof(unsigned long),
				   GFP_KERNEL);
	if (!slots->map || !slots->deferred) {
		kvfree(slots->map);
		kvfree(slots->deferred);
		slots->map = NULL;
		slots->deferred = NULL;
		return -ENOMEM;
	}
	slots->nr = nr;
	slots->used = 0;
	slots->nr_deferred = 0;
	slots->hint = 0;
	return 0;
}

void kvtier_slots_exit(struct kvtier_slots *slots)
{
	WARN_ON_ONCE(slots->used);
	kvfree(slots->map);
	kvfree(slots->deferred);
	slots->map = NULL;
	slots->deferred = NULL;
	slots->nr = 0;
}

/*
 * Mark a slot a loaded checkpoint names as allocated. Returns -EUCLEAN if
 * it is out of range or named twice (corrupt metadata). Attach only.
 */
int kvtier_slots_claim(struct kvtier_slots *slots, unsigned long slot)
{
	if (slot >= slots->nr || test_and_set_bit(slot, slots->map))
		return -EUCLEAN;
	slots->used++;
	return 0;
}

/*
 * Allocate up to @want consecutive slots. Returns the first slot and sets
 * *@got (1..@want), or returns KVTIER_NO_SLOT when the namespace is full.
 */
unsigned long kvtier_slots_alloc(struct kvtier_slots *slots,
				 unsigned long want, unsigned long *got)
{
	unsigned long start, end;

	if (kvtier_should_fail(KVT_FAIL_SLOT_ALLOC))
		return KVTIER_NO_SLOT;
	spin_lock(&slots->lock);
	start = find_next_zero_bit(slots->map, slots->nr, slots->hint);
	if (start >= slots->nr)
		start = find_first_zero_bit(slots->map, slots->nr);
	if (start >= slots->nr) {
		spin_unlock(&slots->lock);
		return KVTIER_NO_SLOT;
	}
	end = find_next_bit(slots->map, min(slots->nr, start + want), start);
	bitmap_set(slots->map, start, end - start);
	slots->used += end - start;
	slots->hint = end;
	spin_unlock(&slots->lock);
	*got = end - start;
	return start;
}

void kvtier_slots_free(struct kvtier_slots *slots, unsigned long slot,
		       unsigned long nr)
{
	spin_lock(&slots->lock);
	if (!WARN_ON_ONCE(slot + nr > slots->nr)) {
		bitmap_clear(slots->map, slot, nr);
		slots->used -= nr;
	}
	spin_unlock(&slots->lock);
}

/* Free @nr slots from @slot after the next commit (see the top). */
void kvtier_slots_defer(struct kvtier_slots *slots, unsigned long slot,
			unsigned long nr)
{
	spin_lock(&slots->lock);
	if (!WARN_ON_ONCE(slot + nr > slots->nr)) {
		bitmap_set(slots->deferred, slot, nr);
		slots->nr_deferred += nr;
	}
	spin_unlock(&slots->lock);
}

/*
 * Move the deferred slots into @set (a commit's, same size as the map);
 * returns how many moved. Slots deferred from now on wait for a later
 * commit.
 */
unsigned long kvtier_slots_freeze(struct kvtier_slots *slots,
				  unsigned long *set)
{
	unsigned long n;

	spin_lock(&slots->lock);
	bitmap_or(set, set, slots->deferred, slots->nr);
	bitmap_zero(slots->deferred, slots->nr);
	n = slots->nr_deferred;
	slots->nr_deferred = 0;
	spin_unlock(&slots->lock);
	return n;
}
