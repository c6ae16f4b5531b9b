// SPDX-License-Identifier: GPL-2.0
/*
 * A region: the KV bytes one open file of /dev/kvtierN maps. This file
 * serves page faults (kvtier_vm_fault), tracks dirtiness (page_mkwrite),
 * and implements pread/pwrite, fadvise and fsync over the same pages.
 *
 * Every mapping of a region shares the region's own address_space (a
 * private anonymous inode, installed as the file's f_mapping at open), so
 * eviction unmaps a page from every process with unmap_mapping_range(), as
 * DRM GEM and TTM do.
 *
 * Dirty tracking: pages are mapped read-only first (the mapping wants
 * write notification because it has page_mkwrite); the first write faults
 * into kvtier_vm_mkwrite, which marks the page dirty under its page lock.
 * Write-back unmaps a page before writing it, so every write after the
 * write-back faults again: a page without KVT_PG_DIRTY has no writable PTE.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/fadvise.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "kvtier.h"
#include "kvtier_trace.h"

/* Neighbouring resident pages mapped by one fault (fault-around). */
#define KVTIER_FAULT_AROUND_PAGES	16

static atomic64_t kvtier_region_ids = ATOMIC64_INIT(0);

static void kvtier_ra_work(struct work_struct *work);
static void kvtier_prefetch_work(struct work_struct *work);

bool kvtier_region_tryget(struct kvtier_region *region)
{
	return refcount_inc_not_zero(&region->ref);
}

void kvtier_region_put(struct kvtier_region *region)
{
	if (refcount_dec_and_test(&region->ref))
		wake_up_var(&region->ref);
}

/*
 * A new region of @size bytes whose mappings share @inode's address_space,
 * with one user (the caller's file). Not yet visible: see
 * kvtier_region_publish().
 */
struct kvtier_region *kvtier_region_create(struct kvtier_tier *tier,
					   struct inode *inode, loff_t size)
{
	struct kvtier_region *region;

	/* Charged to the creator's memory cgroup; CRCs come as pages do. */
	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return ERR_PTR(-ENOMEM);
	xa_init(&region->crcs);
	region->tier = tier;
	region->inode = inode;
	ihold(inode);
	region->nr_pages = size >> PAGE_SHIFT;
	xa_init(&region->pages);
	INIT_WORK(&region->ra_work, kvtier_ra_work);
	spin_lock_init(&region->pf_lock);
	region->pf_first = ULONG_MAX;
	region->pf_last = 0;
	INIT_WORK(&region->pf_work, kvtier_prefetch_work);
	refcount_set(&region->ref, 1);
	refcount_set(&region->users, 1);
	region->id = atomic64_inc_return(&kvtier_region_ids);
	region->owner = current_fsuid();
	region->gid = current_fsgid();
	region->created = ktime_get_real_seconds();
	region->last_use = jiffies;
	INIT_LIST_HEAD(&region->node);
	return region;
}

/* Seconds since the epoch of the region's last fault, read or write. */
time64_t kvtier_region_last_used(struct kvtier_region *region)
{
	return ktime_get_real_seconds() -
		jiffies_to_msecs(jiffies - READ_ONCE(region->last_use)) /
		MSEC_PER_SEC;
}

/*
 * Make a region visible in the tier's list (debugfs, names, detach),
 * charged to its owner, without a bound: a region the namespace holds.
 * Errors: ENOMEM.
 */
int kvtier_region_publish(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	int ret = kvtier_user_prepare(tier, region->owner);

	if (ret)
		return ret;
	spin_lock(&tier->regions_lock);
	kvtier_region_link(region);
	spin_unlock(&tier->regions_lock);
	return 0;
}

void kvtier_page_free(struct kvtier_page *kp)
{
	kmem_cache_free(kvtier_page_cache, kp);
}

/*
 * Give back a run of a destroyed region's slots. A persistent region's may
 * be named by the last commit: they are deferred to the next one (queued
 * now), unless the region is only being forgotten (detach), when the
 * namespace keeps them.
 */
static void kvtier_region_free_slots(struct kvtier_region *region,
				     unsigned long *run, unsigned long *len)
{
	struct kvtier_tier *tier = region->tier;

	if (!*len)
		return;
	if (!region->persistent) {
		kvtier_io_discard(tier, *run, *len);
		kvtier_slots_free(&tier->slots, *run, *len);
	} else if (READ_ONCE(tier->store.dropping)) {
		kvtier_slots_free(&tier->slots, *run, *len);
	} else {
		kvtier_slots_defer(&tier->slots, *run, *len);
	}
	*len = 0;
}

/*
 * Wait for evictors and workers to let go, and free every page and slot of
 * the region (discarding the slots). No file, mapping or name remains.
 */
static void kvtier_region_destroy(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long run = 0, len = 0, slot;
	unsigned long index;
	void *entry;

	spin_lock(&tier->regions_lock);
	kvtier_region_unlink(region);
	spin_unlock(&tier->regions_lock);
	kvtier_region_put(region);
	wait_var_event(&region->ref, !refcount_read(&region->ref));

	xa_for_each(&region->pages, index, entry) {
		if (xa_is_value(entry)) {
			slot = kvt_shadow_slot(entry);
		} else {
			struct kvtier_page *kp = entry;

			slot = kp->slot;
			/*
			 * A WILLNEED prefetch lets go of the region when its
			 * bios are submitted, not when they complete: wait
			 * for the completion, which still writes to kp.
			 */
			folio_wait_locked(page_folio(kp->page));
			/* Pins go with their files, which are all gone. */
			if (WARN_ON_ONCE(kvt_pg_test(kp, KVT_PG_PINNED)))
				atomic_long_dec(&tier->nr_pinned);
			kvtier_pool_del(tier, kp);
			put_page(kp->page);
			kvtier_page_free(kp);
		}
		cond_resched();
		if (slot == KVTIER_NO_SLOT)
			continue;
		if (len && slot == run + len) {
			len++;
			continue;
		}
		kvtier_region_free_slots(region, &run, &len);
		run = slot;
		len = 1;
	}
	kvtier_region_free_slots(region, &run, &len);
	if (region->persistent && !READ_ONCE(tier->store.dropping))
		kvtier_store_kick(tier);
	xa_destroy(&region->pages);
	iput(region->inode);
	kvtier_crcs_destroy(region);
	kfree(region);
}

/* A file closed, or the name was unlinked. */
void kvtier_region_put_user(struct kvtier_region *region)
{
	if (refcount_dec_and_test(&region->users))
		kvtier_region_destroy(region);
}

/* A new resident page for @index, locked, charged to the budget. */
static struct kvtier_page *kvtier_page_new(struct kvtier_region *region,
					   pgoff_t index, bool may_wait)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page *kp;
	int ret;

	ret = kvtier_pool_charge(tier, may_wait);
	if (ret)
		return ERR_PTR(ret);
	/* Zeroed: a field added later (pins, crc) starts at 0, not garbage. */
	kp = kvtier_should_fail(KVT_FAULT_PAGE_ALLOC) ? NULL :
		kmem_cache_zalloc(kvtier_page_cache, GFP_KERNEL);
	if (!kp)
		goto err_uncharge;
	kp->page = alloc_page(GFP_HIGHUSER | __GFP_NOWARN);
	if (!kp->page)
		goto err_free;
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
	if (xa_load(&region->pages, kp->index) == kp)
		__xa_store(&region->pages, kp->index, kvt_mk_shadow(kp->slot, 0), 0);
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
static bool kvtier_page_ready(struct kvtier_page *kp)
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
static void kvtier_note_refault(struct kvtier_region *region, void *shadow)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long now = atomic_long_read(&tier->evict_clock);
	unsigned long distance = (now - kvt_shadow_clock(shadow)) & KVT_CLOCK_MASK;

	if (kvt_shadow_clock(shadow) && distance < kvtier_budget_pages(tier)) {
		kvtier_count(tier, KVT_STAT_REFAULT, 1);
		atomic_long_inc(&region->nr_refaults);
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

		if (!xa_is_value(entry) || kvt_shadow_slot(entry) != slot + 1 + n)
			break;
		kp = kvtier_page_new(region, i, false);
		if (IS_ERR(kp))
			break;
		kp->slot = slot + 1 + n;
		if (kvtier_page_publish(kp, entry))
			break;
		kvtier_note_refault(region, entry);
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
	unsigned int pages = 1 + (READ_ONCE(region->tier->knobs.readahead_kb) >>
				  (PAGE_SHIFT - 10));
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
	kp->slot = kvt_shadow_slot(entry);
	if (kvtier_page_publish(kp, entry))
		return 0;
	kvtier_note_refault(region, entry);
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
	return min(kb >> (PAGE_SHIFT - 10), kvtier_budget_pages(tier) / 4);
}

/*
 * Asynchronous readahead of a sequential run: read from where the region's
 * last read ended up to kvtier_ra_ahead() pages past the reader, in bios of
 * one readahead window each. Stops at a page that is not only on the
 * namespace, when the budget is full, and when the run turns random.
 */
static void kvtier_ra_work(struct work_struct *work)
{
	struct kvtier_region *region = container_of(work, struct kvtier_region,
						    ra_work);
	struct kvtier_tier *tier = region->tier;
	unsigned int win = clamp_t(unsigned int,
				   READ_ONCE(tier->knobs.readahead_kb) >>
				   (PAGE_SHIFT - 10), 1, BIO_MAX_VECS);
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
static void kvtier_ra_async(struct kvtier_region *region, pgoff_t index)
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

/* How a page was found; the values are the kvtier_fault tracepoint's kind. */
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
	bool single = false;
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
		xa_unlock(&region->pages);
		lock_page(page);
		/* kp may have been freed while we slept: compare first. */
		if (xa_load(&region->pages, index) != kp || kp->page != page) {
			unlock_page(page);
			put_page(page);
			goto retry;
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
		clear_highpage(kp->page);
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

	kp->slot = kvt_shadow_slot(entry);
	ret = kvtier_page_publish(kp, entry);
	if (ret == -EAGAIN)
		goto retry;
	if (ret)
		return ERR_PTR(ret);
	page = kp->page;
	get_page(page);
	kvtier_note_refault(region, entry);

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
	if (xa_load(&region->pages, index) != kp || kp->page != page) {
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
 * Map the already-resident neighbours of a fault read-only, so a
 * sequential pass takes one fault per window, not one per page. Only pages
 * that can be locked without waiting are mapped. One walk of the xarray
 * under one xa_lock finds them (a fresh region's neighbours are absent,
 * and a zero-fill fault then costs one short walk, not one lookup each).
 */
static void kvtier_fault_around(struct vm_fault *vmf,
				struct kvtier_region *region)
{
	struct kvtier_page *kps[KVTIER_FAULT_AROUND_PAGES];
	struct page *pages[KVTIER_FAULT_AROUND_PAGES];
	pgoff_t idx[KVTIER_FAULT_AROUND_PAGES];
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t first = round_down(vmf->pgoff, KVTIER_FAULT_AROUND_PAGES);
	pgoff_t last = first + KVTIER_FAULT_AROUND_PAGES - 1;
	XA_STATE(xas, &region->pages, first);
	unsigned int mapped = 0, n = 0, i;
	void *entry;

	/* Only indexes this VMA maps and the region has. */
	first = max(first, vma->vm_pgoff);
	last = min3(last, vma->vm_pgoff + vma_pages(vma) - 1,
		    region->nr_pages - 1);
	xas_set(&xas, first);
	xa_lock(&region->pages);
	xas_for_each(&xas, entry, last) {
		if (xa_is_value(entry) || xas.xa_index == vmf->pgoff)
			continue;
		kps[n] = entry;
		pages[n] = kps[n]->page;
		idx[n] = xas.xa_index;
		get_page(pages[n]);
		n++;
	}
	xa_unlock(&region->pages);

	for (i = 0; i < n; i++) {
		struct kvtier_page *kp = kps[i];
		struct page *page = pages[i];
		pgoff_t index = idx[i];
		unsigned long addr = vma->vm_start +
			((index - vma->vm_pgoff) << PAGE_SHIFT);

		/* kp may be freed once unlocked: compare before using it. */
		if (trylock_page(page)) {
			if (xa_load(&region->pages, index) == kp &&
			    kp->page == page && kvtier_page_ready(kp) &&
			    !vm_insert_page(vma, addr, page))
				mapped++;
			unlock_page(page);
		}
		put_page(page);
	}
	if (mapped)
		kvtier_count(region->tier, KVT_STAT_FAULT_AROUND, mapped);
}

static const enum kvtier_hist_id kvtier_fault_hist[] = {
	[KVT_GET_MINOR] = KVT_HIST_FAULT_MINOR,
	[KVT_GET_ZERO] = KVT_HIST_FAULT_ZERO,
	[KVT_GET_MAJOR] = KVT_HIST_FAULT_MAJOR,
};

static const enum kvtier_stat kvtier_fault_stat[] = {
	[KVT_GET_MINOR] = KVT_STAT_FAULT_MINOR,
	[KVT_GET_ZERO] = KVT_STAT_FAULT_ZERO,
	[KVT_GET_MAJOR] = KVT_STAT_FAULT_MAJOR,
};

/*
 * What a fault answers for kvtier_get_page()'s error: an allocation that
 * failed is the kernel's memory shortage (VM_FAULT_OOM: the memory cgroup
 * or the core handles it and the access is retried, as for the page
 * cache); a fatal signal needs no answer (the task dies before the access
 * is retried); everything else - a read that failed or did not match its
 * CRC, no namespace space, a budget nothing could be evicted from for
 * about 2 s - is the data not being available: SIGBUS, as for a file.
 */
static vm_fault_t kvtier_fault_errno(long err)
{
	switch (err) {
	case -ENOMEM:
		return VM_FAULT_OOM;
	case -EINTR:
		return VM_FAULT_NOPAGE;
	default:
		return VM_FAULT_SIGBUS;
	}
}

/* The page fault handler: where a KV page is served. */
static vm_fault_t kvtier_vm_fault(struct vm_fault *vmf)
{
	struct kvtier_region *region = vmf->vma->vm_private_data;
	struct kvtier_tier *tier = region->tier;
	u64 start = ktime_get_ns(), ns;
	struct kvtier_page *kp;
	enum kvtier_get how;

	if (vmf->pgoff >= region->nr_pages)
		return VM_FAULT_SIGBUS;

	kp = kvtier_get_page(region, vmf->pgoff, &how);
	if (IS_ERR(kp))
		return kvtier_fault_errno(PTR_ERR(kp));
	kvtier_fault_around(vmf, region);
	kvtier_ra_async(region, vmf->pgoff);

	ns = ktime_get_ns() - start;
	kvtier_count(tier, kvtier_fault_stat[how], 1);
	kvtier_hist_add(&tier->lat[kvtier_fault_hist[how]], ns);
	atomic_long_inc(&region->nr_faults);
	WRITE_ONCE(region->last_use, jiffies);
	trace_kvtier_fault(tier->id, region->id,
			   (u64)vmf->pgoff << PAGE_SHIFT, how, ns);

	/* Our reference becomes the PTE's; the core unlocks the page. */
	vmf->page = kp->page;
	return VM_FAULT_LOCKED | (how == KVT_GET_MAJOR ? VM_FAULT_MAJOR : 0);
}

/* First write to a mapped page since it was mapped or written back. */
static vm_fault_t kvtier_vm_mkwrite(struct vm_fault *vmf)
{
	struct kvtier_region *region = vmf->vma->vm_private_data;
	struct page *page = vmf->page;
	struct kvtier_page *kp;
	void *entry;

	lock_page(page);
	/*
	 * The entry may be another page's kp, which only its own page lock
	 * keeps alive: look at it under the xa_lock, which every free of a
	 * visible kp takes to remove it first. Ours (same page, locked here)
	 * then stays.
	 */
	xa_lock(&region->pages);
	entry = xa_load(&region->pages, vmf->pgoff);
	kp = entry && !xa_is_value(entry) &&
	     ((struct kvtier_page *)entry)->page == page ? entry : NULL;
	xa_unlock(&region->pages);
	if (!kp) {
		/* Evicted meanwhile: let the access fault it in again. */
		unlock_page(page);
		return VM_FAULT_NOPAGE;
	}
	kvtier_pool_mark_dirty(region->tier, kp);
	return VM_FAULT_LOCKED;
}

static const struct vm_operations_struct kvtier_vm_ops = {
	.fault = kvtier_vm_fault,
	.page_mkwrite = kvtier_vm_mkwrite,
};

/*
 * mmap(MAP_SHARED) of a file without a region creates one of the mapping's
 * length; later mappings map (part of) it. Errors: EINVAL (MAP_PRIVATE, a
 * first mapping at a non-zero offset, beyond the region's end), ENODEV (no
 * namespace), ENOSPC (larger than the namespace), ENOMEM.
 */
int kvtier_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kvtier_file *kf = file->private_data;
	unsigned long pages = vma_pages(vma);
	struct kvtier_region *region;
	int ret = 0;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&kf->lock);
	if (!kf->region) {
		if (vma->vm_pgoff) {
			ret = -EINVAL;
			goto out;
		}
		ret = kvtier_file_create_region(kf, (loff_t)pages << PAGE_SHIFT);
		if (ret)
			goto out;
	}
	region = kf->region;
	if (vma->vm_pgoff >= region->nr_pages ||
	    pages > region->nr_pages - vma->vm_pgoff) {
		ret = -EINVAL;
		goto out;
	}
	if (kf->readonly) {
		/* Bound read-only: no writable mapping, now or by mprotect. */
		if (vma->vm_flags & VM_WRITE) {
			ret = -EACCES;
			goto out;
		}
		kvtier_vm_flags_clear(vma, VM_MAYWRITE);
	}
	vma->vm_ops = &kvtier_vm_ops;
	vma->vm_private_data = region;
	/*
	 * MIXEDMAP lets fault-around insert pages with vm_insert_page(); they
	 * are ordinary refcounted pages (GUP and HMM see them). DONTEXPAND:
	 * a region has a fixed size, mremap may move but not grow it.
	 */
	kvtier_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
out:
	mutex_unlock(&kf->lock);
	return ret;
}

/* The region @vma maps, or NULL if it is not a mapping of a kvtier file. */
struct kvtier_region *kvtier_vma_region(struct vm_area_struct *vma)
{
	return vma->vm_ops == &kvtier_vm_ops ? vma->vm_private_data : NULL;
}

/* The region @file is bound to, or NULL. */
struct kvtier_region *kvtier_file_region(struct file *file)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_region *region;

	mutex_lock(&kf->lock);
	region = kf->region;
	mutex_unlock(&kf->lock);
	return region;
}

/* KVTIER_IOC_REGION_INFO. Errors: ENXIO (no region bound), EFAULT. */
long kvtier_ioctl_region_info(struct file *file,
			      struct kvtier_region_info __user *uinfo)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_region *r = kvtier_file_region(file);
	struct kvtier_region_info info = {};

	if (!r)
		return -ENXIO;
	/* name and pinned change under the tier's names mutex: a snapshot. */
	strscpy(info.name, r->name, sizeof(info.name));
	info.id = r->id;
	info.size = (u64)r->nr_pages << PAGE_SHIFT;
	info.resident = (u64)atomic_long_read(&r->nr_resident) << PAGE_SHIFT;
	info.namespace = (u64)atomic_long_read(&r->nr_slots) << PAGE_SHIFT;
	info.dirty = (u64)atomic_long_read(&r->nr_dirty) << PAGE_SHIFT;
	info.pinned = (u64)atomic_long_read(&r->nr_pinned) << PAGE_SHIFT;
	info.faults = atomic_long_read(&r->nr_faults);
	info.refaults = atomic_long_read(&r->nr_refaults);
	info.gpu_bytes = atomic_long_read(&r->gpu_bytes);
	info.owner = from_kuid_munged(&init_user_ns, r->owner);
	info.mode = r->mode;
	/* A linked name holds one user reference of its own. */
	info.users = refcount_read(&r->users) - (READ_ONCE(r->linked) ? 1 : 0);
	if (READ_ONCE(r->persistent))
		info.flags |= KVTIER_OPEN_PERSISTENT;
	if (READ_ONCE(r->pinned))
		info.flags |= KVTIER_REGION_PINNED;
	if (READ_ONCE(r->sealed))
		info.flags |= KVTIER_REGION_SEALED;
	if (kf->readonly)
		info.flags |= KVTIER_OPEN_RDONLY;
	info.error = READ_ONCE(r->err);

	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/* pread: bytes of the region; absent pages read as zero without I/O. */
ssize_t kvtier_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct kvtier_region *region = kvtier_file_region(iocb->ki_filp);
	loff_t size, pos = iocb->ki_pos;
	ssize_t done = 0;

	if (!region)
		return -ENXIO;
	WRITE_ONCE(region->last_use, jiffies);
	size = (loff_t)region->nr_pages << PAGE_SHIFT;
	while (iov_iter_count(to) && pos < size) {
		pgoff_t index = pos >> PAGE_SHIFT;
		size_t off = offset_in_page(pos);
		size_t n = min_t(size_t, PAGE_SIZE - off, iov_iter_count(to));
		struct kvtier_page *kp;
		enum kvtier_get how;
		size_t copied;

		n = min_t(loff_t, n, size - pos);
		if (!xa_load(&region->pages, index)) {
			copied = iov_iter_zero(n, to);
		} else {
			kp = kvtier_get_page(region, index, &how);
			if (IS_ERR(kp)) {
				if (!done)
					done = PTR_ERR(kp);
				break;
			}
			kvtier_ra_async(region, index);
			/* Copy unlocked: the destination may be this very page. */
			unlock_page(kp->page);
			copied = copy_page_to_iter(kp->page, off, n, to);
			put_page(kp->page);
		}
		pos += copied;
		done += copied;
		if (copied < n) {
			if (!done)
				done = -EFAULT;
			break;
		}
	}
	if (done > 0)
		iocb->ki_pos = pos;
	return done;
}

/*
 * pwrite: user bytes are first copied into a bounce page, outside any page
 * lock (the source may be a mapping of this region), then into the page.
 * Writing at or past the end: -EFBIG; bound read-only: -EACCES.
 */
ssize_t kvtier_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct kvtier_region *region = kvtier_file_region(iocb->ki_filp);
	struct kvtier_file *kf = iocb->ki_filp->private_data;
	loff_t size, pos = iocb->ki_pos;
	ssize_t done = 0;
	void *bounce;

	if (!region)
		return -ENXIO;
	if (kf->readonly)
		return -EACCES;
	size = (loff_t)region->nr_pages << PAGE_SHIFT;
	if (iov_iter_count(from) && pos >= size)
		return -EFBIG;
	WRITE_ONCE(region->last_use, jiffies);
	bounce = (void *)__get_free_page(GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	while (iov_iter_count(from) && pos < size) {
		pgoff_t index = pos >> PAGE_SHIFT;
		size_t off = offset_in_page(pos);
		size_t n = min_t(size_t, PAGE_SIZE - off, iov_iter_count(from));
		struct kvtier_page *kp;
		enum kvtier_get how;

		n = min_t(loff_t, n, size - pos);
		if (copy_from_iter(bounce, n, from) != n) {
			if (!done)
				done = -EFAULT;
			break;
		}
		kp = kvtier_get_page(region, index, &how);
		if (IS_ERR(kp)) {
			if (!done)
				done = PTR_ERR(kp);
			break;
		}
		memcpy_to_page(kp->page, off, bounce, n);
		kvtier_pool_mark_dirty(region->tier, kp);
		unlock_page(kp->page);
		put_page(kp->page);
		pos += n;
		done += n;
	}
	free_page((unsigned long)bounce);
	if (done > 0)
		iocb->ki_pos = pos;
	return done;
}

/*
 * Evict a clean page for DONTNEED; counts in *@busy a page some transient
 * reference (an LRU scan, a lookup) kept in place. Pinned pages stay.
 */
static void kvtier_drop_page(struct kvtier_tier *tier, struct kvtier_page *kp,
			     enum kvtier_stat stat, unsigned int *busy,
			     bool unmapped)
{
	bool pinned = kvt_pg_test(kp, KVT_PG_PINNED);
	int err = kvtier_evict_page(kp, unmapped);

	if (!err)
		kvtier_count(tier, stat, 1);
	else if (err == -EBUSY && !pinned)
		(*busy)++;
}

/*
 * Write back a batch of locked dirty pages of a region; with @evict, drop
 * those that came out clean. Releases every page's lock and reference.
 */
static int kvtier_region_flush_batch(struct kvtier_tier *tier,
				     struct kvtier_page **batch,
				     unsigned int nb, bool evict,
				     unsigned int *busy)
{
	unsigned int i;
	int ret;

	ret = kvtier_writeback_locked(tier, batch, nb);
	for (i = 0; i < nb; i++) {
		struct kvtier_page *kp = batch[i];

		if (evict && !kvt_pg_test(kp, KVT_PG_DIRTY)) {
			/* Written back with the lock held: unmapped still. */
			kvtier_drop_page(tier, kp, KVT_STAT_EVICT_DIRTY, busy,
					 true);
			continue;
		}
		unlock_page(kp->page);
		put_page(kp->page);
	}
	return ret;
}

/* Entries a walk looks at under one hold of the xa_lock. */
#define KVTIER_WALK_BATCH	1024

/*
 * The next resident page of @region at or after *@index, up to @last, with
 * a reference; NULL when there is none. A mostly evicted region holds
 * mostly slot entries: the walk lets go of the xa_lock (faults wait on it)
 * and of the CPU every KVTIER_WALK_BATCH of them.
 */
static struct kvtier_page *kvtier_next_resident(struct kvtier_region *region,
						unsigned long *index,
						pgoff_t last)
{
	XA_STATE(xas, &region->pages, *index);
	struct kvtier_page *kp = NULL;
	unsigned int seen = 0;
	void *entry;

	xas_lock(&xas);
	xas_for_each(&xas, entry, last) {
		if (xas_retry(&xas, entry))
			continue;
		if (!xa_is_value(entry)) {
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

/*
 * One pass over [first, last]: write back the dirty pages in batches;
 * with @evict, also drop every clean page. Returns the first error; *@busy
 * counts pages that could not be dropped for a transient reference.
 */
static int kvtier_region_writeback_pass(struct kvtier_region *region,
					pgoff_t first, pgoff_t last, bool evict,
					struct kvtier_page **batch,
					unsigned int batch_max,
					unsigned int *busy)
{
	struct kvtier_tier *tier = region->tier;
	unsigned long index = first;
	struct kvtier_page *kp;
	unsigned int nb = 0;
	int ret = 0, err;

	while ((kp = kvtier_next_resident(region, &index, last))) {
		struct page *page = kp->page;

		lock_page(page);
		if (xa_load(&region->pages, index) != kp || kp->page != page) {
			/* Replaced while we waited: look at this index again. */
			unlock_page(page);
			put_page(page);
			continue;
		}
		if (kvt_pg_test(kp, KVT_PG_DIRTY)) {
			batch[nb++] = kp;
			if (nb == batch_max) {
				err = kvtier_region_flush_batch(tier, batch, nb,
								evict, busy);
				if (err && !ret)
					ret = err;
				nb = 0;
			}
		} else if (evict) {
			kvtier_drop_page(tier, kp, KVT_STAT_EVICT_CLEAN, busy,
					 false);
		} else {
			unlock_page(page);
			put_page(page);
		}
		if (index == last)
			break;
		index++;
	}
	if (nb) {
		err = kvtier_region_flush_batch(tier, batch, nb, evict, busy);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

/*
 * Write back the dirty pages of [first, last]; with @evict, also drop every
 * clean page of the range from the pool, going over the range again (a
 * few times at most) for pages a transient reference kept. Such a
 * reference is a task between unlock_page() and put_page() (the
 * background worker after a batch, a racing lookup): on a loaded host it
 * can be descheduled there for a while, so later passes first sleep a
 * jiffy rather than only yield.
 */
static int kvtier_region_writeback(struct kvtier_region *region, pgoff_t first,
				   pgoff_t last, bool evict)
{
	struct kvtier_tier *tier = region->tier;
	unsigned int batch_max = max(1U, READ_ONCE(tier->knobs.writeback_batch_kb)
				     >> (PAGE_SHIFT - 10));
	struct kvtier_page **batch;
	unsigned int busy, pass;
	int ret = 0, err;

	batch = kmalloc_array(batch_max, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;
	for (pass = 0; pass < 8; pass++) {
		busy = 0;
		err = kvtier_region_writeback_pass(region, first, last, evict,
						   batch, batch_max, &busy);
		if (err && !ret)
			ret = err;
		if (!busy || fatal_signal_pending(current))
			break;
		if (pass)
			schedule_timeout_uninterruptible(1);
		else
			cond_resched();
	}
	kfree(batch);
	return ret;
}

/*
 * fsync/fdatasync/msync(MS_SYNC): every dirty page of the range reaches
 * the namespace, and the device cache is flushed; for a persistent region
 * a commit makes the pages (and every other persistent change) durable.
 * Reports a write error that happened since the region was created
 * (sticky, like a filesystem).
 */
int kvtier_file_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	struct kvtier_region *region = kvtier_file_region(file);
	pgoff_t first, last;
	int ret = 0, err;

	if (!region)
		return 0;
	if (start < (loff_t)region->nr_pages << PAGE_SHIFT) {
		first = start >> PAGE_SHIFT;
		last = min_t(loff_t, end >> PAGE_SHIFT, region->nr_pages - 1);
		ret = kvtier_region_writeback(region, first, last, false);
	}
	if (region->persistent)
		err = kvtier_store_commit(region->tier);
	else
		err = kvtier_io_flush(region->tier);
	if (!ret)
		ret = err;
	if (!ret)
		ret = READ_ONCE(region->err);
	return ret;
}

/*
 * Write back every dirty page of @region and drop its pages from the pool
 * (detach: the region is about to be forgotten). Returns the first error.
 */
int kvtier_region_sync(struct kvtier_region *region)
{
	return kvtier_region_writeback(region, 0, region->nr_pages - 1, true);
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
static void kvtier_prefetch_work(struct work_struct *work)
{
	struct kvtier_region *region = container_of(work, struct kvtier_region,
						    pf_work);
	struct kvtier_tier *tier = region->tier;
	struct kvtier_page **kps;
	unsigned long index;
	pgoff_t first, last;
	void *entry;
	int n;

	kps = kmalloc_array(BIO_MAX_VECS, sizeof(*kps), GFP_KERNEL);
	while (kps && kvtier_prefetch_take(region, &first, &last)) {
		index = first;
		while ((entry = xa_find(&region->pages, &index, last,
					XA_PRESENT))) {
			if (!refcount_read(&region->users))
				goto out;
			n = 0;
			if (xa_is_value(entry)) {
				n = kvtier_read_run(region, index,
						    min_t(pgoff_t, BIO_MAX_VECS,
							  last - index + 1), kps);
				if (n < 0)
					goto out;
				kvtier_count(tier, KVT_STAT_PREFETCH, n);
			}
			if (index + max(n, 1) - 1 >= last)
				break;
			index += max(n, 1);
			cond_resched();
		}
	}
out:
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
static void kvtier_prefetch(struct kvtier_region *region, pgoff_t first,
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

/*
 * posix_fadvise: WILLNEED prefetches asynchronously into the pool;
 * DONTNEED writes the range back and drops it from host memory (the data
 * stays on the namespace). Errors: EINVAL (bad advice, negative offset or
 * length, offset at or past the end), ENXIO (no region yet).
 */
int kvtier_file_fadvise(struct file *file, loff_t offset, loff_t len,
			int advice)
{
	struct kvtier_region *region = kvtier_file_region(file);
	loff_t size, end;

	switch (advice) {
	case POSIX_FADV_NORMAL:
	case POSIX_FADV_RANDOM:
	case POSIX_FADV_SEQUENTIAL:
	case POSIX_FADV_NOREUSE:
	case POSIX_FADV_WILLNEED:
	case POSIX_FADV_DONTNEED:
		break;
	default:
		return -EINVAL;
	}
	if (offset < 0 || len < 0)
		return -EINVAL;
	if (!region)
		return -ENXIO;
	size = (loff_t)region->nr_pages << PAGE_SHIFT;
	if (offset >= size)
		return -EINVAL;
	end = (!len || len > size - offset) ? size - 1 : offset + len - 1;

	switch (advice) {
	case POSIX_FADV_WILLNEED:
		kvtier_prefetch(region, offset >> PAGE_SHIFT, end >> PAGE_SHIFT);
		return 0;
	case POSIX_FADV_DONTNEED:
		return kvtier_region_writeback(region, offset >> PAGE_SHIFT,
					       end >> PAGE_SHIFT, true);
	}
	return 0;
}
