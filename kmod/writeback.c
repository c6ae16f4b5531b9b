// SPDX-License-Identifier: GPL-2.0
/*
 * Write-back: where dirty pages go to the namespace.
 *
 * kvtier_writeback_start() starts a batch of locked pages: it sorts them,
 * write-protects them by unmapping, reserves room for their CRCs, gives
 * each a slot (its own, or a fresh one: copy-on-write for persistent
 * regions, one run of slots per run of indexes), computes the CRCs and
 * submits the bios (io.c); kvtier_writeback_finish() waits for them and
 * records each written page's new slot and CRC. Reclaim (pool.c) and the
 * range pass keep two batches in flight that way (struct kvtier_wb_pair,
 * at the end of this file).
 *
 * Reclaim, DONTNEED, seal and detach drop the pages they wrote (or need
 * them to stay as written), so they hold the pages locked until then. The
 * range pass of fsync (and of an O_DSYNC write) and background write-back
 * leave them resident: they let go of each page's lock once its bio is
 * submitted and mark it KVT_PG_WRITEBACK until the batch is finished.
 * Meanwhile readers and faults use the page (mapped read-only: write-back
 * unmapped it); writers (page_mkwrite, pwrite) wait for the mark under the
 * page lock (kvtier_page_wait_writeback()), since the bytes and the CRC on
 * their way to the namespace must not change; eviction, reclaim and other
 * write-backs pass the page over, or, for a range pass that must see it
 * written, wait for it. Waiters may hold page locks (a writer its page's, a
 * range pass the batch it collects), so the rule that keeps this free of
 * cycles is on the holder's side: a task holding marks never sleeps on a
 * page lock or on another mark (the range pass finishes its batch in
 * flight first; background write-back only tries locks), and finishing a
 * batch takes no page lock.
 *
 * The range pass (kvtier_region_writeback) walks a region's resident
 * pages for fsync, DONTNEED (which also drops what came out clean,
 * through pool.c's eviction) and detach, with two batches in flight.
 * Background write-back (kvtier_writeback_background) is one range pass
 * at a time over the least recently used dirty region, started when the
 * dirty pages pass dirty_background_pct of the budget.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>

#include "kvtier.h"

/**
 * struct kvtier_range - what a range pass does, and what it found
 * @evict: drop the pages that are (or came out) clean (DONTNEED)
 * @background: background write-back: only pages kvtier_cleanable() that
 *              no other task holds locked; stops when reclaim starts
 * @skips: pass over pages other tasks hold locked or write back
 *         (KVT_PG_WRITEBACK), noting them
 * @nr_skipped: pages passed over for their lock or mark
 * @skip_first: the first of them
 * @skip_last: the last of them
 * @quota: dirty pages it may still take (background write-back); a pass
 *         ends when it reaches 0
 * @busy: pages not dropped for a transient reference (an LRU scan, a
 *        lookup); they are tried again
 * @drops: clean pages to drop (@evict), unmapped together; flushed before
 *         the pass waits for another task's page lock or mark, and at its end
 * @cleaned: pages written back and clean now
 * @next: the index after the last dirty page taken
 * @ret: the first error
 */
struct kvtier_range {
	bool evict;
	bool background;
	bool skips;
	unsigned long quota;
	unsigned int nr_skipped;
	pgoff_t skip_first, skip_last;
	unsigned int busy;
	struct kvtier_drops drops;
	unsigned long cleaned;
	pgoff_t next;
	int ret;
};

/*
 * Evict a page DONTNEED wrote back and unmapped, holding its lock since.
 * Pinned pages stay.
 */
static void kvtier_drop_written(struct kvtier_tier *tier,
				struct kvtier_page *kp, struct kvtier_range *rg)
{
	bool pinned = kvt_pg_test(kp, KVT_PG_PINNED);
	int err = kvtier_evict_page(kp, true);

	if (!err)
		kvtier_count(tier, KVT_STAT_EVICT_DIRTY, 1);
	else if (err == -EBUSY && !pinned)
		rg->busy++;
}

/*
 * Finish a batch of a region's dirty pages that kvtier_writeback_start()
 * started; with @rg->evict, drop those that came out clean. Releases every
 * page's lock and reference. When a batch larger than writeback_batch_kb
 * ran out of memory (its arrays, a CRC chunk, a bio), the pages still
 * dirty are written again in batches of that size (those written already
 * are clean and not again). The first error goes to @rg->ret.
 */
static void kvtier_region_batch_end(struct kvtier_wb *wb,
				    struct kvtier_range *rg)
{
	struct kvtier_tier *tier = wb->tier;
	struct kvtier_page **batch = wb->kps;
	unsigned int all = wb->nr, small = kvtier_writeback_batch(tier);
	unsigned int i, n, nb, nd = 0;
	int ret, err;

	ret = kvtier_writeback_finish(wb);
	/* Those it let go of at submission are done with: the rest. */
	nb = wb->nr;
	rg->cleaned += wb->cleaned;
	if (ret == -ENOMEM && all > small && nb) {
		/* The dirty ones to the front (the order of @batch is free). */
		for (i = 0; i < nb; i++) {
			if (kvt_pg_test(batch[i], KVT_PG_DIRTY))
				swap(batch[i], batch[nd++]);
		}
		ret = 0;
		for (i = 0; i < nd; i += n) {
			struct kvtier_wb retry;

			n = min(small, nd - i);
			kvtier_writeback_start(&retry, tier, batch + i, n,
					       !rg->background, false);
			err = kvtier_writeback_finish(&retry);
			if (err && !ret)
				ret = err;
		}
	}
	for (i = 0; i < nb; i++) {
		struct kvtier_page *kp = batch[i];
		bool clean = !kvt_pg_test(kp, KVT_PG_DIRTY);

		rg->cleaned += clean;
		if (rg->evict && clean) {
			kvtier_drop_written(tier, kp, rg);
			continue;
		}
		unlock_page(kp->page);
		put_page(kp->page);
	}
	if (ret && !rg->ret)
		rg->ret = ret;
	/* Background write-back stops at an error: it comes back later. */
	if (ret && rg->background)
		rg->quota = 0;
}

/* Entries a walk looks at under one hold of the xa_lock. */
#define KVTIER_WALK_BATCH	1024

/*
 * Can background write-back take @kp? Dirty, and neither pinned nor kept
 * dirty by a GUP reference at its last write-back (it would come out
 * dirty again). Hints, read under the xa_lock; the page lock decides.
 */
static bool kvtier_cleanable(struct kvtier_page *kp)
{
	return kvt_pg_test(kp, KVT_PG_DIRTY) &&
		!kvt_pg_test(kp, KVT_PG_PINNED) && !kvt_pg_test(kp, KVT_PG_GUP) &&
		!kvt_pg_writeback(kp);
}

/*
 * The next resident page of @region at or after *@index, up to @last, with
 * a reference; NULL when there is none. With @clean (background
 * write-back), only a page kvtier_cleanable() that nobody holds locked,
 * returned locked: the lock is tried under the xa_lock, before any
 * reference is taken, so the background pass never holds a transient
 * reference to a page another write-back has locked (its plan would take
 * that for a GUP reference and leave the page dirty). A mostly evicted
 * region holds mostly slot entries: the walk lets go of the xa_lock
 * (faults wait on it) and of the CPU every KVTIER_WALK_BATCH of them.
 */
static struct kvtier_page *kvtier_next_resident(struct kvtier_region *region,
						unsigned long *index,
						pgoff_t last, bool clean)
{
	XA_STATE(xas, &region->pages, *index);
	struct kvtier_page *kp = NULL;
	unsigned int seen = 0;
	void *entry;

	xas_lock(&xas);
	xas_for_each(&xas, entry, last) {
		if (xas_retry(&xas, entry))
			continue;
		if (!xa_is_value(entry) &&
		    (!clean || (kvtier_cleanable(entry) &&
				trylock_page(((struct kvtier_page *)entry)->page)))) {
			kp = entry;
			get_page(kp->page);
			*index = xas.xa_index;
			break;
		}
		if (++seen % KVTIER_WALK_BATCH == 0) {
			xas_pause(&xas);
			xas_unlock(&xas);
			cond_resched();
			xas_lock(&xas);
		}
	}
	xas_unlock(&xas);
	return kp;
}

/* Drop the clean pages collected; those kept for a reference are busy. */
static void kvtier_range_drops_flush(struct kvtier_range *rg)
{
	kvtier_drops_flush(&rg->drops);
	rg->busy += rg->drops.busy;
	rg->drops.busy = 0;
}

/* A page passed over for another task's lock or write-back: noted. */
static void kvtier_range_skip(struct kvtier_range *rg, pgoff_t index)
{
	if (!rg->nr_skipped++)
		rg->skip_first = index;
	rg->skip_last = index;
}

/*
 * One pass over [first, last]: write back the dirty pages in batches;
 * with @rg->evict, also drop every clean page. Two batches are in flight: one
 * is written while the next is collected, unmapped, given slots and CRCs
 * and started, so the device is not idle between them; the one before is
 * finished (its pages unlocked) as soon as its bios are done, and before
 * the pass waits for another task's page lock. The pass locks pages in
 * index order.
 *
 * With @rg->skips, a page another task holds locked is passed over and
 * noted in @rg, for a later pass that waits: reclaim writes the pages just
 * ahead of a range pass (the coldest dirty ones it has not locked), and
 * waiting for each in turn would make the pass follow reclaim page by
 * page, its batches made of the pages reclaim left, in bios of a page or
 * two.
 */
static void kvtier_region_writeback_pass(struct kvtier_region *region,
					 pgoff_t first, pgoff_t last,
					 struct kvtier_wb_pair *p,
					 struct kvtier_range *rg)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long index = first;
	struct kvtier_page *kp;
	struct kvtier_wb *done;
	unsigned int nb = 0;

	while (rg->quota &&
	       (kp = kvtier_next_resident(region, &index, last,
					  rg->background))) {
		struct page *page = kp->page;

		done = kvtier_wb_pair_written(p);
		if (done)
			kvtier_region_batch_end(done, rg);
		/* Background write-back stands aside once reclaim runs. */
		if (rg->background && kvtier_pool_reclaiming(tier))
			rg->quota = 0;
		if (!rg->background && !trylock_page(page)) {
			if (rg->skips) {
				put_page(page);
				kvtier_range_skip(rg, index);
				goto next;
			}
			kvtier_range_drops_flush(rg);
			done = kvtier_wb_pair_behind(p);
			if (done)
				kvtier_region_batch_end(done, rg);
			lock_page(page);
		}
		if (!kvtier_page_is_at(region, index, kp, page)) {
			/* Replaced while we waited: look at this index again. */
			unlock_page(page);
			put_page(page);
			continue;
		}
		if (kvt_pg_writeback(kp)) {
			/*
			 * Another task writes it back, its lock let go. Our
			 * reference keeps kp: no eviction while it is held.
			 */
			unlock_page(page);
			if (rg->skips || rg->background) {
				put_page(page);
				if (rg->skips)
					kvtier_range_skip(rg, index);
				goto next;
			}
			kvtier_range_drops_flush(rg);
			done = kvtier_wb_pair_behind(p);
			if (done)
				kvtier_region_batch_end(done, rg);
			wait_on_bit_io(&kp->flags, KVT_PG_WRITEBACK,
				       TASK_UNINTERRUPTIBLE);
			put_page(page);
			continue;
		}
		if (kvt_pg_test(kp, KVT_PG_DIRTY) && rg->quota &&
		    !(rg->background && kvt_pg_test(kp, KVT_PG_PINNED))) {
			p->batch[p->cur][nb++] = kp;
			rg->quota--;
			rg->next = index + 1;
			if (nb == p->batch_max) {
				done = kvtier_wb_pair_start(p, tier, nb);
				if (done)
					kvtier_region_batch_end(done, rg);
				nb = 0;
			}
		} else if (rg->evict && !kvt_pg_test(kp, KVT_PG_PINNED)) {
			kvtier_drops_add(&rg->drops, kp);
		} else {
			unlock_page(page);
			put_page(page);
		}
next:
		if (index == last)
			break;
		index++;
	}
	kvtier_range_drops_flush(rg);
	if (nb) {
		done = kvtier_wb_pair_start(p, tier, nb);
		if (done)
			kvtier_region_batch_end(done, rg);
	}
	done = kvtier_wb_pair_behind(p);
	if (done)
		kvtier_region_batch_end(done, rg);
}

/* Pages the range pass writes back at once, at most (8 MiB). */
#define KVTIER_RANGE_BATCH_MAX	2048

/*
 * The range pass's batch: a quarter of max_inflight_kb (two batches are in
 * flight at once, each of several bios; the other half is left to reads),
 * at least writeback_batch_kb, at most KVTIER_RANGE_BATCH_MAX pages and a
 * sixteenth of the budget (a batch's pages are held while it is collected
 * and written, locked or KVT_PG_WRITEBACK: writers wait for them, and a
 * budget stall cannot evict them; two batches, an eighth).
 */
static unsigned int kvtier_range_batch(struct kvtier_tier *tier)
{
	unsigned long inflight = kvtier_kb_pages(READ_ONCE(tier->knobs.max_inflight_kb));
	unsigned long want = min3(inflight / 4, kvtier_budget_pages(tier) / 16,
				  (unsigned long)KVTIER_RANGE_BATCH_MAX);

	return max_t(unsigned long, want, kvtier_writeback_batch(tier));
}

/* Two batches of kvtier_range_batch(), or smaller ones if memory is short. */
static struct kvtier_wb_pair *kvtier_range_pair(struct kvtier_tier *tier)
{
	struct kvtier_wb_pair *p;

	p = kvtier_wb_pair_alloc(kvtier_range_batch(tier),
				 GFP_KERNEL | __GFP_NOWARN);
	if (!p)
		p = kvtier_wb_pair_alloc(kvtier_writeback_batch(tier),
					 GFP_KERNEL);
	return p;
}

/*
 * Write back the dirty pages of [first, last]; with @evict, also drop every
 * clean page of the range from the pool. The first pass passes over pages
 * other tasks hold locked; if there were any, their span is gone over
 * again waiting for each lock (a fatal signal does not end it: detach and
 * seal rely on every page being written). With @evict, the range is gone
 * over again (a few times at most) for pages a transient reference kept.
 * Such a reference is a task between unlock_page() and put_page() (the
 * background worker after a batch, a racing lookup): on a loaded host it
 * can be descheduled there for a while, so the passes after the second
 * first sleep, a jiffy and then twice as long each time, up to
 * KVTIER_BUSY_SLEEP_MAX: a holder preempted for tens of milliseconds no
 * longer leaves its page resident, and a page held for good (a GUP pin)
 * costs 35 jiffies per call (0.14 s at HZ=250).
 */
#define KVTIER_RANGE_PASSES	8
#define KVTIER_BUSY_SLEEP_MAX	max(HZ / 25, 1)

int kvtier_region_writeback(struct kvtier_region *region, pgoff_t first,
			    pgoff_t last, bool evict)
{
	struct kvtier_range rg = { .evict = evict };
	pgoff_t from = first, to = last;
	struct kvtier_wb_pair *p;
	unsigned int pass;
	int ret = 0;

	p = kvtier_range_pair(region->tier);
	if (!p)
		return -ENOMEM;
	/* Pages it drops stay locked; those it keeps are let go at once. */
	p->release = !evict;
	for (pass = 0; pass < KVTIER_RANGE_PASSES; pass++) {
		rg.busy = 0;
		rg.nr_skipped = 0;
		rg.skips = !pass;
		rg.quota = ULONG_MAX;
		kvtier_region_writeback_pass(region, from, to, p, &rg);
		if (rg.ret && !ret)
			ret = rg.ret;
		if (!rg.busy && !rg.nr_skipped)
			break;
		/* Skipped pages are gone over again whatever: fsync, detach. */
		if (!rg.nr_skipped && fatal_signal_pending(current))
			break;
		if (pass + 1 == KVTIER_RANGE_PASSES)
			break;
		/* Only the span that had skipped pages, unless some were busy. */
		from = rg.busy ? first : rg.skip_first;
		to = rg.busy ? last : rg.skip_last;
		if (pass)
			schedule_timeout_uninterruptible(min_t(long, 1L << (pass - 1),
							       KVTIER_BUSY_SLEEP_MAX));
		else
			cond_resched();
	}
	kfree(p);
	return ret;
}

/*
 * Background write-back (pool.clean_work): when more than
 * dirty_background_pct of the budget is dirty, write dirty pages back,
 * leaving them resident and clean, until at most half that is dirty. The
 * budget's eviction then drops clean pages at once instead of writing
 * while a fault waits, and fsync finds less to write. The least recently
 * used dirty region goes first, its pages in index order (runs of slots,
 * large bios); pages other tasks hold locked are passed over (never
 * waited for: the worker is not what anyone waits on), and so are pinned
 * pages (never evicted: writing them early would spare no eviction).
 * Above watermark_high it stands aside: the reclaim worker then writes back
 * what it evicts, and two writers over the same run of pages would
 * interleave their slots, which the runs that later read them back pay
 * for. It never takes the namespace's last free space
 * (KVTIER_CLEAN_ROOM_DIV), and a full namespace does not make it ask for
 * room (kvtier_store_need_room()): making room may reclaim unused
 * persistent regions, which only writes that must happen (eviction,
 * fsync) should cause; its pages stay dirty for those. A page kept dirty
 * by a GUP reference at its last write-back is passed over too
 * (KVT_PG_GUP): it would come out dirty again at every run.
 *
 * A run that falls short of its goal (no room, the pages it found locked
 * or kept dirty, a write error, at which it stops, no memory) queues
 * itself again after a pause, so the dirty pages are cleaned once what
 * stopped it passes, whether or not anything is dirtied meanwhile; pages
 * dirtied during the pause do not wake it sooner. The pause doubles at
 * every such run, up to KVTIER_CLEAN_BACKOFF_MAX, so a device that keeps
 * failing is tried every few seconds, not at every page, and pages it can
 * never take (kept dirty by GUP) cost a look every 8 s. A fenced tier
 * stops it; so does detach (kvtier_store_close() cancels it) until the
 * next attach. A run that stood aside for reclaim is queued again when
 * the reclaim worker is done, if the dirty pages are over their share.
 */

/* Slots the worker leaves free: 1/64 of the namespace. */
#define KVTIER_CLEAN_ROOM_DIV	64
/*
 * The pause after a run that fell short of its goal, at least; after a
 * write-back error (a failing device), longer; and at most.
 */
#define KVTIER_CLEAN_BACKOFF		(HZ / 10)
#define KVTIER_CLEAN_ERR_BACKOFF	HZ
#define KVTIER_CLEAN_BACKOFF_MAX	(8 * HZ)

/*
 * Dirty pages above dirty_background_pct of the budget (over @div). The
 * worker leaves pinned pages, so they are not counted: all pinned pages
 * are taken off, dirty or not, which errs towards writing later. Counted
 * in, dirty pinned pages could keep the count over the line for good, and
 * then every page dirtied would wake the worker for a write of its own.
 */
long kvtier_dirty_excess(struct kvtier_tier *tier, unsigned int div)
{
	unsigned int pct = READ_ONCE(tier->knobs.dirty_background_pct);

	if (!pct)
		return 0;
	return atomic_long_read(&tier->pool.nr_dirty) -
		atomic_long_read(&tier->nr_pinned) -
		(long)(kvtier_budget_pages(tier) * pct / 100 / div);
}

/* Regions one run of the worker passes over once they gave it nothing. */
#define KVTIER_CLEAN_TRIED	8

/*
 * The least recently used region with dirty pages, with a reference; not
 * one of @tried (compared, never dereferenced: they may be gone). Only the
 * dirty list is walked; a region found clean leaves it (it comes back with
 * its next dirty page: struct kvtier_region.dirty_node).
 */
static struct kvtier_region *
kvtier_clean_pick(struct kvtier_tier *tier, struct kvtier_region **tried,
		  unsigned int nt)
{
	struct kvtier_region *r, *next, *best = NULL;
	unsigned int i;

	spin_lock(&tier->regions_lock);
	list_for_each_entry_safe(r, next, &tier->dirty_regions, dirty_node) {
		long dirty = atomic_long_read(&r->nr_dirty);

		if (!dirty) {
			list_del_init(&r->dirty_node);
			continue;
		}
		if (dirty <= atomic_long_read(&r->nr_pinned) ||
		    !refcount_read(&r->ref))
			continue;
		for (i = 0; i < nt && tried[i] != r; i++)
			;
		if (i < nt)
			continue;
		if (!best || time_before(READ_ONCE(r->last_use),
					 READ_ONCE(best->last_use)))
			best = r;
	}
	if (best && !kvtier_region_tryget(best))
		best = NULL;
	spin_unlock(&tier->regions_lock);
	return best;
}

/*
 * Free slots beyond the reserve, for @nr more pages? Background write-back
 * and direct writes (direct.c) never take the reserve: it is kept for the
 * writes that must happen (eviction, fsync).
 */
bool kvtier_clean_room(struct kvtier_tier *tier, unsigned long nr)
{
	unsigned long total = READ_ONCE(tier->slots.nr);
	unsigned long used = READ_ONCE(tier->slots.used);

	return used < total &&
		total - used >= nr + total / KVTIER_CLEAN_ROOM_DIV;
}

/*
 * One background pass over @region: from where the last one stopped to
 * the end, then from the start, so a region written in order is not walked
 * from its first page (clean, or only on the namespace) at every round.
 */
static void kvtier_clean_region(struct kvtier_region *region,
				struct kvtier_wb_pair *p, struct kvtier_range *rg)
{
	pgoff_t from = READ_ONCE(region->clean_next);

	if (from >= region->nr_pages)
		from = 0;
	rg->next = from;
	kvtier_region_writeback_pass(region, from, region->nr_pages - 1, p, rg);
	if (from && rg->quota)
		kvtier_region_writeback_pass(region, 0, from - 1, p, rg);
	WRITE_ONCE(region->clean_next, rg->next);
}

/*
 * Queue the worker again after a pause of at least @least jiffies, twice
 * the last one if that is more; not on a fenced or detaching tier. A kick
 * (a page dirtied) while this run went on may have queued it already, to
 * run at once: the pause replaces that, or a worker that keeps falling
 * short on a busy tier would run back to back.
 */
static void kvtier_clean_again(struct kvtier_tier *tier, unsigned long least)
{
	struct kvtier_pool *pool = &tier->pool;

	if (READ_ONCE(tier->store.closing) || kvtier_fenced(tier))
		return;
	pool->clean_pause = clamp(2 * pool->clean_pause, least,
				  (unsigned long)KVTIER_CLEAN_BACKOFF_MAX);
	mod_delayed_work(kvtier_wq, &pool->clean_work, pool->clean_pause);
}

void kvtier_writeback_background(struct work_struct *work)
{
	struct kvtier_tier *tier = container_of(to_delayed_work(work),
						struct kvtier_tier,
						pool.clean_work);
	struct kvtier_region *tried[KVTIER_CLEAN_TRIED], *region;
	unsigned long pause = KVTIER_CLEAN_BACKOFF;
	struct kvtier_wb_pair *p = NULL;
	unsigned int nt = 0;
	long excess;

	while ((excess = kvtier_dirty_excess(tier, 2)) > 0) {
		struct kvtier_range rg = { .background = true,
					   .quota = excess };

		/* Reclaim's turn: its worker queues this one when done. */
		if (kvtier_pool_reclaiming(tier))
			goto out;
		if (READ_ONCE(tier->store.closing) || kvtier_fenced(tier) ||
		    !kvtier_clean_room(tier, excess))
			goto backoff;
		region = kvtier_clean_pick(tier, tried, nt);
		if (!region)
			goto backoff;
		/*
		 * Two batches of this are held across their I/O (marked
		 * KVT_PG_WRITEBACK), where a budget stall cannot evict them:
		 * a sixteenth of the budget each at most, whatever
		 * writeback_batch_kb says.
		 */
		if (!p)
			p = kvtier_wb_pair_alloc(min(kvtier_range_batch(tier),
						     max(kvtier_budget_pages(tier) / 16, 1UL)),
						 GFP_KERNEL | __GFP_NOWARN);
		if (p) {
			p->background = true;
			p->release = true;
			kvtier_clean_region(region, p, &rg);
		}
		kvtier_region_put(region);
		if (rg.cleaned)
			kvtier_count(tier, KVT_STAT_WB_BACKGROUND, rg.cleaned);
		if (rg.ret)
			pause = KVTIER_CLEAN_ERR_BACKOFF;
		if (!p || rg.ret)
			goto backoff;
		/*
		 * Its dirty pages were all locked, or stay dirty for a GUP
		 * pin: the next region; after a few, a pause.
		 */
		if (!rg.cleaned) {
			if (nt == KVTIER_CLEAN_TRIED)
				goto backoff;
			tried[nt++] = region;
		}
		cond_resched();
	}
	tier->pool.clean_pause = 0;
out:
	kfree(p);
	return;
backoff:
	kfree(p);
	kvtier_clean_again(tier, pause);
}

/*
 * Does this write-back need a fresh slot? A page without one does, and so
 * does every page of a persistent region: its current slot may be named by
 * the last commit, so the new copy goes elsewhere (copy-on-write) and the
 * old slot is deferred when the write completes.
 */
static bool kvtier_needs_slot(const struct kvtier_page *kp)
{
	return kp->slot == KVTIER_NO_SLOT || kp->region->persistent;
}

/*
 * Choose each page's wb_slot in a sorted batch: its own slot where it may
 * be overwritten in place, else a fresh one; one run of consecutive slots
 * for each run of consecutive indexes of one region, so the batch goes out
 * in few, large bios. When the namespace is full the pages that did not
 * fit get -ENOSPC and the store's room work is queued (a commit, then
 * capacity reclaim, the writing region's owner's regions first); it runs
 * outside these pages' locks, and the caller waits for it if it must
 * (kvtier_store_wait_room()); without @ask_room (background write-back,
 * which nobody waits for) it is not. Pages with errs[i] set already are
 * skipped. Returns -ENOSPC if a page could not be placed, 0 otherwise.
 */
static int kvtier_assign_slots(struct kvtier_tier *tier,
			       struct kvtier_page **kps, unsigned int nr,
			       int *errs, bool ask_room)
{
	unsigned long slot, got;
	unsigned int i = 0, j;
	int ret = 0;

	while (i < nr) {
		if (errs[i]) {
			i++;
			continue;
		}
		if (!kvtier_needs_slot(kps[i])) {
			kps[i]->wb_slot = kps[i]->slot;
			i++;
			continue;
		}
		for (j = i + 1; j < nr && !errs[j] && kvtier_needs_slot(kps[j]) &&
		     kps[j]->region == kps[i]->region &&
		     kps[j]->index == kps[j - 1]->index + 1; j++)
			;
		slot = kvtier_slots_alloc(&tier->slots, j - i, &got);
		if (slot == KVTIER_NO_SLOT) {
			if (!ret && ask_room)
				kvtier_store_need_room(tier,
						       kps[i]->region->owner);
			for (; i < j; i++)
				errs[i] = -ENOSPC;
			ret = -ENOSPC;
			continue;
		}
		for (j = 0; j < got; j++)
			kps[i + j]->wb_slot = slot + j;
		i += got;
	}
	return ret;
}

/*
 * Does someone besides the pool and the write-back (one reference each)
 * hold the page? Write-back has unmapped it and holds its lock, so that is
 * a GUP pin or get: an O_DIRECT read into the mapping, RDMA, an io_uring
 * fixed buffer. DMA may write the page during and after the write-back,
 * with no fault to mark it dirty again, so it stays dirty, as file systems
 * keep pinned pages: a later write-back writes what landed, and eviction
 * waits for it. A transient reference of a kvtier walker (a fault or a
 * range pass about to wait for the lock) looks the same: that page is
 * written again later, which costs a write, never data. Caller holds the
 * page lock.
 */
static bool kvtier_page_gup_held(struct kvtier_page *kp)
{
	return page_count(kp->page) > 2;
}

/*
 * A page's write-back to wb_slot ended with @err. On success the new copy
 * becomes the page's slot, with its CRC, under the xa_lock (a commit's
 * snapshot reads the pair there); a slot it replaces is deferred (a commit
 * may name it). On failure a fresh slot is given back: nothing names it.
 */
static void kvtier_writeback_done(struct kvtier_tier *tier,
				  struct kvtier_page *kp, int err)
{
	struct kvtier_region *region = kp->region;
	unsigned long old = kp->slot;

	if (err) {
		if (kp->wb_slot != old)
			kvtier_slots_free(&tier->slots, kp->wb_slot, 1);
		/* No memory to start the write is not an I/O error: retried. */
		if (err != -ENOMEM)
			cmpxchg(&region->err, 0, err);
		return;
	}
	xa_lock(&region->pages);
	kp->slot = kp->wb_slot;
	kvtier_crcs_set(region, kp->index, kp->crc,
			kvt_pg_test(kp, KVT_PG_NOCRC));
	kvtier_journal_page_changed(region, kp->index);
	/* Under the xa_lock: a checkpoint's snapshot orders against it. */
	atomic_inc(&region->map.changes);
	xa_unlock(&region->pages);
	if (old == KVTIER_NO_SLOT)
		atomic_long_inc(&region->nr_slots);
	else if (old != kp->slot)
		kvtier_slots_defer(&tier->slots, old, 1);
	if (region->persistent)
		atomic64_inc(&tier->store.changes);
	/*
	 * DMA may have changed it under the bio, or may still: stays dirty.
	 * Only a reference held when the batch was planned can be GUP's for
	 * writing: the page was unmapped before, and is locked, or
	 * KVT_PG_WRITEBACK, until now, so a write fault (GUP's included)
	 * waits in page_mkwrite. Counting references again here would take
	 * the transient ones of kvtier's own walkers (an LRU scan, a range
	 * pass waiting for this lock) for GUP and write the page twice. The
	 * flag stays until the next plan: background write-back passes the
	 * page over rather than write it again and again.
	 */
	if (kvt_pg_test(kp, KVT_PG_GUP))
		return;
	if (kvt_pg_test_and_clear(kp, KVT_PG_DIRTY)) {
		atomic_long_dec(&tier->pool.nr_dirty);
		atomic_long_dec(&region->nr_dirty);
	}
}

/*
 * The CRCs of a write-back batch, spread over CPUs. Under the checksum the
 * CRC is most of what write-back costs the CPU, and fsync or reclaim would
 * otherwise compute a whole batch's on one CPU before the first bio goes
 * out. The batch is cut into up to KVT_CRC_PARTS parts of at least
 * KVT_CRC_PART_MIN pages, one per online CPU; parts after the first are
 * queued on kvtier_wq, and the caller computes the first, then each part
 * no helper has started (a part is claimed once, by whoever exchanges
 * @claimed first). The caller only ever waits for a helper that is
 * already running, so a workqueue without free workers (memory pressure,
 * when write-back matters most) costs parallelism, never progress. The
 * pages are locked by the caller throughout: stable, and theirs to set.
 */
#define KVT_CRC_PARTS		4
#define KVT_CRC_PART_MIN	64

struct kvtier_crc_part {
	struct work_struct work;
	struct kvtier_page **kps;
	const int *errs;		/* a page with an error gets no CRC */
	unsigned int nr;
	atomic_t claimed;
};

/* Returns how many CRCs it computed. */
static unsigned int kvtier_crc_part_run(struct kvtier_crc_part *part)
{
	unsigned int i, n = 0;

	for (i = 0; i < part->nr; i++) {
		struct kvtier_page *kp = part->kps[i];
		void *data;

		if (part->errs[i] || kvt_pg_test(kp, KVT_PG_NOCRC))
			continue;
		data = kmap_local_page(kp->page);
		kp->crc = kvtier_crc32c(data, PAGE_SIZE);
		kunmap_local(data);
		n++;
	}
	return n;
}

static void kvtier_crc_part_work(struct work_struct *work)
{
	struct kvtier_crc_part *part = container_of(work, struct kvtier_crc_part,
						    work);

	if (!atomic_xchg(&part->claimed, 1))
		kvtier_count(part->kps[0]->region->tier, KVT_STAT_WB_CRC_HELPED,
			     kvtier_crc_part_run(part));
}

static void kvtier_writeback_crcs(struct kvtier_page **kps, const int *errs,
				  unsigned int nr)
{
	struct kvtier_crc_part parts[KVT_CRC_PARTS];
	unsigned int np, i, at = 0;

	np = clamp_t(unsigned int, nr / KVT_CRC_PART_MIN, 1,
		     min_t(unsigned int, num_online_cpus(), KVT_CRC_PARTS));
	for (i = 0; i < np; i++) {
		unsigned int n = nr / np + (i < nr % np);

		parts[i].kps = kps + at;
		parts[i].errs = errs + at;
		parts[i].nr = n;
		atomic_set(&parts[i].claimed, 0);
		at += n;
		if (i) {
			INIT_WORK_ONSTACK(&parts[i].work, kvtier_crc_part_work);
			queue_work(kvtier_wq, &parts[i].work);
		}
	}
	/* Ours, then from the last part back (helpers start at the front). */
	atomic_set(&parts[0].claimed, 1);
	kvtier_crc_part_run(&parts[0]);
	for (i = np - 1; i > 0; i--) {
		if (!atomic_xchg(&parts[i].claimed, 1))
			kvtier_crc_part_run(&parts[i]);
	}
	/* Unqueue what did not start; wait for what runs. */
	for (i = 1; i < np; i++) {
		cancel_work_sync(&parts[i].work);
		destroy_work_on_stack(&parts[i].work);
	}
}

/*
 * Which pages of a batch get a CRC, and which a GUP reference may change
 * under the bio; returns how many need a CRC. Every page of a persistent
 * region gets one, whatever the checksum knob says: its record keeps the
 * CRC for whoever reads it later (after a reload, on another host), and a
 * record has no room to say "none". Other regions (unnamed, or named but
 * volatile) end with the attach at the latest, so with checksum off their
 * pages are written without a CRC and are never checked (KVT_PG_NOCRC,
 * recorded by kvtier_crcs_set()).
 */
static unsigned int kvtier_writeback_plan(struct kvtier_tier *tier,
					  struct kvtier_page **kps,
					  const int *errs, unsigned int nr)
{
	bool checksum = READ_ONCE(tier->knobs.checksum);
	unsigned int i, need = 0, skip = 0;

	for (i = 0; i < nr; i++) {
		struct kvtier_page *kp = kps[i];

		if (errs[i])
			continue;
		/*
		 * Stable under the page lock, unless DMA into a GUP
		 * reference changes it: then it stays dirty. Unmapped and
		 * locked, it gains no new GUP reference until unlocked.
		 */
		if (kvtier_page_gup_held(kp))
			kvt_pg_set(kp, KVT_PG_GUP);
		else
			kvt_pg_clear(kp, KVT_PG_GUP);
		if (checksum || kp->region->persistent) {
			kvt_pg_clear(kp, KVT_PG_NOCRC);
			need++;
		} else {
			kvt_pg_set(kp, KVT_PG_NOCRC);
			kp->crc = 0;
			skip++;
		}
	}
	if (skip)
		kvtier_count(tier, KVT_STAT_WB_UNCHECKED, skip);
	return need;
}

/*
 * Start writing back a batch of dirty pages, locked by the caller (so no
 * write can change them while in flight: stable pages); their mappings
 * are write-protected here by unmapping, so a later write faults into
 * page_mkwrite and waits. The locks are held until
 * kvtier_writeback_finish(); with @release, those of the pages whose bios
 * went out are let go here, each page marked KVT_PG_WRITEBACK instead
 * (writers wait for the mark) and its reference kept until the finish.
 * @kps is reordered. Returns once the bios are submitted; errors are
 * reported by kvtier_writeback_finish().
 */
void kvtier_writeback_start(struct kvtier_wb *wb, struct kvtier_tier *tier,
			    struct kvtier_page **kps, unsigned int nr,
			    bool ask_room, bool release)
{
	unsigned int i, sent;
	int *errs, err;

	*wb = (struct kvtier_wb){ .tier = tier, .kps = kps, .nr = nr };
	wb->wr = kmalloc_array(nr, sizeof(*wb->wr), GFP_NOIO);
	wb->errs = kcalloc(2 * nr, sizeof(*wb->errs), GFP_NOIO);
	if (!wb->wr || !wb->errs) {
		kfree(wb->wr);
		kfree(wb->errs);
		wb->errs = NULL;
		wb->ret = -ENOMEM;
		return;
	}
	errs = wb->errs;

	kvtier_pages_sort(kps, nr);
	kvtier_unmap_runs(kps, nr);
	/* Room for each CRC first: the completion cannot allocate it. */
	for (i = 0; i < nr; i++) {
		errs[i] = kvtier_crcs_reserve(kps[i]->region, kps[i]->index,
					      GFP_NOIO);
		if (errs[i])
			wb->ret = errs[i];
	}
	err = kvtier_assign_slots(tier, kps, nr, errs, ask_room);
	if (err)
		wb->ret = err;
	if (kvtier_writeback_plan(tier, kps, errs, nr))
		kvtier_writeback_crcs(kps, errs, nr);
	for (i = 0; i < nr; i++) {
		if (!errs[i])
			wb->wr[wb->n++] = kps[i];
		else if (errs[i] != -ENOMEM)
			kvtier_count(tier, KVT_STAT_NOSPACE, 1);
	}
	if (!wb->n)
		return;
	sent = kvtier_io_write_start(tier, wb->wr, wb->n, errs + nr, &wb->io);
	if (!release)
		return;
	for (i = 0; i < sent; i++) {
		kvt_pg_set(wb->wr[i], KVT_PG_WRITEBACK);
		unlock_page(wb->wr[i]->page);
	}
	wb->released = sent;
}

/*
 * Wait until a write-back that let go of @kp's lock is done with it
 * (KVT_PG_WRITEBACK): the bytes on their way to the namespace, and the CRC
 * computed from them, must not change under the bio. For every writer of a
 * resident page (page_mkwrite, pwrite), before it changes a byte. Caller
 * holds the page lock, so no other write-back starts meanwhile. Counted in
 * writeback_waits. Returns 0, or -EINTR for a fatal signal: a write stuck
 * behind a device that does not answer can still be killed (the write
 * then changes nothing).
 */
int kvtier_page_wait_writeback(struct kvtier_page *kp)
{
	if (!kvt_pg_writeback(kp))
		return 0;
	kvtier_count(kp->region->tier, KVT_STAT_WB_WAITS, 1);
	return wait_on_bit_io(&kp->flags, KVT_PG_WRITEBACK, TASK_KILLABLE) ?
		-EINTR : 0;
}

/*
 * The pages of @wb its start let go of are done with: each is writable
 * again (its waiting writers wake) and loses the batch's reference, and
 * leaves @wb->kps, which keeps the pages the caller holds locked, in
 * order. Those that came out clean are counted in @wb->cleaned, before
 * the mark goes: a writer may dirty them again at once.
 */
static void kvtier_writeback_release(struct kvtier_wb *wb)
{
	unsigned int i, k = 0;

	for (i = 0; i < wb->nr; i++) {
		struct kvtier_page *kp = wb->kps[i];
		struct page *page = kp->page;

		if (!kvt_pg_test(kp, KVT_PG_WRITEBACK)) {
			wb->kps[k++] = kp;
			continue;
		}
		wb->cleaned += !kvt_pg_test(kp, KVT_PG_DIRTY);
		/*
		 * Orders the new slot, CRC and clean state before the wake.
		 * The reference goes after the mark, not before: without
		 * either nothing keeps kp from eviction. A waiter may so see
		 * one reference more for a moment: DONTNEED counts the page
		 * busy and tries again.
		 */
		clear_and_wake_up_bit(KVT_PG_WRITEBACK, &kp->flags);
		put_page(page);
	}
	wb->nr = k;
}

/*
 * Wait for a batch kvtier_writeback_start() started and record what each
 * page's write gave: on success a page is clean; on failure it stays
 * dirty and its region keeps the first error. The pages the start let go
 * of are released and leave wb->kps (wb->nr drops); the others stay
 * locked. Returns an error of the batch (the I/O's over -ENOSPC over
 * -ENOMEM: what the caller acts on), or 0.
 */
int kvtier_writeback_finish(struct kvtier_wb *wb)
{
	unsigned int i;
	int ret = wb->ret, err;

	if (!wb->errs)
		return ret;
	if (wb->n) {
		err = kvtier_io_write_wait(wb->tier, &wb->io);
		if (err)
			ret = err;
	}
	for (i = 0; i < wb->n; i++)
		kvtier_writeback_done(wb->tier, wb->wr[i], wb->errs[wb->nr + i]);
	if (wb->released)
		kvtier_writeback_release(wb);
	kfree(wb->wr);
	kfree(wb->errs);
	return ret;
}

/*
 * Two batches in flight. Whoever finishes a batch the functions below
 * return owns its pages (kvtier_writeback_finish(), then each page's lock
 * and reference): the older is always returned first.
 */
struct kvtier_wb_pair *kvtier_wb_pair_alloc(unsigned int batch_max, gfp_t gfp)
{
	struct kvtier_wb_pair *p;

	p = kmalloc(struct_size(p, kps, 2 * (size_t)batch_max), gfp);
	if (!p)
		return NULL;
	p->batch[0] = p->kps;
	p->batch[1] = p->kps + batch_max;
	p->batch_max = batch_max;
	p->cur = 0;
	p->behind = false;
	p->background = false;
	p->release = false;
	return p;
}

/*
 * Start the @nr pages collected in p->batch[p->cur]; collecting goes on in
 * the other array, once the batch returned is finished: the one started
 * before (its array), to be finished now, or NULL.
 */
struct kvtier_wb *kvtier_wb_pair_start(struct kvtier_wb_pair *p,
				       struct kvtier_tier *tier,
				       unsigned int nr)
{
	struct kvtier_wb *older = kvtier_wb_pair_behind(p);

	kvtier_writeback_start(&p->wb[p->cur], tier, p->batch[p->cur], nr,
			       !p->background, p->release);
	p->behind = true;
	p->cur = !p->cur;
	return older;
}

/*
 * The batch in flight if its bios have all completed (or none was
 * submitted), to be finished now without waiting; else NULL.
 */
struct kvtier_wb *kvtier_wb_pair_written(struct kvtier_wb_pair *p)
{
	struct kvtier_wb *wb = &p->wb[!p->cur];

	if (!p->behind ||
	    (wb->errs && wb->n && atomic_read(&wb->io.pending) != 1))
		return NULL;
	return kvtier_wb_pair_behind(p);
}

/* The batch in flight, to be finished now (before a wait, or at the end). */
struct kvtier_wb *kvtier_wb_pair_behind(struct kvtier_wb_pair *p)
{
	if (!p->behind)
		return NULL;
	p->behind = false;
	return &p->wb[!p->cur];
}

/* Pages of the batch in flight. */
unsigned int kvtier_wb_pair_inflight(const struct kvtier_wb_pair *p)
{
	return p->behind ? p->wb[!p->cur].nr : 0;
}
