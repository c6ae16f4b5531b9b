// SPDX-License-Identifier: GPL-2.0
/*
 * The host page pool of a tier: the budget every resident or in-flight page
 * is charged to, allocating and freeing pages, the LRU eviction picks from,
 * the background worker that keeps the pool between the watermarks, and
 * the shrinker that gives memory back to the kernel.
 *
 * Eviction of a page (kvtier_evict_page): with the page locked, unmap it
 * from every mapping of its region (unmap_mapping_range on the region's
 * address_space), then, if nobody else holds a reference (a GUP pin, a
 * concurrent lookup), replace its xarray entry by its slot number (or
 * nothing, if it never reached the namespace and so reads as zero) and
 * free it. A dirty page is written back first (writeback.c). Reclaim and
 * DONTNEED evict clean pages in batches (struct kvtier_drops), unmapped
 * together: one TLB flush per run of pages, not per page.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "kvtier.h"
#include "kvtier_trace.h"

/* Pages the shrinker never takes, so a busy tier keeps a working set. */
#define KVTIER_SHRINK_FLOOR_DIV	8

static bool kvtier_pool_above(struct kvtier_tier *tier, unsigned int pct)
{
	return READ_ONCE(tier->pool.nr_pages) * 100 >
		kvtier_budget_pages(tier) * pct;
}

/*
 * Above watermark_high the reclaim worker writes back what it evicts, and
 * background write-back stands aside (writeback.c).
 */
bool kvtier_pool_reclaiming(struct kvtier_tier *tier)
{
	return kvtier_pool_above(tier, READ_ONCE(tier->knobs.watermark_high));
}

/*
 * Queue background write-back if the dirty pages are over their share. A
 * run pending already, at once or after a pause (writeback.c), is left as
 * it is: the pause is what keeps a worker that cannot reach its goal from
 * running once per page charged.
 */
static void kvtier_pool_kick_dirty(struct kvtier_tier *tier)
{
	if (kvtier_dirty_excess(tier, 1) > 0 &&
	    !delayed_work_pending(&tier->pool.clean_work) &&
	    !kvtier_pool_reclaiming(tier) && !READ_ONCE(tier->store.closing) &&
	    !kvtier_fenced(tier))
		queue_delayed_work(kvtier_wq, &tier->pool.clean_work, 0);
}

/*
 * Queue background reclaim if the pool is above watermark_high, and
 * background write-back if too much of it is dirty.
 */
void kvtier_pool_kick(struct kvtier_tier *tier)
{
	if (kvtier_pool_reclaiming(tier))
		queue_work(kvtier_wq, &tier->pool.reclaim_work);
	else
		kvtier_pool_kick_dirty(tier);
}

/* Charge one page to the budget without waiting. */
static bool kvtier_pool_try_charge(struct kvtier_tier *tier)
{
	struct kvtier_pool *pool = &tier->pool;
	bool ok;

	spin_lock(&pool->lock);
	ok = pool->nr_pages < kvtier_budget_pages(tier);
	if (ok)
		pool->nr_pages++;
	spin_unlock(&pool->lock);
	if (ok)
		kvtier_pool_kick(tier);
	return ok;
}

/*
 * Pages a budget stall frees per round: a whole write-back batch, so the
 * stall writes one large bio instead of many small ones and makes room for
 * the next faults too; but at most an eighth of the budget. In a pool not
 * much larger than a batch, a stall freeing a batch emptied the pool,
 * readahead the reader had not reached yet included, which it then read
 * again (kvtier_inspect_test refaults_stop_when_budget_fits: 1 MiB pool,
 * 1 MiB batch).
 */
static unsigned long kvtier_stall_batch(struct kvtier_tier *tier)
{
	unsigned long batch = max(32U, kvtier_writeback_batch(tier));

	return clamp(batch, 1UL, kvtier_budget_pages(tier) / 8);
}

/*
 * Charge one page to the budget. With @may_wait, a full pool is reclaimed
 * synchronously (a budget stall): clean pages are dropped, dirty ones
 * written back. When nothing can be reclaimed because every page is locked
 * for I/O, the charge waits for that I/O, as long as it takes: it ends in
 * a completion or an error within the block layer's own timeouts (on NVMe
 * over Fabrics, up to ctrl_loss_tmo while the path reconnects), and a
 * fatal signal ends the wait. Only when no tier I/O is in flight (every
 * page pinned, or locked by other tasks that are not doing I/O) does it
 * give up, after about 2 s. Errors: -ENOBUFS (the budget is full and
 * !@may_wait, or nothing was evictable; not -ENOMEM, which is kept for an
 * allocation that failed: a fault answers the two differently), -ENOSPC
 * (only dirty pages, and no namespace space to write them to), -EINTR
 * (fatal signal while waiting).
 */
int kvtier_pool_charge(struct kvtier_tier *tier, bool may_wait)
{
	unsigned int idle = 0, ticket;
	u64 stalled = 0;
	long freed;
	int ret;

	while (!kvtier_pool_try_charge(tier)) {
		if (!may_wait)
			return -ENOBUFS;
		if (!stalled) {
			kvtier_count(tier, KVT_STAT_BUDGET_STALL, 1);
			stalled = ktime_get_ns();
		}
		ret = -EINTR;
		if (fatal_signal_pending(current))
			goto out;
		ticket = kvtier_store_room_ticket(tier);
		freed = kvtier_reclaim(tier, kvtier_stall_batch(tier), true);
		if (freed > 0) {
			idle = 0;
			continue;
		}
		/*
		 * Only dirty pages, and the namespace is full: the store makes
		 * room on its own work (no page lock of ours is held there);
		 * wait for it as for I/O, and try again if it made some.
		 */
		if (freed == -ENOSPC) {
			int err = kvtier_store_wait_room(tier, ticket);

			if (!err)
				continue;
			if (err == -ENOSPC) {
				kvtier_count(tier, KVT_STAT_NOSPACE, 1);
				ret = -ENOSPC;
				goto out;
			}
			/* A commit failed: nothing reclaimed; as below. */
		}
		/*
		 * Everything is locked or pinned. Tier I/O in flight will
		 * unlock pages when it completes or fails: wait for it however
		 * long it takes. Without any, count towards giving up.
		 */
		ret = -ENOBUFS;
		if (atomic_long_read(&tier->inflight_bytes))
			idle = 0;
		else if (++idle > 100)
			goto out;
		ret = -EINTR;
		if (wait_event_killable_timeout(tier->pool.wait,
						tier->pool.nr_pages <
						kvtier_budget_pages(tier),
						HZ / 50) < 0)
			goto out;
	}
	ret = 0;
out:
	if (stalled)
		trace_kvtier_budget_stall(tier->id, ktime_get_ns() - stalled, ret);
	return ret;
}

/*
 * Wake the stalled charges, if any. Evictions call this for every page and
 * most find nobody waiting: wq_has_sleeper() spares them the queue's lock.
 * Its barrier orders the change waited for (nr_pages) before the look at
 * the queue, so a charge that has just queued itself either sees the
 * change or is woken, as with an unconditional wake-up.
 */
void kvtier_pool_wake(struct kvtier_pool *pool)
{
	if (wq_has_sleeper(&pool->wait))
		wake_up_all(&pool->wait);
}

void kvtier_pool_uncharge(struct kvtier_tier *tier, unsigned long nr)
{
	struct kvtier_pool *pool = &tier->pool;

	spin_lock(&pool->lock);
	WARN_ON_ONCE(pool->nr_pages < nr);
	pool->nr_pages -= nr;
	spin_unlock(&pool->lock);
	kvtier_pool_wake(pool);
}

/* Put a newly resident page at the head of the LRU. */
void kvtier_pool_add(struct kvtier_tier *tier, struct kvtier_page *kp)
{
	struct kvtier_pool *pool = &tier->pool;

	spin_lock(&pool->lock);
	list_add(&kp->lru, &pool->lru);
	kvt_pg_set(kp, KVT_PG_LRU);
	spin_unlock(&pool->lock);
	atomic_long_inc(&kp->region->nr_resident);
}

/* Take a page off the LRU and uncharge it; the caller frees it. */
void kvtier_pool_del(struct kvtier_tier *tier, struct kvtier_page *kp)
{
	struct kvtier_pool *pool = &tier->pool;

	spin_lock(&pool->lock);
	if (kvt_pg_test_and_clear(kp, KVT_PG_LRU))
		list_del_init(&kp->lru);
	WARN_ON_ONCE(!pool->nr_pages);
	pool->nr_pages--;
	spin_unlock(&pool->lock);
	if (!atomic_long_dec_return(&kp->region->nr_resident) &&
	    kp->region->persistent)
		kvtier_pagemap_kick(tier);
	if (kvt_pg_test_and_clear(kp, KVT_PG_DIRTY)) {
		atomic_long_dec(&pool->nr_dirty);
		atomic_long_dec(&kp->region->nr_dirty);
	}
	kvtier_pool_wake(pool);
}

/* Caller holds the page lock. */
void kvtier_pool_mark_dirty(struct kvtier_tier *tier, struct kvtier_page *kp)
{
	if (!kvt_pg_test_and_set(kp, KVT_PG_DIRTY)) {
		atomic_long_inc(&tier->pool.nr_dirty);
		if (atomic_long_inc_return(&kp->region->nr_dirty) == 1)
			kvtier_region_dirtied(kp->region);
		kvtier_pool_kick_dirty(tier);
	}
}

/*
 * Spare pages: pages eviction freed, kept (uncharged) for the next page
 * the pool allocates. Debian's kernels zero every page the allocator
 * hands out (init_on_alloc), and a page about to be filled by a read from
 * the namespace does not need it: with a full pool each read-in evicts one
 * page and allocates one, and reusing the evicted page saves a 4 KiB clear
 * per page read. At most kvtier_spare_max() pages, outside the budget:
 * 1/8 of it (background reclaim frees 15 % of it at a time, and a
 * smaller stock is full before a pass ends), at most KVTIER_SPARE_MAX
 * (4 MiB). The shrinker frees them before any resident page; detach and
 * module unload free them all. A spare holds the last bytes it held: it
 * is only handed out to be filled whole (a read that fails leaves the
 * page failed, never mapped or copied) or zeroed (kvtier_page_zero()).
 */
#define KVTIER_SPARE_MAX	1024UL

static unsigned long kvtier_spare_max(struct kvtier_tier *tier)
{
	return min(kvtier_budget_pages(tier) / 8, KVTIER_SPARE_MAX);
}

/*
 * Keep @page, just taken off the pool, as a spare or drop the caller's
 * reference. Only a page nobody else holds is kept: an LRU scan takes its
 * reference under pool->lock while the page is on the LRU, so after
 * kvtier_pool_del() a count of 1 stays 1. Nor while the shrinker asks
 * for memory (for a second after it last did): spares kept then would be
 * memory it was told was freed.
 */
static void kvtier_spare_put(struct kvtier_tier *tier, struct page *page)
{
	struct kvtier_pool *pool = &tier->pool;

	if (page_ref_count(page) != 1 ||
	    time_before(jiffies, READ_ONCE(pool->no_spares_until))) {
		put_page(page);
		return;
	}
	spin_lock(&pool->spare_lock);
	if (pool->nr_spare < kvtier_spare_max(tier)) {
		list_add(&page->lru, &pool->spare);
		WRITE_ONCE(pool->nr_spare, pool->nr_spare + 1);
		page = NULL;
	}
	spin_unlock(&pool->spare_lock);
	if (page)
		put_page(page);
}

static struct page *kvtier_spare_get(struct kvtier_pool *pool)
{
	struct page *page;

	if (!READ_ONCE(pool->nr_spare))
		return NULL;
	spin_lock(&pool->spare_lock);
	page = list_first_entry_or_null(&pool->spare, struct page, lru);
	if (page) {
		list_del(&page->lru);
		WRITE_ONCE(pool->nr_spare, pool->nr_spare - 1);
	}
	spin_unlock(&pool->spare_lock);
	return page;
}

/* Free up to @nr spare pages; returns how many were freed. */
unsigned long kvtier_spare_free(struct kvtier_tier *tier, unsigned long nr)
{
	struct kvtier_pool *pool = &tier->pool;
	struct page *page, *next;
	unsigned long freed = 0;
	LIST_HEAD(list);

	spin_lock(&pool->spare_lock);
	while (freed < nr && !list_empty(&pool->spare)) {
		list_move(pool->spare.next, &list);
		WRITE_ONCE(pool->nr_spare, pool->nr_spare - 1);
		freed++;
	}
	spin_unlock(&pool->spare_lock);
	list_for_each_entry_safe(page, next, &list, lru) {
		list_del(&page->lru);
		put_page(page);
	}
	return freed;
}

/* Make a new page (kvtier_page_new()) read as zero. */
void kvtier_page_zero(struct kvtier_page *kp)
{
	if (!kvt_pg_test_and_clear(kp, KVT_PG_ZEROED))
		clear_highpage(kp->page);
}

/* A new resident page for @index, locked, charged to the budget. */
struct kvtier_page *kvtier_page_new(struct kvtier_region *region,
				    pgoff_t index, bool may_wait)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page *kp;
	int ret;

	ret = kvtier_pool_charge(tier, may_wait);
	if (ret)
		return ERR_PTR(ret);
	/* Zeroed: a field added later (pins, crc) starts at 0, not garbage. */
	kp = kvtier_should_fail(KVT_FAIL_PAGE_ALLOC) ? NULL :
		kmem_cache_zalloc(kvtier_page_cache, GFP_KERNEL);
	if (!kp)
		goto err_uncharge;
	kp->page = kvtier_spare_get(&tier->pool);
	if (kp->page) {
		kvtier_count(tier, KVT_STAT_PAGE_REUSED, 1);
	} else {
		kp->page = alloc_page(GFP_HIGHUSER | __GFP_NOWARN);
		if (!kp->page)
			goto err_free;
		if (want_init_on_alloc(GFP_HIGHUSER))
			kvt_pg_set(kp, KVT_PG_ZEROED);
	}
	kp->region = region;
	kp->index = index;
	kp->slot = KVTIER_NO_SLOT;
	kp->wb_slot = KVTIER_NO_SLOT;
	INIT_LIST_HEAD(&kp->lru);
	if (WARN_ON_ONCE(!trylock_page(kp->page)))
		goto err_page;
	return kp;

err_page:
	__free_page(kp->page);
err_free:
	kvtier_page_free(kp);
err_uncharge:
	kvtier_pool_uncharge(tier, 1);
	return ERR_PTR(-ENOMEM);
}

void kvtier_page_free(struct kvtier_page *kp)
{
	kmem_cache_free(kvtier_page_cache, kp);
}

static void kvtier_unmap_page(struct kvtier_page *kp)
{
	unmap_mapping_range(kp->region->inode->i_mapping,
			    (loff_t)kp->index << PAGE_SHIFT, PAGE_SIZE, 1);
}

static int kvtier_page_cmp(const void *a, const void *b)
{
	const struct kvtier_page *x = *(struct kvtier_page * const *)a;
	const struct kvtier_page *y = *(struct kvtier_page * const *)b;

	if (x->region != y->region)
		return x->region < y->region ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return 0;
}

/* Order @kps by region, then index. */
void kvtier_pages_sort(struct kvtier_page **kps, unsigned int nr)
{
	sort(kps, nr, sizeof(*kps), kvtier_page_cmp, NULL);
}

/*
 * Unmap the pages of @kps (sorted by kvtier_pages_sort(), each locked by
 * the caller) from every mapping of their regions: one unmap_mapping_range()
 * per run of consecutive indexes of a region, so one TLB flush per run,
 * not per page.
 */
void kvtier_unmap_runs(struct kvtier_page **kps, unsigned int nr)
{
	unsigned int i, j;

	for (i = 0; i < nr; i = j) {
		for (j = i + 1; j < nr && kps[j]->region == kps[i]->region &&
		     kps[j]->index == kps[j - 1]->index + 1; j++)
			;
		unmap_mapping_range(kps[i]->region->inode->i_mapping,
				    (loff_t)kps[i]->index << PAGE_SHIFT,
				    (loff_t)(j - i) << PAGE_SHIFT, 1);
	}
}

/*
 * Evict a clean page. The caller holds the page lock and one extra page
 * reference, and a region reference; the lock and the extra reference are
 * consumed. Returns 0 if the page was freed, -EAGAIN if it is dirty, -EBUSY
 * if it is pinned (KVTIER_IOC_PIN) or someone else holds a reference (a GUP
 * pin, a lookup). With @unmapped the caller has unmapped the page since it
 * took the lock (a write-back did, or kvtier_drops_flush()): nothing can
 * have mapped it again, since every mapping of a page is made with its
 * lock held.
 */
int kvtier_evict_page(struct kvtier_page *kp, bool unmapped)
{
	struct kvtier_region *region = kp->region;
	struct kvtier_tier *tier = region->tier;
	struct page *page = kp->page;
	int ret = 0;

	if (kvt_pg_test(kp, KVT_PG_PINNED)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	if (!unmapped)
		kvtier_unmap_page(kp);
	if (kvt_pg_test(kp, KVT_PG_DIRTY)) {
		ret = -EAGAIN;
		goto out_unlock;
	}

	xa_lock(&region->pages);
	/* The pool's reference and ours: no mapping, pin or lookup remains. */
	if (page_count(page) != 2 || xa_load(&region->pages, kp->index) != kp) {
		xa_unlock(&region->pages);
		ret = -EBUSY;
		goto out_unlock;
	}
	if (kp->slot != KVTIER_NO_SLOT) {
		__xa_store(&region->pages, kp->index,
			   kvt_mk_shadow(kp->slot,
					 atomic_long_inc_return(&tier->evict_clock)), 0);
		kvtier_mapext_make_locked(region, kp->index);
	} else {
		__xa_erase(&region->pages, kp->index);
	}
	xa_unlock(&region->pages);

	trace_kvtier_evict(tier->id, region->id,
			   (u64)kp->index << PAGE_SHIFT, false);
	kvtier_pool_del(tier, kp);
	unlock_page(page);
	put_page(page);			/* ours */
	kvtier_spare_put(tier, page);	/* the pool's: kept or freed */
	kvtier_page_free(kp);
	return 0;

out_unlock:
	unlock_page(page);
	put_page(page);
	return ret;
}

/*
 * Evict the pages of @d: unmapped together (kvtier_unmap_runs(), after
 * every one was locked, so none can be mapped again before its eviction),
 * then each as kvtier_evict_page() would. Counted in @d->freed and
 * @d->busy. Pages of one tier.
 */
void kvtier_drops_flush(struct kvtier_drops *d)
{
	struct kvtier_tier *tier;
	unsigned int i, freed = 0;

	if (!d->nr)
		return;
	tier = d->kps[0]->region->tier;
	kvtier_pages_sort(d->kps, d->nr);
	kvtier_unmap_runs(d->kps, d->nr);
	for (i = 0; i < d->nr; i++) {
		struct kvtier_region *region = d->kps[i]->region;
		int err = kvtier_evict_page(d->kps[i], true);

		if (!err)
			freed++;
		else if (err == -EBUSY)
			d->busy++;
		if (d->region_refs)
			kvtier_region_put(region);
	}
	if (freed)
		kvtier_count(tier, KVT_STAT_EVICT_CLEAN, freed);
	d->freed += freed;
	d->nr = 0;
}

/* Add a clean page to @d (see struct kvtier_drops); flushes a full @d. */
void kvtier_drops_add(struct kvtier_drops *d, struct kvtier_page *kp)
{
	d->kps[d->nr++] = kp;
	if (d->nr == KVTIER_DROP_BATCH)
		kvtier_drops_flush(d);
}

/*
 * Take the coldest page off the LRU tail, with a page reference and a
 * region reference, locked. Pages used since the hand last passed get a
 * second chance. Returns NULL when the scan budget @scan runs out.
 */
static struct kvtier_page *kvtier_lru_isolate(struct kvtier_tier *tier,
					      unsigned long *scan)
{
	struct kvtier_pool *pool = &tier->pool;
	struct kvtier_region *region;
	struct kvtier_page *kp;
	struct page *page;
	pgoff_t index;

	while (*scan) {
		(*scan)--;
		spin_lock(&pool->lock);
		if (list_empty(&pool->lru)) {
			spin_unlock(&pool->lock);
			return NULL;
		}
		kp = list_last_entry(&pool->lru, struct kvtier_page, lru);
		list_move(&kp->lru, &pool->lru);
		if (kvt_pg_test(kp, KVT_PG_PINNED) ||
		    kvt_pg_test_and_clear(kp, KVT_PG_REFERENCED)) {
			spin_unlock(&pool->lock);
			continue;
		}
		page = kp->page;
		/*
		 * Locked or KVT_PG_WRITEBACK: being written back, read or
		 * used. A reference taken now would only be dropped again,
		 * and write-back counts references to tell GUP's
		 * (writeback.c).
		 */
		if (kvt_pg_writeback(kp)) {
			spin_unlock(&pool->lock);
			kvtier_count(tier, KVT_STAT_RECLAIM_WB_SKIPS, 1);
			continue;
		}
		if (PageLocked(page)) {
			spin_unlock(&pool->lock);
			continue;
		}
		region = kp->region;
		if (!kvtier_region_tryget(region)) {
			spin_unlock(&pool->lock);
			continue;
		}
		index = kp->index;
		get_page(page);
		spin_unlock(&pool->lock);

		/*
		 * kp may be freed once unlocked: compare before using it. A
		 * write-back that let go of the lock keeps the page: it is
		 * neither evicted nor written again meanwhile.
		 */
		if (trylock_page(page)) {
			if (kvtier_page_is_at(region, index, kp, page) &&
			    !kvt_pg_writeback(kp))
				return kp;
			unlock_page(page);
		}
		put_page(page);
		kvtier_region_put(region);
	}
	return NULL;
}

/* Release what kvtier_lru_isolate() took, for a page that stays. */
static void kvtier_lru_putback(struct kvtier_page *kp)
{
	struct kvtier_region *region = kp->region;

	unlock_page(kp->page);
	put_page(kp->page);
	kvtier_region_put(region);
}

/*
 * Finish a batch of isolated dirty pages kvtier_writeback_start() started:
 * evict those that came out clean, put the others back. Returns the pages
 * freed; the first error goes to *@err.
 */
static long kvtier_reclaim_end(struct kvtier_wb *wb, int *err)
{
	struct kvtier_tier *tier = wb->tier;
	unsigned int i;
	long freed = 0;
	int ret;

	ret = kvtier_writeback_finish(wb);
	if (ret && !*err)
		*err = ret;
	for (i = 0; i < wb->nr; i++) {
		struct kvtier_page *kp = wb->kps[i];
		struct kvtier_region *region = kp->region;

		if (kvt_pg_test(kp, KVT_PG_DIRTY)) {
			kvtier_lru_putback(kp);
			continue;
		}
		/* Written back with the lock held: unmapped still. */
		if (!kvtier_evict_page(kp, true)) {
			kvtier_count(tier, KVT_STAT_EVICT_DIRTY, 1);
			freed++;
		}
		kvtier_region_put(region);
	}
	return freed;
}

/*
 * Free up to @nr pages from the cold end of the LRU: clean pages are
 * dropped (KVTIER_DROP_BATCH at a time, unmapped together); with
 * @writeback, dirty ones are written back in batches of
 * writeback_batch_kb and then dropped, two batches in flight (the next is
 * collected and started before the one before is finished, so the device
 * is not idle in between; the pair is allocated, off the stack, which a
 * budget stall reaches deep in a fault). Returns pages freed, or -ENOSPC /
 * -EIO if none could be freed because write-back failed so.
 */
long kvtier_reclaim(struct kvtier_tier *tier, unsigned long nr, bool writeback)
{
	unsigned long scan = 2 * READ_ONCE(tier->pool.nr_pages) + 16;
	struct kvtier_drops drops = { .region_refs = true };
	struct kvtier_wb_pair *p = NULL;
	struct kvtier_page *kp;
	struct kvtier_wb *done;
	unsigned int nb = 0;
	long freed = 0;
	int err = 0;

	/* Without a pair, dirty pages are skipped (put back on the LRU). */
	if (writeback)
		p = kvtier_wb_pair_alloc(kvtier_writeback_batch(tier), GFP_NOIO);
	/* The pages in flight or to drop count as freed: they will be. */
	while (freed + drops.freed + drops.nr +
	       (p ? kvtier_wb_pair_inflight(p) : 0) < nr &&
	       (kp = kvtier_lru_isolate(tier, &scan))) {
		cond_resched();
		/* Written: free its pages now, not after the next batch. */
		done = p ? kvtier_wb_pair_written(p) : NULL;
		if (done)
			freed += kvtier_reclaim_end(done, &err);
		/*
		 * Isolation saw it unpinned before taking its lock: a pin may
		 * have come in between. A pinned page is never unmapped.
		 */
		if (kvt_pg_test(kp, KVT_PG_PINNED)) {
			kvtier_lru_putback(kp);
			continue;
		}
		if (!kvt_pg_test(kp, KVT_PG_DIRTY)) {
			kvtier_drops_add(&drops, kp);
			continue;
		}
		if (!p) {
			kvtier_lru_putback(kp);
			continue;
		}
		p->batch[p->cur][nb++] = kp;
		/* Enough dirty pages to free what was asked: write them. */
		if (nb == p->batch_max ||
		    freed + drops.freed + drops.nr +
		    kvtier_wb_pair_inflight(p) + nb >= nr) {
			/* The clean ones go first, not after the bios. */
			kvtier_drops_flush(&drops);
			done = kvtier_wb_pair_start(p, tier, nb);
			if (done)
				freed += kvtier_reclaim_end(done, &err);
			nb = 0;
		}
	}
	kvtier_drops_flush(&drops);
	freed += drops.freed;
	if (nb) {
		done = kvtier_wb_pair_start(p, tier, nb);
		if (done)
			freed += kvtier_reclaim_end(done, &err);
	}
	done = p ? kvtier_wb_pair_behind(p) : NULL;
	if (done)
		freed += kvtier_reclaim_end(done, &err);
	kfree(p);
	return freed ? freed : (err ? err : 0);
}

/*
 * Background: evict down to watermark_low, or to what the shrinker asked
 * for, writing dirty pages back on the way.
 */
static void kvtier_reclaim_work(struct work_struct *work)
{
	struct kvtier_tier *tier = container_of(work, struct kvtier_tier,
						pool.reclaim_work);
	unsigned long target, nr;
	long freed;

	do {
		target = kvtier_budget_pages(tier) *
			READ_ONCE(tier->knobs.watermark_low) / 100;
		target = min(target, READ_ONCE(tier->pool.shrink_to));
		nr = READ_ONCE(tier->pool.nr_pages);
		if (nr <= target)
			break;
		freed = kvtier_reclaim(tier, min(nr - target, 1024UL), true);
		cond_resched();
	} while (freed > 0);
	WRITE_ONCE(tier->pool.shrink_to, ULONG_MAX);
	/* Background write-back stood aside while the pool was this full. */
	kvtier_pool_kick_dirty(tier);
}

static unsigned long kvtier_shrink_count(struct shrinker *s,
					 struct shrink_control *sc)
{
	struct kvtier_tier *tier = kvtier_shrinker_priv(s);
	unsigned long floor = kvtier_budget_pages(tier) / KVTIER_SHRINK_FLOOR_DIV;
	unsigned long nr = READ_ONCE(tier->pool.nr_pages);

	return (nr > floor ? nr - floor : 0) + READ_ONCE(tier->pool.nr_spare);
}

/*
 * Under global memory pressure drop clean pages synchronously; dirty ones
 * are written back by the worker. Unmapping takes i_mmap_rwsem, so only
 * reclaim contexts that may enter filesystems (__GFP_FS) come in.
 */
static unsigned long kvtier_shrink_scan(struct shrinker *s,
					struct shrink_control *sc)
{
	struct kvtier_tier *tier = kvtier_shrinker_priv(s);
	unsigned long nr = min(sc->nr_to_scan, kvtier_shrink_count(s, sc));
	unsigned long spares;
	long freed;

	/* Spares first: free pages, any context may have them back. */
	WRITE_ONCE(tier->pool.no_spares_until, jiffies + HZ);
	spares = kvtier_spare_free(tier, nr);
	nr -= spares;
	if (!nr || !(sc->gfp_mask & __GFP_FS)) {
		if (spares)
			kvtier_count(tier, KVT_STAT_SHRINK_FREE, spares);
		return spares ? spares : SHRINK_STOP;
	}
	kvtier_count(tier, KVT_STAT_SHRINK_SCAN, 1);
	freed = kvtier_reclaim(tier, nr, false);
	if (freed < 0)
		freed = 0;
	if (freed < nr) {
		/*
		 * The rest is dirty, and writing it back here could wait on
		 * the very memory being reclaimed: the worker writes back
		 * and drops down to the floor.
		 */
		WRITE_ONCE(tier->pool.shrink_to,
			   kvtier_budget_pages(tier) / KVTIER_SHRINK_FLOOR_DIV);
		queue_work(kvtier_wq, &tier->pool.reclaim_work);
	}
	freed += spares;
	if (!freed)
		return SHRINK_STOP;
	kvtier_count(tier, KVT_STAT_SHRINK_FREE, freed);
	return freed;
}

int kvtier_pool_init(struct kvtier_tier *tier)
{
	struct kvtier_pool *pool = &tier->pool;

	spin_lock_init(&pool->lock);
	INIT_LIST_HEAD(&pool->lru);
	init_waitqueue_head(&pool->wait);
	INIT_WORK(&pool->reclaim_work, kvtier_reclaim_work);
	INIT_DELAYED_WORK(&pool->clean_work, kvtier_writeback_background);
	pool->shrink_to = ULONG_MAX;
	spin_lock_init(&pool->spare_lock);
	INIT_LIST_HEAD(&pool->spare);
	pool->no_spares_until = jiffies;
	pool->shrinker = kvtier_shrinker_create(kvtier_shrink_count,
						kvtier_shrink_scan, tier,
						dev_name(&tier->dev));
	if (IS_ERR(pool->shrinker))
		return PTR_ERR(pool->shrinker);
	return 0;
}

void kvtier_pool_exit(struct kvtier_tier *tier)
{
	kvtier_shrinker_destroy(tier->pool.shrinker);
	cancel_work_sync(&tier->pool.reclaim_work);
	cancel_delayed_work_sync(&tier->pool.clean_work);
	kvtier_spare_free(tier, ULONG_MAX);
	WARN_ON_ONCE(tier->pool.nr_pages || !list_empty(&tier->pool.lru));
}
