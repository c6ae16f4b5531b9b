// SPDX-License-Identifier: GPL-2.0
/*
 * A region's pages: where the page at an index comes from. kvtier_get_page()
 * finds it resident, zero-fills it (never written) or reads it back from the
 * namespace, checked against its CRC; it publishes new pages in the region's
 * xarray and undoes failed reads. Around it: the synchronous readahead
 * window of a miss, the asynchronous readahead of a sequential run, and
 * WILLNEED prefetch. Callers: file.c (faults, pread/pwrite, fadvise) and
 * pin.c.
 *
 * An entry of region->pages is a struct kvtier_page (resident), a value
 * entry (only on the namespace: its slot and the eviction clock, for
 * refault accounting; kvt_mk_shadow(), or an extent of such pages:
 * mapext.c), or absent (reads as zero).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>

#include "kvtier.h"
#include "kvtier_trace.h"

/* Undo kvtier_page_new() for a page that never became visible. */
static void kvtier_page_discard(struct kvtier_page *kp)
{
	struct kvtier_tier *tier = kp->region->tier;

	unlock_page(kp->page);
	__free_page(kp->page);
	kvtier_page_free(kp);
	kvtier_pool_uncharge(tier, 1);
}

/*
 * Publish a new page at its index if the entry is still @old. On success
 * the page is on the LRU; on a lost race it is discarded and -EAGAIN
 * returned.
 */
static int kvtier_page_publish(struct kvtier_page *kp, void *old)
{
	struct kvtier_region *region = kp->region;
	void *cur;
	int ret;

	/* The page gets an entry of its own: its extent's pages get theirs. */
	if (kvt_is_extent(old)) {
		ret = kvtier_mapext_split(region, kp->index, GFP_KERNEL);
		if (ret) {
			kvtier_page_discard(kp);
			return ret;
		}
		old = kvt_extent_shadow(old, kp->index);
	}
	cur = xa_cmpxchg(&region->pages, kp->index, old, kp, GFP_KERNEL);
	if (cur != old) {
		kvtier_page_discard(kp);
		return xa_is_err(cur) ? xa_err(cur) : -EAGAIN;
	}
	kvtier_pool_add(region->tier, kp);
	return 0;
}

/*
 * A failed read left @kp in the region without data: put the slot number
 * back so the next access reads again, and free the page. The caller holds
 * the page lock and its own reference, which it still has to drop. The page
 * was never up to date, so it was never mapped.
 */
static void kvtier_page_unread(struct kvtier_page *kp)
{
	struct kvtier_region *region = kp->region;
	struct page *page = kp->page;

	xa_lock(&region->pages);
	if (xa_load(&region->pages, kp->index) == kp) {
		__xa_store(&region->pages, kp->index, kvt_mk_shadow(kp->slot, 0), 0);
		kvtier_mapext_make_locked(region, kp->index);
	}
	xa_unlock(&region->pages);
	kvtier_pool_del(region->tier, kp);
	unlock_page(page);
	put_page(page);
	kvtier_page_free(kp);
}

/*
 * Whether @kp may be mapped or copied. The caller holds its page lock. A
 * page read in but not yet verified (KVT_PG_VERIFY) gets its checksum
 * checked now: up to date if it matches, failed (KVT_PG_ERROR, never
 * handed out) if not.
 */
bool kvtier_page_ready(struct kvtier_page *kp)
{
	if (kvt_pg_test(kp, KVT_PG_UPTODATE))
		return true;
	if (!kvt_pg_test_and_clear(kp, KVT_PG_VERIFY))
		return false;
	if (kvtier_io_verify(kp->region->tier, kp)) {
		kvt_pg_set(kp, KVT_PG_UPTODATE);
		return true;
	}
	kvt_pg_set(kp, KVT_PG_ERROR);
	return false;
}

/*
 * A page evicted less than a budget's worth of evictions ago is back: it
 * would have stayed resident in a slightly larger pool.
 */
static void kvtier_note_refault(struct kvtier_region *region, pgoff_t index,
				void *shadow)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long now = atomic_long_read(&tier->evict_clock);
	unsigned long distance = (now - kvt_shadow_clock(shadow)) & KVT_CLOCK_MASK;

	if (kvt_shadow_clock(shadow) && distance < kvtier_budget_pages(tier)) {
		kvtier_count(tier, KVT_STAT_REFAULT, 1);
		atomic_long_inc(&region->nr_refaults);
		trace_kvtier_refault(tier->id, region->id,
				     (u64)index << PAGE_SHIFT, distance);
	}
}

/*
 * Readahead: after the page at @index (slot @slot), collect up to
 * readahead_kb of following pages that are only on the namespace in the
 * following slots, as new locked pages, so one bio reads them all. Never
 * waits for budget: readahead takes only what is free.
 */
static unsigned int kvtier_readahead(struct kvtier_region *region,
				     pgoff_t index, unsigned long slot,
				     struct kvtier_page **kps, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && index + 1 + n < region->nr_pages) {
		pgoff_t i = index + 1 + n;
		struct kvtier_page *kp;
		void *entry = xa_load(&region->pages, i);

		if (!xa_is_value(entry) || kvt_shadow_slot(entry, i) != slot + 1 + n)
			break;
		kp = kvtier_page_new(region, i, false);
		if (IS_ERR(kp))
			break;
		kp->slot = slot + 1 + n;
		if (kvtier_page_publish(kp, entry))
			break;
		kvtier_note_refault(region, i, entry);
		kps[n++] = kp;
	}
	return n;
}

/* Readahead for a miss that does not continue a sequential run, in pages. */
#define KVTIER_RA_RANDOM_PAGES	4

/*
 * Pages to read for a miss at @index, the missing page included: the full
 * readahead_kb window when the miss continues where the region's last read
 * ended (a sequential pass: a sequence's blocks, a layer's pages), a few
 * pages otherwise, so random access does not read what it will not use.
 * Records which it was for the asynchronous readahead.
 */
static unsigned int kvtier_readahead_window(struct kvtier_region *region,
					    pgoff_t index)
{
	unsigned int pages = 1 +
		kvtier_kb_pages(READ_ONCE(region->tier->knobs.readahead_kb));
	bool seq = index == READ_ONCE(region->ra_next);

	WRITE_ONCE(region->ra_seq, seq);
	WRITE_ONCE(region->ra_pos, index);
	if (!seq) {
		WRITE_ONCE(region->ra_start, index);
		pages = min_t(unsigned int, pages, KVTIER_RA_RANDOM_PAGES);
	}
	return min_t(unsigned int, pages, BIO_MAX_VECS);
}

/*
 * Start reading the page at @index and, in the same bio, up to @max - 1
 * following pages that lie in the following slots, charging only free
 * budget (never waits for it, never evicts). The pages are published
 * locked; the read completion unlocks them. Returns the pages submitted;
 * 0 when @index is not only on the namespace (resident, never written, or
 * taken by a racing read); -ENOBUFS when the budget is full; another -errno
 * when the bio could not be started (the pages are left failed, so the
 * next access reads them again).
 */
static int kvtier_read_run(struct kvtier_region *region, pgoff_t index,
			   unsigned int max, struct kvtier_page **kps)
{
	void *entry = xa_load(&region->pages, index);
	struct kvtier_page *kp;
	unsigned int n, i;
	int ret;

	if (!max || !xa_is_value(entry))
		return 0;
	kp = kvtier_page_new(region, index, false);
	if (IS_ERR(kp))
		return PTR_ERR(kp);
	kp->slot = kvt_shadow_slot(entry, index);
	if (kvtier_page_publish(kp, entry))
		return 0;
	kvtier_note_refault(region, index, entry);
	kps[0] = kp;
	n = 1 + kvtier_readahead(region, index, kp->slot, kps + 1, max - 1);
	ret = kvtier_io_read(region->tier, kps, n);
	if (ret) {
		for (i = 0; i < n; i++) {
			kvt_pg_set(kps[i], KVT_PG_ERROR);
			unlock_page(kps[i]->page);
		}
		return ret;
	}
	return n;
}

/* Windows of readahead_kb the asynchronous readahead keeps submitted. */
#define KVTIER_RA_ASYNC_WINDOWS	4

/*
 * How far past a sequential reader reads are kept submitted, in pages:
 * KVTIER_RA_ASYNC_WINDOWS windows of readahead_kb, at most half of
 * max_inflight_kb (room for write-back) and a quarter of the budget (pages
 * read ahead must not push out those the reader is about to use).
 */
static unsigned long kvtier_ra_ahead(struct kvtier_tier *tier)
{
	unsigned long kb = (unsigned long)READ_ONCE(tier->knobs.readahead_kb) *
		KVTIER_RA_ASYNC_WINDOWS;

	kb = min(kb, (unsigned long)READ_ONCE(tier->knobs.max_inflight_kb) / 2);
	return min(kvtier_kb_pages(kb), kvtier_budget_pages(tier) / 4);
}

/*
 * Asynchronous readahead of a sequential run: read from where the region's
 * last read ended up to kvtier_ra_ahead() pages past the reader, in bios of
 * one readahead window each. Stops at a page that is not only on the
 * namespace, when the budget is full, and when the run turns random.
 */
void kvtier_ra_work(struct work_struct *work)
{
	struct kvtier_region *region = container_of(work, struct kvtier_region,
						    ra_work);
	struct kvtier_tier *tier = region->tier;
	unsigned int win = clamp_t(unsigned int,
				   kvtier_kb_pages(READ_ONCE(tier->knobs.readahead_kb)),
				   1, BIO_MAX_VECS);
	struct kvtier_page **kps;

	kps = kmalloc_array(win, sizeof(*kps), GFP_KERNEL);
	while (kps && READ_ONCE(region->ra_seq)) {
		pgoff_t next = READ_ONCE(region->ra_next);
		pgoff_t end = min_t(pgoff_t, region->nr_pages,
				    READ_ONCE(region->ra_pos) + 1 +
				    kvtier_ra_ahead(tier));
		int n;

		/* Whole windows only (large bios), but up to the end. */
		if (next >= end || (end - next < win && end < region->nr_pages))
			break;
		n = kvtier_read_run(region, next,
				    min_t(pgoff_t, win, end - next), kps);
		if (n <= 0)
			break;
		/* A miss may have moved it meanwhile: then it wins. */
		cmpxchg(&region->ra_next, next, next + n);
		kvtier_count(tier, KVT_STAT_READAHEAD, n);
	}
	kfree(kps);
	kvtier_region_put(region);
}

/*
 * After an access at @index: when it is part of a sequential run at least
 * twice the readahead distance long so far, and the reads submitted past
 * it have shrunk to half that distance or less, queue the asynchronous
 * readahead. Never waits. Short runs (a decode step's blocks of one layer,
 * churn's shared prefixes) stay with the synchronous window: reading a
 * whole distance past their end cost churn three times its throughput and
 * five times its reads (make bench-ab, performance.rst).
 */
void kvtier_ra_async(struct kvtier_region *region, pgoff_t index)
{
	unsigned long ahead = kvtier_ra_ahead(region->tier);
	pgoff_t next = READ_ONCE(region->ra_next);

	if (!READ_ONCE(region->ra_seq) || index >= next ||
	    next >= region->nr_pages || next - index > ahead / 2 ||
	    index - READ_ONCE(region->ra_start) < 2 * ahead)
		return;
	WRITE_ONCE(region->ra_pos, index);
	if (work_pending(&region->ra_work) || !kvtier_region_tryget(region))
		return;
	if (!queue_work(kvtier_wq, &region->ra_work))
		kvtier_region_put(region);
}

/*
 * Failed reads of one page an access sees (its own, or another task's that
 * it found failed) before it fails with -EIO: tasks faulting on a page of a
 * bad sector take turns reading it, and none may retry forever.
 */
#define KVTIER_READ_TRIES	3

/*
 * The page at @index if that takes no wait (IOCB_NOWAIT): resident,
 * unlocked and up to date (or read and its CRC right, checked here);
 * returned locked, with a reference for the caller. NULL for a hole (it
 * reads as zero); -EAGAIN when it is only on the namespace, its read
 * failed, or its lock is held (by I/O or another task: the blocking path
 * deals with it).
 * The lock is tried under the xa_lock, so the entry is still @kp when it
 * is taken: eviction and freeing take the page lock first.
 */
struct kvtier_page *kvtier_get_page_nowait(struct kvtier_region *region,
					   pgoff_t index)
{
	struct kvtier_page *kp;
	void *entry;

	xa_lock(&region->pages);
	entry = xa_load(&region->pages, index);
	if (!entry) {
		xa_unlock(&region->pages);
		return NULL;
	}
	kp = entry;
	if (xa_is_value(entry) || !trylock_page(kp->page)) {
		xa_unlock(&region->pages);
		return ERR_PTR(-EAGAIN);
	}
	get_page(kp->page);
	xa_unlock(&region->pages);
	/* Read but not yet checked: the check is CPU work, done here. */
	if (!kvtier_page_ready(kp)) {
		unlock_page(kp->page);
		put_page(kp->page);
		return ERR_PTR(-EAGAIN);
	}
	kvt_pg_set(kp, KVT_PG_REFERENCED);
	return kp;
}

/*
 * The page at @index, resident and up to date, locked, with a reference
 * for the caller. Reads it (with readahead) or zero-fills it as needed.
 * Errors: -EIO (read failed or checksum mismatch), -ENOSPC/-ENOBUFS (no
 * budget), -ENOMEM (an allocation failed), -EINTR.
 */
struct kvtier_page *kvtier_get_page(struct kvtier_region *region,
				    pgoff_t index, enum kvtier_get *how)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page **ra;
	struct kvtier_page *kp;
	unsigned int nr_ra, ra_max, failed = 0;
	bool single = false, locked;
	struct page *page;
	void *entry;
	int ret;

retry:
	xa_lock(&region->pages);
	entry = xa_load(&region->pages, index);
	if (entry && !xa_is_value(entry)) {
		kp = entry;
		page = kp->page;
		get_page(page);
		/*
		 * Locked under the xa_lock, kp is the region's page here
		 * until it is unlocked (it leaves only under that lock);
		 * locked after a sleep, it may have been freed meanwhile.
		 */
		locked = trylock_page(page);
		xa_unlock(&region->pages);
		if (!locked) {
			lock_page(page);
			if (!kvtier_page_is_at(region, index, kp, page)) {
				unlock_page(page);
				put_page(page);
				goto retry;
			}
		}
		if (!kvtier_page_ready(kp)) {
			/*
			 * An earlier read failed (or its checksum did): clean
			 * up and read again, this page alone (its neighbours'
			 * bio failed too).
			 */
			kvtier_page_unread(kp);
			put_page(page);
			if (++failed >= KVTIER_READ_TRIES)
				return ERR_PTR(-EIO);
			single = true;
			goto retry;
		}
		kvt_pg_set(kp, KVT_PG_REFERENCED);
		*how = KVT_GET_MINOR;
		return kp;
	}
	xa_unlock(&region->pages);

	kp = kvtier_page_new(region, index, true);
	if (IS_ERR(kp))
		return kp;

	if (!entry) {
		kvtier_page_zero(kp);
		kvt_pg_set(kp, KVT_PG_UPTODATE);
		ret = kvtier_page_publish(kp, NULL);
		if (ret == -EAGAIN)
			goto retry;
		if (ret)
			return ERR_PTR(ret);
		*how = KVT_GET_ZERO;
		get_page(kp->page);
		return kp;
	}

	kp->slot = kvt_shadow_slot(entry, index);
	ret = kvtier_page_publish(kp, entry);
	if (ret == -EAGAIN)
		goto retry;
	if (ret)
		return ERR_PTR(ret);
	page = kp->page;
	get_page(page);
	kvtier_note_refault(region, index, entry);

	ra_max = single ? 1 : kvtier_readahead_window(region, index);
	ra = kmalloc_array(ra_max, sizeof(*ra), GFP_KERNEL);
	if (!ra) {
		ra = &kp;
		ra_max = 1;
	}
	ra[0] = kp;
	nr_ra = 1 + kvtier_readahead(region, index, kp->slot, ra + 1, ra_max - 1);
	WRITE_ONCE(region->ra_next, index + nr_ra);
	kvtier_count(tier, KVT_STAT_READAHEAD, nr_ra - 1);
	ret = kvtier_io_read(tier, ra, nr_ra);
	if (ret) {
		unsigned int i;

		/*
		 * Not submitted: readahead pages are marked failed and unlocked
		 * (the next access reads them again), and ours is undone.
		 */
		for (i = 1; i < nr_ra; i++) {
			kvt_pg_set(ra[i], KVT_PG_ERROR);
			unlock_page(ra[i]->page);
		}
		if (ra != &kp)
			kfree(ra);
		kvtier_page_unread(kp);
		put_page(page);
		return ERR_PTR(ret);
	}
	if (ra != &kp)
		kfree(ra);

	/*
	 * The read completion unlocks the page: wait for this page only. Our
	 * reference keeps evictors away, but another task that faulted on
	 * the page may have locked it first, found the read failed and freed
	 * kp (kvtier_page_unread()): compare before using it, as above.
	 */
	lock_page(page);
	if (!kvtier_page_is_at(region, index, kp, page)) {
		unlock_page(page);
		put_page(page);
		if (++failed >= KVTIER_READ_TRIES)
			return ERR_PTR(-EIO);
		single = true;
		goto retry;
	}
	if (!kvtier_page_ready(kp)) {
		kvtier_page_unread(kp);
		put_page(page);
		/*
		 * A bio with readahead fails as a whole, also for a bad
		 * sector under one of the readahead pages: read this page
		 * alone before failing the access.
		 */
		if (nr_ra > 1) {
			single = true;
			goto retry;
		}
		return ERR_PTR(-EIO);
	}
	*how = KVT_GET_MAJOR;
	return kp;
}

/*
 * Start reading every page of [@first, @last] that is only on the
 * namespace, in bios of up to BIO_MAX_VECS pages (@kps has room for as
 * many), counting them in @stat. Walks only the entries that are on the
 * namespace, yields the CPU between bios, charges only free budget.
 * Returns 0, or -ENOBUFS (the budget is full), another -errno (a bio could
 * not be started), -ENXIO (the region is being destroyed): it stopped.
 */
static int kvtier_read_range(struct kvtier_region *region, pgoff_t first,
			     pgoff_t last, struct kvtier_page **kps,
			     enum kvtier_stat stat)
{
	unsigned long index = first;
	void *entry;
	int n;

	while ((entry = xa_find(&region->pages, &index, last, XA_PRESENT))) {
		if (!refcount_read(&region->users))
			return -ENXIO;
		n = 0;
		if (xa_is_value(entry)) {
			n = kvtier_read_run(region, index,
					    min_t(pgoff_t, BIO_MAX_VECS,
						  last - index + 1), kps);
			if (n < 0)
				return n;
			kvtier_count(region->tier, stat, n);
		}
		if (index + max(n, 1) - 1 >= last)
			break;
		index += max(n, 1);
		cond_resched();
	}
	return 0;
}

/*
 * How far ahead of a pread the pages it asked for are kept submitted:
 * half of max_inflight_kb (room for write-back), a quarter of the budget
 * (pages read ahead must not push out those about to be copied).
 */
static pgoff_t kvtier_request_ahead(struct kvtier_tier *tier)
{
	return max(1UL, min(kvtier_kb_pages(READ_ONCE(tier->knobs.max_inflight_kb) / 2),
			    kvtier_budget_pages(tier) / 4));
}

/**
 * kvtier_read_request() - readahead sized to a pread
 * @region: the region
 * @index: the page the caller copies next
 * @last: the last page of its request
 * @next: the first page not yet submitted for this request (start with
 *        @index); advanced here
 *
 * Keeps the request's pages that are only on the namespace submitted up to
 * kvtier_request_ahead() pages past @index, in bios as large as the runs
 * of consecutive slots allow, without waiting for budget (a page it could
 * not take is read by kvtier_get_page() as before, and submitting resumes
 * half a distance on). Called before each page; submits again when less
 * than half the distance is left.
 */
void kvtier_read_request(struct kvtier_region *region, pgoff_t index,
			 pgoff_t last, pgoff_t *next)
{
	pgoff_t ahead = kvtier_request_ahead(region->tier), end;
	struct kvtier_page **kps;

	*next = max(*next, index);
	if (*next > last || *next - index > ahead / 2)
		return;
	end = min(last, index + ahead);
	kps = kmalloc_array(BIO_MAX_VECS, sizeof(*kps), GFP_KERNEL);
	if (kps && kvtier_read_range(region, *next, end, kps,
				     KVT_STAT_READAHEAD) == 0)
		*next = end + 1;
	else	/* budget full or no memory: page by page for a while */
		*next = min(last + 1, index + ahead / 2 + 1);
	kfree(kps);
}

/**
 * kvtier_get_page_blank() - the page at @index, for a caller that
 * overwrites every byte of it
 * @region: the region
 * @index: page index in @region
 * @how: what was done: KVT_GET_BLANK, or as kvtier_get_page()
 *
 * A resident page is returned as kvtier_get_page() returns it. Any other
 * is neither read back from the namespace nor zero-filled: *@how is
 * KVT_GET_BLANK and the page is published locked and not up to date, so
 * every other user waits for the lock. The caller writes it (holding the
 * lock) and ends with kvtier_page_blank_end(). Errors as kvtier_get_page().
 */
struct kvtier_page *kvtier_get_page_blank(struct kvtier_region *region,
					  pgoff_t index, enum kvtier_get *how)
{
	struct kvtier_page *kp;
	void *entry;
	int ret;

	for (;;) {
		entry = xa_load(&region->pages, index);
		if (entry && !xa_is_value(entry))
			return kvtier_get_page(region, index, how);
		kp = kvtier_page_new(region, index, true);
		if (IS_ERR(kp))
			return kp;
		/* Write-back replaces (or, copy-on-write, defers) the old slot. */
		if (entry)
			kp->slot = kvt_shadow_slot(entry, index);
		ret = kvtier_page_publish(kp, entry);
		if (ret == -EAGAIN)
			continue;
		if (ret)
			return ERR_PTR(ret);
		get_page(kp->page);
		*how = KVT_GET_BLANK;
		return kp;
	}
}

/**
 * kvtier_page_blank_end() - a KVT_GET_BLANK page was written
 * @kp: the page, locked, with the caller's reference
 * @filled: bytes the caller wrote from its start
 *
 * All of it, or a page that was never written before (the rest reads as
 * zero): it is up to date, and still locked; returns true. A short write
 * over a page that is on the namespace cannot be completed without reading
 * it: the page is undone as a failed read is (unlocked, the slot back in
 * the xarray, the caller's reference still to drop) and false returned:
 * nothing of the write took effect.
 */
bool kvtier_page_blank_end(struct kvtier_page *kp, size_t filled)
{
	if (filled < PAGE_SIZE && kp->slot != KVTIER_NO_SLOT) {
		kvtier_page_unread(kp);
		return false;
	}
	if (filled < PAGE_SIZE)
		memzero_page(kp->page, filled, PAGE_SIZE - filled);
	kvt_pg_set(kp, KVT_PG_UPTODATE);
	return true;
}

/* Regions of a tier whose WILLNEED prefetch may be queued at once. */
#define KVTIER_PREFETCH_MAX	16

/* Take the range WILLNEED asked for; false if there is none. */
static bool kvtier_prefetch_take(struct kvtier_region *region, pgoff_t *first,
				 pgoff_t *last)
{
	bool some;

	spin_lock(&region->pf_lock);
	some = region->pf_first <= region->pf_last;
	*first = region->pf_first;
	*last = region->pf_last;
	region->pf_first = ULONG_MAX;
	region->pf_last = 0;
	spin_unlock(&region->pf_lock);
	return some;
}

/*
 * WILLNEED: read what fits in the free budget; never stalls or evicts.
 * Walks only the entries that are on the namespace (a fresh region's
 * pages are absent: nothing to walk), yields the CPU between bios, and
 * stops when the budget is full or the region is being destroyed.
 */
void kvtier_prefetch_work(struct work_struct *work)
{
	struct kvtier_region *region = container_of(work, struct kvtier_region,
						    pf_work);
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page **kps;
	pgoff_t first, last;

	kps = kmalloc_array(BIO_MAX_VECS, sizeof(*kps), GFP_KERNEL);
	while (kps && kvtier_prefetch_take(region, &first, &last)) {
		if (kvtier_read_range(region, first, last, kps,
				      KVT_STAT_PREFETCH) < 0)
			break;
	}
	kfree(kps);
	atomic_dec(&tier->nr_prefetch);
	kvtier_region_put(region);
}

/*
 * Ask for [@first, @last] to be prefetched: widen the region's pending
 * range and queue its prefetch unless it is queued already. Beyond
 * KVTIER_PREFETCH_MAX regions prefetching at once, the advice waits for
 * the region's next call (it is advice).
 */
void kvtier_prefetch(struct kvtier_region *region, pgoff_t first,
		     pgoff_t last)
{
	struct kvtier_tier *tier = region->tier;

	spin_lock(&region->pf_lock);
	region->pf_first = min(region->pf_first, first);
	region->pf_last = max(region->pf_last, last);
	spin_unlock(&region->pf_lock);
	if (work_pending(&region->pf_work))
		return;
	if (atomic_inc_return(&tier->nr_prefetch) > KVTIER_PREFETCH_MAX) {
		atomic_dec(&tier->nr_prefetch);
		return;
	}
	refcount_inc(&region->ref);
	if (!queue_work(kvtier_wq, &region->pf_work)) {
		atomic_dec(&tier->nr_prefetch);
		kvtier_region_put(region);
	}
}
