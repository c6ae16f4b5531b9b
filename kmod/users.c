// SPDX-License-Identifier: GPL-2.0
/*
 * What each user holds in a tier, and the bounds on it: the regions a uid
 * owns and their sizes (user_max_regions, user_quota_mb; the tier's
 * max_regions bounds everyone's together) and the pins of the files it
 * opened (user_pin_mb, pin.c). Every member of the kvtier group may create
 * regions, and named ones outlive the process: without these bounds one
 * member could fill the kernel's memory with region structures or take
 * the whole pin budget.
 *
 * One struct kvtier_user per uid that ever used the tier, in tier->users
 * (indexed by the uid in the initial user namespace), created before the
 * first charge by kvtier_user_prepare() in process context and freed with
 * the tier: a user cannot make more uids, so the table stays small. Every
 * count is read and changed under tier->regions_lock, which also makes a
 * check and the link of the region it admits one step.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/list_sort.h>
#include <linux/slab.h>
#include <linux/xarray.h>

#include "kvtier.h"

/**
 * struct kvtier_user - one uid's share of a tier (under tier->regions_lock)
 * @regions: linked regions it owns
 * @pages: their sizes, in pages
 * @pins: pins of the files it opened, one per file and page
 * @lru: its linked persistent regions (kvtier_region.lru_node), the least
 *       recently used first: what capacity reclaim takes, in that order
 *       (kvtier_user_lru_victim()). A region is put at its place by
 *       last_use when it is linked (an attach sorts the list once, at its
 *       end) and again when a file of it closes; while files hold it, it
 *       stays where it was and is passed over. last_use only grows, and
 *       only while a file holds the region, so the regions no file holds
 *       stay in order.
 */
struct kvtier_user {
	unsigned long regions;
	unsigned long pages;
	unsigned long pins;
	struct list_head lru;
};

static unsigned long kvtier_uid_index(kuid_t uid)
{
	return from_kuid(&init_user_ns, uid);
}

/* Make sure @uid has an entry, before a charge under the lock. */
int kvtier_user_prepare(struct kvtier_tier *tier, kuid_t uid)
{
	struct kvtier_user *u;
	void *old;

	if (xa_load(&tier->users, kvtier_uid_index(uid)))
		return 0;
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	INIT_LIST_HEAD(&u->lru);
	old = xa_cmpxchg(&tier->users, kvtier_uid_index(uid), NULL, u,
			 GFP_KERNEL);
	if (old) {
		kfree(u);
		return xa_is_err(old) ? xa_err(old) : 0;
	}
	return 0;
}

static struct kvtier_user *kvtier_user_find(struct kvtier_tier *tier,
					    kuid_t uid)
{
	lockdep_assert_held(&tier->regions_lock);
	return xa_load(&tier->users, kvtier_uid_index(uid));
}

/*
 * Whether @owner may have a new region of @nr_pages: ENOSPC if the tier
 * has max_regions already, EDQUOT if the owner would exceed
 * user_max_regions or user_quota_mb (0: no bound; @exempt, CAP_SYS_RESOURCE
 * checked by the caller outside the lock, passes those two), ENOMEM if no
 * entry was prepared. Caller holds regions_lock and links the region under
 * it, so two creations cannot both take the last room.
 */
int kvtier_region_admit(struct kvtier_tier *tier, kuid_t owner,
			pgoff_t nr_pages, bool exempt)
{
	unsigned long max = READ_ONCE(tier->knobs.max_regions);
	unsigned long user_max = READ_ONCE(tier->knobs.user_max_regions);
	unsigned long quota = READ_ONCE(tier->knobs.user_quota_mb);
	struct kvtier_user *u = kvtier_user_find(tier, owner);

	if (!u)
		return -ENOMEM;
	if (max && tier->nr_regions >= max)
		return -ENOSPC;
	if (exempt)
		return 0;
	if (user_max && u->regions >= user_max)
		return -EDQUOT;
	if (quota && (u64)u->pages + nr_pages > kvtier_mb_pages(quota))
		return -EDQUOT;
	return 0;
}

/*
 * kvtier_region_admit() for the caller as the owner of a region it is
 * about to create, before anything is allocated for it: a refused create
 * costs nothing. The check is made again when the region is linked.
 */
int kvtier_region_admit_early(struct kvtier_tier *tier, pgoff_t nr_pages,
			      bool exempt)
{
	int ret = kvtier_user_prepare(tier, current_fsuid());

	if (ret)
		return ret;
	spin_lock(&tier->regions_lock);
	ret = kvtier_region_admit(tier, current_fsuid(), nr_pages, exempt);
	spin_unlock(&tier->regions_lock);
	return ret;
}

/*
 * Link @region into the tier's list and charge it to its owner, whose entry
 * was prepared. Caller holds regions_lock.
 */
void kvtier_region_list_add(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_user *u = kvtier_user_find(tier, region->owner);

	list_add_tail(&region->node, &tier->regions);
	/* Dirtied before it was listed: kvtier_region_dirtied() left it off. */
	if (atomic_long_read(&region->nr_dirty))
		list_add_tail(&region->dirty_node, &tier->dirty_regions);
	tier->nr_regions++;
	if (!WARN_ON_ONCE(!u)) {
		u->regions++;
		u->pages += region->nr_pages;
	}
}

/*
 * Charge @region's owner for @nr more pages of it (a file that grows),
 * within user_quota_mb unless @exempt. Caller holds regions_lock, and
 * adds them to region->nr_pages in the same section, so that
 * kvtier_region_list_del() gives back what was charged. Errors: EDQUOT.
 */
int kvtier_user_charge_pages(struct kvtier_region *region, pgoff_t nr,
			     bool exempt)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long quota = READ_ONCE(tier->knobs.user_quota_mb);
	struct kvtier_user *u = kvtier_user_find(tier, region->owner);

	lockdep_assert_held(&tier->regions_lock);
	if (WARN_ON_ONCE(!u || list_empty(&region->node)))
		return -ENOENT;
	if (!exempt && quota && (u64)u->pages + nr > kvtier_mb_pages(quota))
		return -EDQUOT;
	u->pages += nr;
	return 0;
}

/* Undo kvtier_region_list_add(), if it was linked. Caller holds regions_lock. */
void kvtier_region_list_del(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_user *u;

	/* Unlinked before it is destroyed: the name holds a user reference. */
	if (WARN_ON_ONCE(!list_empty(&region->lru_node)))
		list_del_init(&region->lru_node);
	if (list_empty(&region->node))
		return;
	list_del_init(&region->node);
	list_del_init(&region->dirty_node);
	tier->nr_regions--;
	u = kvtier_user_find(tier, region->owner);
	if (!WARN_ON_ONCE(!u || !u->regions || u->pages < region->nr_pages)) {
		u->regions--;
		u->pages -= region->nr_pages;
	}
}

/*
 * Put linked persistent @region on its owner's LRU: at the end, or, with
 * @sorted, after the last region used before it. Caller holds
 * regions_lock; the owner's entry was prepared (the region is listed).
 */
void kvtier_user_lru_add(struct kvtier_region *region, bool sorted)
{
	struct kvtier_user *u = kvtier_user_find(region->tier, region->owner);
	unsigned long last = READ_ONCE(region->last_use);
	struct kvtier_region *r;

	if (WARN_ON_ONCE(!u))
		return;
	list_del_init(&region->lru_node);
	if (!sorted) {
		list_add_tail(&region->lru_node, &u->lru);
		return;
	}
	/* Usually no step at all: a region is put here as it is let go of. */
	list_for_each_entry_reverse(r, &u->lru, lru_node)
		if (!time_after(READ_ONCE(r->last_use), last))
			break;
	list_add(&region->lru_node, &r->lru_node);
}

/*
 * A file of @region closed: put it at its place in its owner's LRU if it
 * is linked and persistent (it was used until now, so that is at or near
 * the end). Takes regions_lock.
 */
void kvtier_user_lru_closed(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;

	if (!region->persistent)
		return;
	spin_lock(&tier->regions_lock);
	if (region->linked)
		kvtier_user_lru_add(region, true);
	spin_unlock(&tier->regions_lock);
}

static int kvtier_lru_cmp(void *priv, const struct list_head *a,
			  const struct list_head *b)
{
	return time_after(READ_ONCE(list_entry(a, struct kvtier_region, lru_node)->last_use),
			  READ_ONCE(list_entry(b, struct kvtier_region, lru_node)->last_use));
}

/*
 * Order every user's LRU by last_use, once an attach has linked the
 * regions of the checkpoint and the journal in their records' order.
 */
void kvtier_users_lru_sort(struct kvtier_tier *tier)
{
	struct kvtier_user *u;
	unsigned long index;

	spin_lock(&tier->regions_lock);
	xa_for_each(&tier->users, index, u)
		list_sort(NULL, &u->lru, kvtier_lru_cmp);
	spin_unlock(&tier->regions_lock);
}

/* Can capacity reclaim take @r, a region on an LRU? */
static bool kvtier_lru_takes(struct kvtier_region *r)
{
	return !READ_ONCE(r->pinned) && refcount_read(&r->users) == 1 &&
	       refcount_read(&r->ref) == 1;
}

static struct kvtier_region *kvtier_lru_first(struct kvtier_user *u)
{
	struct kvtier_region *r;

	list_for_each_entry(r, &u->lru, lru_node)
		if (kvtier_lru_takes(r))
			return r;
	return NULL;
}

/*
 * The region capacity reclaim takes next: the least recently used one of
 * @owner's that nobody uses (its name is its only user), that nobody holds
 * a reference to (no evictor, write-back or prefetch is working on it:
 * destroying it would wait for them, and they may be waiting for us) and
 * that is not pinned; if @owner has none, the least recently used such
 * region of anyone's. NULL if there is none. The walks pass over only
 * regions that files hold or that are pinned, not every region. Caller
 * holds regions_lock.
 */
struct kvtier_region *kvtier_user_lru_victim(struct kvtier_tier *tier,
					     kuid_t owner)
{
	struct kvtier_region *r, *victim = NULL;
	struct kvtier_user *u = kvtier_user_find(tier, owner);
	unsigned long index;

	if (u) {
		victim = kvtier_lru_first(u);
		if (victim)
			return victim;
	}
	xa_for_each(&tier->users, index, u) {
		r = kvtier_lru_first(u);
		if (r && (!victim || time_before(READ_ONCE(r->last_use),
						 READ_ONCE(victim->last_use))))
			victim = r;
	}
	return victim;
}

/*
 * Charge @nr pins to @uid: EDQUOT beyond user_pin_mb unless
 * CAP_SYS_RESOURCE, ENOMEM. capable() is asked only when it matters: it
 * audits every refusal, and may not run under the spinlock.
 */
int kvtier_user_charge_pins(struct kvtier_tier *tier, kuid_t uid,
			    unsigned long nr)
{
	unsigned long limit = kvtier_mb_pages(READ_ONCE(tier->knobs.user_pin_mb));
	struct kvtier_user *u;
	bool over;
	int ret;

	ret = kvtier_user_prepare(tier, uid);
	if (ret)
		return ret;
	spin_lock(&tier->regions_lock);
	u = kvtier_user_find(tier, uid);
	over = limit && u->pins + nr > limit;
	if (!over)
		u->pins += nr;
	spin_unlock(&tier->regions_lock);
	if (!over)
		return 0;
	if (!capable(CAP_SYS_RESOURCE))
		return -EDQUOT;
	spin_lock(&tier->regions_lock);
	u->pins += nr;
	spin_unlock(&tier->regions_lock);
	return 0;
}

void kvtier_user_uncharge_pins(struct kvtier_tier *tier, kuid_t uid,
			       unsigned long nr)
{
	struct kvtier_user *u;

	if (!nr)
		return;
	spin_lock(&tier->regions_lock);
	u = kvtier_user_find(tier, uid);
	if (!WARN_ON_ONCE(!u || u->pins < nr))
		u->pins -= nr;
	spin_unlock(&tier->regions_lock);
}

/* The tier is being freed: every region and pin is gone. */
void kvtier_users_destroy(struct kvtier_tier *tier)
{
	struct kvtier_user *u;
	unsigned long index;

	xa_for_each(&tier->users, index, u) {
		WARN_ON_ONCE(u->regions || u->pages || u->pins ||
			     !list_empty(&u->lru));
		kfree(u);
	}
	xa_destroy(&tier->users);
}
