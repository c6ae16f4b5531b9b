/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The slot allocator (slots.c): namespace space in PAGE_SIZE data slots,
 * kept as runs. Its own header, with nothing but the kernel's rbtree and
 * mutex, so tests/unit/ can build slots.c in user space and check it
 * against a model.
 */
#ifndef KVTIER_SLOTS_H
#define KVTIER_SLOTS_H

#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/types.h>

#define KVTIER_NO_SLOT		ULONG_MAX

/**
 * struct kvtier_extent - a run of consecutive data slots in a set
 * @node: in the set's tree, by @start
 * @start: first slot
 * @len: slots in the run, at least 1
 * @max: the longest @len in the subtree under @node (augmented rbtree)
 */
struct kvtier_extent {
	struct rb_node node;
	unsigned long start;
	unsigned long len;
	unsigned long max;
};

/**
 * struct kvtier_extents - a set of data slots as runs (slots.c); runs
 *                         neither overlap nor touch (touching ones merge)
 * @root: the runs, by first slot
 * @nr: runs in the set (each costs one struct kvtier_extent)
 * @units: slots in the set
 *
 * Not locked itself: the owner's lock covers it (kvtier_slots.lock for
 * the allocator's, kvtier_store.lock for a commit's).
 */
struct kvtier_extents {
	struct rb_root root;
	unsigned long nr;
	unsigned long units;
};

/**
 * struct kvtier_slots - namespace space, in PAGE_SIZE data slots
 * @lock: protects @free, @deferred, @used and @hint (a mutex: a free may
 *        sleep for memory; never taken under a spinlock)
 * @free: slots nobody holds
 * @deferred: slots to free after the next commit (see slots.c)
 * @nr: data slots on the namespace
 * @used: slots allocated (deferred slots included): @nr - @free.units
 * @hint: where the next allocation looks first (keeps runs contiguous)
 * @largest: the longest run in @free, for debugfs (written under @lock,
 *           read with READ_ONCE)
 */
struct kvtier_slots {
	struct mutex lock;		/* protects all but nr */
	struct kvtier_extents free;
	struct kvtier_extents deferred;
	unsigned long nr;
	unsigned long used;
	unsigned long hint;
	unsigned long largest;
};

int kvtier_slots_module_init(void);
void kvtier_slots_module_exit(void);
void kvtier_extents_init(struct kvtier_extents *set);
void kvtier_extents_destroy(struct kvtier_extents *set);
int kvtier_slots_init(struct kvtier_slots *slots, unsigned long nr);
void kvtier_slots_exit(struct kvtier_slots *slots);
unsigned long kvtier_slots_alloc(struct kvtier_slots *slots,
				 unsigned long want, unsigned long *got);
void kvtier_slots_forget(struct kvtier_slots *slots, unsigned long nr);
void kvtier_slots_free(struct kvtier_slots *slots, unsigned long slot,
		       unsigned long nr);
int kvtier_slots_claim(struct kvtier_slots *slots, unsigned long slot,
		       unsigned long nr);
void kvtier_slots_defer(struct kvtier_slots *slots, unsigned long slot,
			unsigned long nr);
unsigned long kvtier_slots_freeze(struct kvtier_slots *slots,
				  struct kvtier_extents *set);
void kvtier_slots_release(struct kvtier_slots *slots,
			  struct kvtier_extents *set);
unsigned long kvtier_slots_extents(struct kvtier_slots *slots);

#endif /* KVTIER_SLOTS_H */
