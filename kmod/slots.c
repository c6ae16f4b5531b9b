// SPDX-License-Identifier: GPL-2.0
/*
 * Namespace space: one PAGE_SIZE slot per page written back, tracked in a
 * bitmap. Allocation prefers runs of consecutive slots so pages that are
 * neighbours in a region are neighbours on the namespace, and write-back
 * and readahead can move them in one bio.
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
	if (!slots->map)
		return -ENOMEM;
	slots->nr = nr;
	slots->used = 0;
	slots->hint = 0;
	return 0;
}

void kvtier_slots_exit(struct kvtier_slots *slots)
{
	WARN_ON_ONCE(slots->used);
	kvfree(slots->map);
	slots->map = NULL;
	slots->nr = 0;
}

/*
 * Allocate up to @want consecutive slots. Returns the first slot and sets
 * *@got (1..@want), or returns KVTIER_NO_SLOT when the namespace is full.
 */
unsigned long kvtier_slots_alloc(struct kvtier_slots *slots,
				 unsigned long want, unsigned long *got)
{
	unsigned long start, end;

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
