// SPDX-License-Identifier: GPL-2.0
/*
 * Direct I/O between the namespace and the caller's memory.
 *
 * Direct reads: a pread of pages that are only on the namespace moves them
 * straight into the caller's memory, in bios into its pinned pages as a
 * block device's O_DIRECT does: no pool page, no charge, no clearing and
 * no copy. Resident pages, holes and every page this path gives back are
 * read through the pool (file.c), so a request may mix the two.
 *
 * It applies to a request at a page-aligned offset into user memory that
 * is page-aligned in every segment (kvtier_direct_ok()): each page of the
 * region then lands in one page of the buffer, whole, and its CRC32C can
 * be checked there. One direct read takes the pages from the request's
 * next one that are only on the namespace (shadow entries), up to 4 MiB
 * (and a quarter of the budget), cut into runs of consecutive slots of up
 * to 1 MiB, one bio each, all in flight together. The rules, against
 * concurrent faults, evictions, writes, write-backs and slot reuse:
 *
 * 1. Look up the runs (their slots and CRCs) under the region's xa_lock.
 * 2. For each run in turn: pin the caller's pages into its bio. Pinning
 *    may fault (the buffer may be a mapping of this very tier, whose fault
 *    may wait for room on the namespace, that is for a commit), so it is
 *    done outside anything a commit waits for.
 * 3. Enter tier->direct_srcu and check again, under the xa_lock, that each
 *    page of the run still has the slot looked up; if one does not, the
 *    run and those after it are dropped (the pool reads that page).
 * 4. Submit it; its completion leaves direct_srcu (kvtier_io_*_user()),
 *    so what a commit waits for is I/O in flight, never this task.
 *
 * A slot only goes back to the allocator, to be written with other bytes,
 * through a commit, which frees the slots that pages left before it
 * (kvtier_store_release()), or through a direct write, which frees the
 * slots of the pages it moved (W6); both wait for direct_srcu's readers
 * first. A page whose slot was still the one looked up inside the read
 * side (3) left it, if at all, after the read side began, so its slot is
 * not freed before the read ends: a direct read never sees another page's
 * bytes, in the buffer or in what it returns, with checksum on or off.
 * (Anonymous regions otherwise rewrite a page's slot in place, and free
 * slots only when the region goes, which an open file prevents.) A page
 * written or evicted meanwhile is a write or read concurrent with this
 * one: the pread returns the bytes of before or after, as for any file (an
 * anonymous region's page rewritten in place may be seen part old, part
 * new, as a page cache copy racing a store may).
 *
 * With checksum on, every page's CRC32C is checked on the caller's buffer
 * against the CRC looked up with its slot (a page written without one is
 * left to the pool): each run's by a work on
 * kvtier_wq queued by its completion, so the checks spread over CPUs and
 * overlap the runs still in flight; the reader takes those no work has
 * started (each run's check is claimed once), so it never waits for a
 * work that is not running. The runs up to the first that fails its check
 * or whose read failed are kept; the pages of that one are read again
 * through the pool, which reads and checks once more: a page still wrong
 * there is EIO, never wrong bytes (counted in direct_read_retries).
 *
 * Asynchronous requests (io_uring, aio: !is_sync_kiocb()) that one direct
 * read covers whole (every page only on the namespace) return -EIOCBQUEUED
 * once their bios are submitted, so one thread keeps many in flight. The
 * last completion queues a work on kvtier_direct_wq (not kvtier_wq: its
 * pool reads may wait for budget, that is for room_work there) that
 * makes the same checks, reads the pages of a run that failed through
 * the pool into the pinned buffer, and calls ki_complete(). Any other request, or a part the pool
 * must serve, is served synchronously.
 *
 * The file is FMODE_NOWAIT, so io_uring issues a read inline first, with
 * IOCB_NOWAIT: the asynchronous direct read is what serves it there
 * without waiting for I/O. It pins every run first, then takes their
 * room under max_inflight_kb at once (kvtier_inflight_reserve()), or gives
 * -EAGAIN, instead of waiting for it bio by bio; the room is never held
 * while pinning, whose fault on a mapping of this tier may wait for room
 * too. Pinning may fault the caller's buffer in, the allocations may
 * reclaim, and submit_bio() may wait for a tag or a frozen queue, as for
 * a block device's O_DIRECT without REQ_NOWAIT (a bio the device refused
 * with BLK_STS_AGAIN would count as an I/O error here); the one wait for
 * I/O is the rare start whose recheck found a page changed after some
 * runs went out, which waits for those before it gives -EAGAIN.
 *
 * Direct writes: with the checksum knob off, a pwrite to a region that is
 * not persistent, at a page-aligned offset from page-aligned memory,
 * writes the pages that are not in the pool straight from the caller's
 * pages (kvtier_direct_write()). Only then: with the checksum on, the CRC
 * recorded must be that of the bytes the device stores, and one computed
 * on a buffer the caller may change during the DMA need not be (the pool
 * path copies into pages it locks instead); a persistent region's page
 * records carry every page's CRC. Resident pages and every page this path
 * gives back are written through the pool (file.c). The rules:
 *
 * W1. Plan under the region's xa_lock, from the request's next page, the
 *     pages that are not resident, and note each one's slot (or none: a
 *     page never written); then, outside it, give each run of up to 1 MiB
 *     consecutive fresh slots and room for its CRC flags. A resident page
 *     ends the plan; free slots short of the reserve background
 *     write-back keeps send the request to the pool.
 * W2. Pin the caller's pages of each run into its bio, as a read does.
 * W3. Under the xa_lock, check that each page of the run is still where
 *     the plan found it, and that the tier is not fenced.
 * W4. Submit, outside direct_srcu: the bios write only fresh slots, which
 *     nothing names yet; a page's slot is never written in place here.
 * W5. Once every bio completed, under the xa_lock, each page that is still
 *     where the plan found it takes its fresh slot, without a CRC. The
 *     first page that is not (a fault, a pool write or a read made it
 *     resident meanwhile, or its entry could not be allocated), or a run
 *     whose write failed, ends what is kept: the pool writes that run
 *     again, the next direct write the runs after it. Fresh slots no page
 *     took are freed.
 * W6. The slots the pages taken left are freed after the wait a commit
 *     makes for direct_srcu's readers: a direct read that looked one up
 *     has either finished or will find the page moved.
 *
 * So a page is the old copy until W5 and the new one after, whole: a read
 * or fault racing a direct write sees the bytes of before or after, never
 * a mix, and nothing read after the pwrite returns is older than it. A
 * failed bio leaves the old copy as it was, whatever it wrote: the write
 * is done again through the pool (which keeps the bytes dirty until a
 * write-back succeeds and reports its errors), or, if the caller's loop
 * stops first (a fatal signal, EFAULT), it is short there. A store through
 * a mapping made during the write, to a page W5 then takes, is ordered
 * before the write: the page holds the pwrite's bytes. With the checksum
 * on nothing changes under a reader: no slot it may check is rewritten.
 *
 * Asynchronous writes (io_uring, aio) that one direct write plans whole
 * (no page resident, a fresh slot for each) return -EIOCBQUEUED once
 * their bios are submitted, under IOCB_NOWAIT too (pinned first, then the
 * in-flight room of all taken at once, as for reads). The last completion
 * queues kvtier_direct_write_end() on kvtier_direct_wq, which does W5 and
 * W6, writes the pages not kept through the pool from the pinned buffer,
 * writes back and flushes as O_DIRECT and O_DSYNC ask, and completes the
 * request. One that cannot be started whole takes none of its pages and
 * is served synchronously.
 */
#include <linux/bio.h>
#include <linux/completion.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "kvtier.h"

/*
 * A direct read or write takes at most this many runs (bios), in flight
 * together, of at most BIO_MAX_VECS pages each, and this many pages in all
 * (4 MiB), before it checks them and goes on.
 */
#define KVT_DIRECT_RUNS		16
#define KVT_DIRECT_PAGES	1024

/*
 * One direct read: its bios, the CRCs its pages must have, and for an
 * asynchronous one the request it completes (@iocb, by @end_work). Or one
 * direct write (@write): its bios, how many fresh slots each run holds
 * (@fresh), and each page's slot before (@old; KVTIER_NO_SLOT: never
 * written), which the write frees once the page is taken.
 */
struct kvtier_direct {
	struct kvtier_region *region;
	pgoff_t index;
	bool write;
	bool crc;
	unsigned int retry_to;
	atomic_t pending;
	struct completion done;
	struct kiocb *iocb;
	struct work_struct end_work;
	unsigned int nr_runs;
	struct kvtier_ubio runs[KVT_DIRECT_RUNS];
	unsigned int fresh[KVT_DIRECT_RUNS];
	unsigned long *old;
	u32 crcs[KVT_DIRECT_PAGES];
};

/* Whether a pread at @pos into @to may read pages directly. */
bool kvtier_direct_ok(loff_t pos, const struct iov_iter *to)
{
	return user_backed_iter(to) &&
	       !((iov_iter_alignment(to) | pos) & ~PAGE_MASK);
}

/* The @i-th page of the bio of @ur (the caller's, pinned). */
static struct page *kvtier_direct_page(struct kvtier_ubio *ur, unsigned int i)
{
	struct bvec_iter_all iter;
	struct bio_vec *bv;

	bio_for_each_segment_all(bv, ur->bio, iter)
		if (!i--)
			return bv->bv_page;
	return NULL;
}

static struct kvtier_direct *kvtier_direct_of(struct kvtier_ubio *ur)
{
	return container_of(ur->pending, struct kvtier_direct, pending);
}

/*
 * Check the CRCs of the pages read into @ur's bio (the caller's, pinned),
 * unless the other side (its work, or the reader) claimed it first.
 */
static void kvtier_direct_crcs(struct kvtier_ubio *ur)
{
	const u32 *crcs = kvtier_direct_of(ur)->crcs + ur->first;
	struct bvec_iter_all iter;
	struct bio_vec *bv;
	unsigned int i = 0;

	if (atomic_xchg(&ur->claimed, 1))
		return;
	ur->crc_ok = true;
	bio_for_each_segment_all(bv, ur->bio, iter) {
		void *p = kmap_local_page(bv->bv_page);
		u32 crc = kvtier_crc32c(p + bv->bv_offset, bv->bv_len);

		kunmap_local(p);
		if (bv->bv_len != PAGE_SIZE || crc != crcs[i++]) {
			ur->crc_ok = false;
			break;
		}
	}
}

/* A run's bio completed: check its CRCs on whichever CPU is free. */
static void kvtier_direct_verify(struct work_struct *work)
{
	kvtier_direct_crcs(container_of(work, struct kvtier_ubio, work));
}

/* Every bio of @d completed: wake the reader or queue the async end. */
static void kvtier_direct_ended(struct kvtier_ubio *ur)
{
	struct kvtier_direct *d = kvtier_direct_of(ur);

	if (d->iocb)
		queue_work(kvtier_direct_wq, &d->end_work);
	else
		complete(&d->done);
}

static struct kvtier_direct *kvtier_direct_new(struct kvtier_region *region,
					       pgoff_t index, bool write)
{
	struct kvtier_direct *d = kmalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	d->region = region;
	d->index = index;
	d->write = write;
	d->crc = !write && READ_ONCE(region->tier->knobs.checksum);
	d->nr_runs = 0;
	d->retry_to = 0;
	d->iocb = NULL;
	init_completion(&d->done);
	return d;
}

/*
 * Step 1: look up the pages from @d->index (at most @max) that are only on
 * the namespace, cut into runs of consecutive slots in @d->runs, with each
 * page's CRC in @d->crcs when @d->crc (a page without one, or written
 * without one with the checksum off, ends the lookup: the pool path says
 * what that is, and reads the latter unchecked). Returns the pages found.
 */
static unsigned int kvtier_direct_lookup(struct kvtier_direct *d,
					 unsigned int max)
{
	struct kvtier_region *region = d->region;
	struct kvtier_ubio *ur = NULL;
	unsigned int n;

	xa_lock(&region->pages);
	for (n = 0; n < max; n++) {
		void *entry = xa_load(&region->pages, d->index + n);
		unsigned long slot;

		if (!xa_is_value(entry))
			break;
		if (d->crc && !kvtier_crcs_get(region, d->index + n, &d->crcs[n]))
			break;
		slot = kvt_shadow_slot(entry, d->index + n);
		if (ur && slot == ur->slot + ur->nr && ur->nr < BIO_MAX_VECS) {
			ur->nr++;
			continue;
		}
		if (d->nr_runs == KVT_DIRECT_RUNS)
			break;
		ur = &d->runs[d->nr_runs++];
		*ur = (struct kvtier_ubio){
			.tier = region->tier, .slot = slot, .nr = 1, .first = n,
			.verify = d->crc, .claimed = ATOMIC_INIT(!d->crc),
			.pending = &d->pending, .end = kvtier_direct_ended,
		};
		INIT_WORK(&ur->work, kvtier_direct_verify);
	}
	xa_unlock(&region->pages);
	return n;
}

/*
 * Step 3: whether each page of @ur still has the slot looked up. Caller is
 * inside direct_srcu.
 */
static bool kvtier_direct_still(struct kvtier_direct *d,
				struct kvtier_ubio *ur)
{
	struct kvtier_region *region = d->region;
	unsigned int i;

	xa_lock(&region->pages);
	for (i = 0; i < ur->nr; i++) {
		pgoff_t index = d->index + ur->first + i;
		void *entry = xa_load(&region->pages, index);

		if (!xa_is_value(entry) || kvt_shadow_slot(entry, index) != ur->slot + i)
			break;
	}
	xa_unlock(&region->pages);
	return i == ur->nr;
}

/*
 * Is @entry, page @n of direct write @d, still where the plan found it:
 * absent, or only on the namespace at the slot noted in @d->old?
 */
static bool kvtier_direct_same(struct kvtier_direct *d, unsigned int n,
			       void *entry)
{
	if (d->old[n] == KVTIER_NO_SLOT)
		return !entry;
	return xa_is_value(entry) &&
	       kvt_shadow_slot(entry, d->index + n) == d->old[n];
}

/*
 * Step W3: whether each page of @ur still is where the plan found it, on
 * a tier that still owns its namespace.
 */
static bool kvtier_direct_unchanged(struct kvtier_direct *d,
				    struct kvtier_ubio *ur)
{
	struct kvtier_region *region = d->region;
	unsigned int i;

	if (kvtier_fenced(region->tier))
		return false;
	xa_lock(&region->pages);
	for (i = 0; i < ur->nr; i++)
		if (!kvtier_direct_same(d, ur->first + i,
					xa_load(&region->pages,
						d->index + ur->first + i)))
			break;
	xa_unlock(&region->pages);
	return i == ur->nr;
}

/*
 * Steps 3 and 4 (W3, W4) for a pinned run: a read enters direct_srcu;
 * check its pages, submit it (@reserved: its in-flight room is taken).
 * false, still pinned, when a page changed since the lookup.
 */
static bool kvtier_direct_submit(struct kvtier_direct *d,
				 struct kvtier_ubio *ur, bool reserved)
{
	struct srcu_struct *srcu = &d->region->tier->direct_srcu;

	if (d->write) {
		if (!kvtier_direct_unchanged(d, ur))
			return false;
	} else {
		ur->srcu_idx = __srcu_read_lock(srcu);
		if (!kvtier_direct_still(d, ur)) {
			__srcu_read_unlock(srcu, ur->srcu_idx);
			return false;
		}
	}
	kvtier_io_submit_user(ur, reserved);
	return true;
}

/*
 * Step 2 for run @r of @d: pin its pages from @it, which moves on past
 * them. false when none could be; a run pinned only in part (its @nr
 * tells) sets *@last.
 */
static bool kvtier_direct_pin(struct kvtier_direct *d, unsigned int r,
			      struct iov_iter *it, bool *last)
{
	struct kvtier_ubio *ur = &d->runs[r];
	unsigned int want = ur->nr;

	if (kvtier_io_prepare_user(ur, it, r ? GFP_NOWAIT : GFP_KERNEL))
		return false;
	*last = ur->nr < want;
	iov_iter_advance(it, (size_t)want << PAGE_SHIFT);
	return true;
}

/*
 * Steps 2 to 4, run by run, with the memory @to describes (read into, or
 * written from, with @d->write). @d->pending
 * counts the runs submitted, plus one for the caller; @d->nr_runs becomes
 * their number (0: the first page could not be pinned, or changed). A run
 * pinned only in part is the last.
 */
static unsigned int kvtier_direct_start(struct kvtier_direct *d,
					const struct iov_iter *to)
{
	struct iov_iter it = *to;
	bool last = false;
	unsigned int r;

	atomic_set(&d->pending, 1);
	for (r = 0; r < d->nr_runs && !last; r++) {
		if (!kvtier_direct_pin(d, r, &it, &last))
			break;
		if (!kvtier_direct_submit(d, &d->runs[r], false)) {
			kvtier_io_user_done(d->runs[r].bio);
			break;
		}
	}
	d->nr_runs = r;
	return r;
}

/*
 * The same under IOCB_NOWAIT, in two passes: pin every run, take the
 * in-flight room of them all at once (kvtier_inflight_reserve(); without
 * it none is submitted), then check and submit each. The room is never
 * held while pinning, which may fault on a mapping of this tier whose
 * read waits for room too.
 */
static unsigned int kvtier_direct_start_nowait(struct kvtier_direct *d,
					       const struct iov_iter *to)
{
	struct kvtier_tier *tier = d->region->tier;
	struct iov_iter it = *to;
	unsigned int r, pinned;
	bool last = false;
	long bytes = 0;

	atomic_set(&d->pending, 1);
	for (r = 0; r < d->nr_runs && !last; r++) {
		if (!kvtier_direct_pin(d, r, &it, &last))
			break;
		bytes += (long)d->runs[r].nr << PAGE_SHIFT;
	}
	pinned = r;
	r = 0;
	if (pinned && kvtier_inflight_reserve(tier, bytes)) {
		for (; r < pinned; r++) {
			if (!kvtier_direct_submit(d, &d->runs[r], true))
				break;
			bytes -= (long)d->runs[r].nr << PAGE_SHIFT;
		}
		kvtier_inflight_unreserve(tier, bytes);
	}
	d->nr_runs = r;
	for (; r < pinned; r++)
		kvtier_io_user_done(d->runs[r].bio);
	return d->nr_runs;
}

/* Unpin the caller's pages of the runs of @d, completed. */
static void kvtier_direct_release(struct kvtier_direct *d)
{
	unsigned int r;

	for (r = 0; r < d->nr_runs; r++)
		kvtier_io_user_done(d->runs[r].bio);
}

/*
 * Every bio of @d completed: check the CRCs no work took, and wait for
 * the checks a work took (it is running: a work not started is removed).
 * Ends no bio.
 */
static void kvtier_direct_settle(struct kvtier_direct *d)
{
	unsigned int r;

	for (r = 0; r < d->nr_runs; r++) {
		if (!d->runs[r].err)
			kvtier_direct_crcs(&d->runs[r]);
		cancel_work_sync(&d->runs[r].work);
	}
}

/*
 * Once settled: the pages to keep, counted from the first, up to the first
 * run whose read failed or whose CRCs did not match; @d->retry_to is the
 * page after that run (0: none failed). The pages not kept count in
 * direct_read_retries.
 */
static unsigned int kvtier_direct_check(struct kvtier_direct *d)
{
	struct kvtier_tier *tier = d->region->tier;
	unsigned int r, kept = 0;

	kvtier_direct_settle(d);
	d->retry_to = 0;
	for (r = 0; r < d->nr_runs; r++) {
		struct kvtier_ubio *ur = &d->runs[r];

		if (!d->retry_to && !ur->err && (!d->crc || ur->crc_ok))
			kept += ur->nr;
		else if (!d->retry_to)
			d->retry_to = ur->first + ur->nr;
	}
	kvtier_count(tier, KVT_STAT_DIRECT_READ, kept);
	if (d->retry_to) {
		r = d->nr_runs - 1;
		kvtier_count(tier, KVT_STAT_DIRECT_RETRY,
			     d->runs[r].first + d->runs[r].nr - kept);
	}
	return kept;
}

/* At most this many pages, so that the buffer's pins leave the pool room. */
static unsigned int kvtier_direct_max(struct kvtier_tier *tier, pgoff_t pages)
{
	return min_t(pgoff_t, min_t(pgoff_t, pages, KVT_DIRECT_PAGES),
		     max(kvtier_budget_pages(tier) / 4, 1UL));
}

/**
 * kvtier_direct_read - read pages straight into the caller's memory
 * @region: the file's region
 * @index: the request's next page; the request is kvtier_direct_ok()
 * @last: the request's last page in the region
 * @to: where the bytes go; advanced by what is returned
 * @pool_to: set when 0 is returned: the pages before it go through the pool
 *
 * Returns the bytes read, whole pages; 0 when the page at @index is not
 * for this path (resident, a hole, a buffer that cannot be pinned, no
 * memory) or its run failed a check.
 */
ssize_t kvtier_direct_read(struct kvtier_region *region, pgoff_t index,
			   pgoff_t last, struct iov_iter *to, pgoff_t *pool_to)
{
	unsigned int max = kvtier_direct_max(region->tier, last - index + 1);
	struct kvtier_direct *d = NULL;
	unsigned int kept = 0;

	*pool_to = index + 1;
	if (!xa_is_value(xa_load(&region->pages, index)))
		return 0;
	d = kvtier_direct_new(region, index, false);
	if (!d || !kvtier_direct_lookup(d, max) || !kvtier_direct_start(d, to))
		goto out;
	if (!atomic_dec_and_test(&d->pending))
		wait_for_completion_io(&d->done);
	kept = kvtier_direct_check(d);
	kvtier_direct_release(d);
	iov_iter_advance(to, (size_t)kept << PAGE_SHIFT);
	/* A run that failed a check goes through the pool, whole. */
	*pool_to = index + (d->retry_to ?: !kept);
out:
	kfree(d);
	return (ssize_t)kept << PAGE_SHIFT;
}

/*
 * Step W1: plan a direct write of the pages from @d->index (at most @max)
 * that are not in the pool (each one's slot in @d->old), in runs of up to
 * BIO_MAX_VECS pages, and give each run consecutive fresh slots (@d->fresh
 * of them from @ur->slot) and its pages room for their CRC flags, outside
 * the xa_lock. A resident page ends the plan, and so does the namespace's
 * running out of slots (the next call goes on). Free slots short of the
 * pages planned plus the reserve background write-back keeps
 * (kvtier_clean_room()) plan nothing and set *@full: the request goes
 * through the pool, whose pages of a volatile region keep their slots.
 * Returns the pages planned; @d->nr_runs their runs.
 */
static unsigned int kvtier_direct_plan(struct kvtier_direct *d,
				       unsigned int max, bool *full)
{
	struct kvtier_region *region = d->region;
	struct kvtier_ubio *ur = NULL;
	unsigned long got;
	unsigned int n, r;

	xa_lock(&region->pages);
	for (n = 0; n < max; n++) {
		void *entry = xa_load(&region->pages, d->index + n);

		if (entry && !xa_is_value(entry))
			break;
		d->old[n] = entry ? kvt_shadow_slot(entry, d->index + n) :
				    KVTIER_NO_SLOT;
		if (ur && ur->nr < BIO_MAX_VECS) {
			ur->nr++;
			continue;
		}
		if (d->nr_runs == KVT_DIRECT_RUNS)
			break;
		ur = &d->runs[d->nr_runs++];
		*ur = (struct kvtier_ubio){
			.tier = region->tier, .nr = 1, .first = n,
			.write = true, .pending = &d->pending,
			.end = kvtier_direct_ended,
		};
	}
	xa_unlock(&region->pages);

	/* The namespace's last free space is the pool's (write-back). */
	*full = n && !kvtier_clean_room(region->tier, n);
	if (*full)
		d->nr_runs = 0;
	for (r = 0; r < d->nr_runs; r++) {
		ur = &d->runs[r];
		if (kvtier_crcs_reserve_range(region, d->index + ur->first,
					      ur->nr, GFP_KERNEL))
			break;
		ur->slot = kvtier_slots_alloc(&region->tier->slots, ur->nr, &got);
		if (ur->slot == KVTIER_NO_SLOT)
			break;
		d->fresh[r] = got;
		/* A shorter run ends the plan: the next call goes on. */
		if (got < ur->nr) {
			ur->nr = got;
			r++;
			break;
		}
	}
	d->nr_runs = r;
	return r ? d->runs[r - 1].first + d->runs[r - 1].nr : 0;
}

/*
 * Step W5 for run @ur of @d, written: its pages become the region's, in
 * order, each if it is still where the plan found it: its entry gets its
 * fresh slot, with no CRC. Its slot before stays in @d->old, to be freed;
 * a page not taken, and those after it, keep theirs (@d->old is cleared
 * for them). Returns the pages taken.
 */
static unsigned int kvtier_direct_take(struct kvtier_direct *d,
				       struct kvtier_ubio *ur)
{
	struct kvtier_region *region = d->region;
	pgoff_t first = d->index + ur->first, index;
	unsigned int i, born = 0;

	xa_lock(&region->pages);
	for (i = 0; i < ur->nr; i++) {
		unsigned int n = ur->first + i;
		void *entry;

		index = first + i;
		entry = xa_load(&region->pages, index);
		if (!kvtier_direct_same(d, n, entry))
			break;
		/*
		 * Replacing an entry allocates nothing; a new one, or one
		 * split out of its extent, may.
		 */
		if (kvtier_mapext_split_locked(region, index) ||
		    xa_is_err(__xa_store(&region->pages, index,
					 kvt_mk_shadow(ur->slot + i, 0),
					 GFP_NOWAIT | __GFP_NOWARN)))
			break;
		kvtier_crcs_set(region, index, 0, true);
		born += d->old[n] == KVTIER_NO_SLOT;
	}
	/* The run's fresh slots are consecutive: its groups may be extents. */
	for (index = first; index < first + i;
	     index = (index | (KVT_EXTENT_PAGES - 1)) + 1)
		kvtier_mapext_make_locked(region, index);
	xa_unlock(&region->pages);
	atomic_long_add(born, &region->nr_slots);
	return i;
}

/*
 * Step W5: every bio of @d completed. The pages kept, counted from the
 * first, end at the first page of a run whose write failed or that is no
 * longer where the plan found it; @d->retry_to is the page after that
 * run (0: none), which the pool writes again, and the next direct write
 * takes the runs after it. Fresh slots that no page took are freed:
 * nothing names them. @d->old keeps the slots of the pages taken.
 */
static unsigned int kvtier_direct_install(struct kvtier_direct *d)
{
	struct kvtier_tier *tier = d->region->tier;
	unsigned int r, i, n, kept = 0, sent = 0;

	for (r = 0; r < d->nr_runs; r++) {
		struct kvtier_ubio *ur = &d->runs[r];

		i = 0;
		if (!d->retry_to && !ur->err)
			i = kvtier_direct_take(d, ur);
		if (!d->retry_to) {
			kept += i;
			if (i < ur->nr)
				d->retry_to = ur->first + ur->nr;
		}
		for (n = ur->first + i; n < ur->first + ur->nr; n++)
			d->old[n] = KVTIER_NO_SLOT;
		if (d->fresh[r] > i)
			kvtier_slots_free(&tier->slots, ur->slot + i,
					  d->fresh[r] - i);
		d->fresh[r] = 0;
		sent += ur->nr;
	}
	kvtier_count(tier, KVT_STAT_DIRECT_WRITE, kept);
	kvtier_count(tier, KVT_STAT_WB_UNCHECKED, kept);
	kvtier_count(tier, KVT_STAT_DIRECT_WRITE_RETRY, sent - kept);
	return kept;
}

/*
 * Step W6: free the slots the @kept pages taken left (@d->old), in runs,
 * once no direct read that may have looked one up is in flight: the same
 * wait a commit makes before it frees slots (see "Direct reads" above).
 */
static void kvtier_direct_free_old(struct kvtier_direct *d, unsigned int kept)
{
	struct kvtier_tier *tier = d->region->tier;
	unsigned int n, len;

	for (n = 0; n < kept && d->old[n] == KVTIER_NO_SLOT; n++)
		;
	if (n == kept)
		return;
	synchronize_srcu_expedited(&tier->direct_srcu);
	for (; n < kept; n += len) {
		len = 1;
		if (d->old[n] == KVTIER_NO_SLOT)
			continue;
		while (n + len < kept && d->old[n + len] == d->old[n] + len)
			len++;
		kvtier_slots_free(&tier->slots, d->old[n], len);
	}
}

/* Give back the fresh slots of runs @from to @to - 1 of @d, none taken. */
static void kvtier_direct_unplan(struct kvtier_direct *d, unsigned int from,
				 unsigned int to)
{
	for (; from < to; from++)
		kvtier_slots_free(&d->region->tier->slots, d->runs[from].slot,
				  d->fresh[from]);
}

/**
 * kvtier_direct_write - write pages straight from the caller's memory
 * @region: the file's region, not persistent, with the checksum knob off
 * @index: the request's next page; the request is kvtier_direct_ok()
 * @last: the request's last page in the region
 * @from: where the bytes come from; advanced by what is returned
 * @pool_to: the pages before it (from @index on) go through the pool,
 *           when 0 is returned or a run was not kept
 *
 * Returns the bytes written, whole pages; 0 when the page at @index is not
 * for this path (resident, a buffer that cannot be pinned, no memory, a
 * fenced tier), or its run was not kept, or the namespace has no free
 * slot (then the whole request goes through the pool). Never an error:
 * the pool path reports it.
 */
ssize_t kvtier_direct_write(struct kvtier_region *region, pgoff_t index,
			    pgoff_t last, struct iov_iter *from,
			    pgoff_t *pool_to)
{
	unsigned int max = kvtier_direct_max(region->tier, last - index + 1);
	unsigned int planned = 0, kept = 0;
	struct kvtier_direct *d;
	bool full = false;
	void *entry;

	*pool_to = index + 1;
	entry = xa_load(&region->pages, index);
	if ((entry && !xa_is_value(entry)) || kvtier_fenced(region->tier))
		return 0;
	d = kvtier_direct_new(region, index, true);
	if (!d)
		return 0;
	d->old = kmalloc_array(max, sizeof(*d->old), GFP_KERNEL);
	if (d->old && kvtier_direct_plan(d, max, &full)) {
		planned = d->nr_runs;
		if (kvtier_direct_start(d, from)) {
			if (!atomic_dec_and_test(&d->pending))
				wait_for_completion_io(&d->done);
			kept = kvtier_direct_install(d);
			kvtier_direct_release(d);
			kvtier_direct_free_old(d, kept);
		}
	}
	/* Runs planned but not submitted: their fresh slots go back. */
	kvtier_direct_unplan(d, d->nr_runs, planned);
	iov_iter_advance(from, (size_t)kept << PAGE_SHIFT);
	*pool_to = full ? last + 1 : index + (d->retry_to ?: !kept);
	kfree(d->old);
	kfree(d);
	return (ssize_t)kept << PAGE_SHIFT;
}

/*
 * The pages of an asynchronous direct read or write @d from @from on were
 * not kept (a read's failed a check): move each through the pool, between
 * its pool page and the caller's pinned one. A read reads it there (which
 * reads and checks once more) and copies it out; a write copies it in and
 * marks it dirty, as the synchronous path's loop would (file.c). Returns
 * the pages moved, stopping at the first error, which *@err gets.
 */
static unsigned int kvtier_direct_pool(struct kvtier_direct *d,
				       unsigned int from, int *err)
{
	struct kvtier_tier *tier = d->region->tier;
	unsigned int r, i, n = 0;

	for (r = 0; r < d->nr_runs; r++) {
		struct kvtier_ubio *ur = &d->runs[r];

		for (i = 0; i < ur->nr; i++) {
			struct page *user = kvtier_direct_page(ur, i);
			pgoff_t index = d->index + ur->first + i;
			struct kvtier_page *kp;
			enum kvtier_get how;

			if (ur->first + i < from)
				continue;
			kp = d->write ? kvtier_get_page_blank(d->region, index, &how) :
					kvtier_get_page(d->region, index, &how);
			if (IS_ERR(kp)) {
				*err = PTR_ERR(kp);
				return n;
			}
			/*
			 * Runs in a kworker, which no fatal signal reaches:
			 * the wait does not fail here, but if it did, the page
			 * (marked, so resident, not blank) goes back as is.
			 */
			if (d->write && kvtier_page_wait_writeback(kp)) {
				unlock_page(kp->page);
				put_page(kp->page);
				*err = -EINTR;
				return n;
			}
			/* @user may be this very page (a mapping of it). */
			if (user != kp->page && d->write)
				copy_highpage(kp->page, user);
			else if (user != kp->page)
				copy_highpage(user, kp->page);
			/* A write fills it whole: a blank page is kept. */
			if (!d->write) {
				unlock_page(kp->page);
			} else if (how != KVT_GET_BLANK ||
				   kvtier_page_blank_end(kp, PAGE_SIZE)) {
				kvtier_pool_mark_dirty(tier, kp);
				unlock_page(kp->page);
			}
			put_page(kp->page);
			n++;
		}
	}
	return n;
}

/*
 * The last bio of an asynchronous direct write completed: take the pages,
 * write those not kept through the pool, unpin, free the slots left, make
 * it durable or write it through as O_DSYNC and O_DIRECT ask, and complete
 * the request, last: that may drop the file, and with it the region and
 * the tier.
 */
static void kvtier_direct_write_end(struct work_struct *work)
{
	struct kvtier_direct *d = container_of(work, struct kvtier_direct,
					       end_work);
	struct kvtier_ubio *last = &d->runs[d->nr_runs - 1];
	unsigned int kept, all = last->first + last->nr;
	struct kvtier_region *region = d->region;
	struct kiocb *iocb = d->iocb;
	int err = -EIO;
	long ret;

	kept = kvtier_direct_install(d);
	kvtier_direct_free_old(d, kept);
	if (kept < all)
		kept += kvtier_direct_pool(d, kept, &err);
	kvtier_direct_release(d);
	ret = kept ? (long)kept << PAGE_SHIFT : err;
	if (ret > 0 && iocb->ki_flags & (IOCB_DIRECT | IOCB_DSYNC)) {
		err = kvtier_file_sync(region, iocb->ki_pos,
				       iocb->ki_pos + ret - 1,
				       iocb->ki_flags & IOCB_DIRECT,
				       iocb->ki_flags & IOCB_DSYNC);
		if (err)
			ret = err;
	}
	kvtier_region_put(region);
	kfree(d->old);
	kfree(d);
	if (ret > 0)
		iocb->ki_pos += ret;
	iocb->ki_complete(iocb, ret);
}

/*
 * Start the @d->nr_runs runs planned for the @pages of asynchronous
 * request @iocb from @it, to complete through @end, a work on
 * kvtier_direct_wq. True when they all went out and cover the request:
 * it is queued (counted in @stat), and @d is no longer the caller's.
 * False once the runs that did go out completed (@d->nr_runs of them):
 * the caller undoes them and serves the request synchronously.
 */
static bool kvtier_direct_queue(struct kvtier_direct *d, struct kiocb *iocb,
				const struct iov_iter *it, unsigned int pages,
				work_func_t end, enum kvtier_stat stat)
{
	struct kvtier_tier *tier = d->region->tier;
	unsigned int runs = d->nr_runs, started;

	d->iocb = iocb;
	INIT_WORK(&d->end_work, end);
	started = iocb->ki_flags & IOCB_NOWAIT ? kvtier_direct_start_nowait(d, it) :
						 kvtier_direct_start(d, it);
	if (started == runs &&
	    d->runs[runs - 1].first + d->runs[runs - 1].nr == pages) {
		kvtier_count(tier, stat, 1);
		if (atomic_dec_and_test(&d->pending))
			kvtier_direct_ended(&d->runs[0]);
		return true;
	}
	/* Not all of it could be pinned, or a page changed since the plan. */
	d->iocb = NULL;
	if (!atomic_dec_and_test(&d->pending))
		wait_for_completion_io(&d->done);
	return false;
}

/**
 * kvtier_direct_write_async - start an asynchronous direct write
 * @region: the file's region, as for kvtier_direct_write()
 * @iocb: the request, !is_sync_kiocb(), at a page-aligned position
 * @from: kvtier_direct_ok(), ending at or before the region's end
 *
 * Returns -EIOCBQUEUED when @iocb will complete through ki_complete(), or
 * -EAGAIN when one direct write does not cover the request whole (a page
 * resident, too few free slots, more than one direct write's pages, a
 * buffer that cannot be pinned): the caller serves it synchronously.
 */
ssize_t kvtier_direct_write_async(struct kvtier_region *region,
				  struct kiocb *iocb, struct iov_iter *from)
{
	pgoff_t index = iocb->ki_pos >> PAGE_SHIFT;
	unsigned int pages = iov_iter_count(from) >> PAGE_SHIFT, runs;
	struct kvtier_direct *d;
	void *entry;
	bool full;

	if (!pages || kvtier_direct_max(region->tier, pages) != pages ||
	    kvtier_fenced(region->tier))
		return -EAGAIN;
	entry = xa_load(&region->pages, index);
	if (entry && !xa_is_value(entry))
		return -EAGAIN;
	d = kvtier_direct_new(region, index, true);
	if (!d)
		return -EAGAIN;
	d->old = kmalloc_array(pages, sizeof(*d->old), GFP_KERNEL);
	if (!d->old || kvtier_direct_plan(d, pages, &full) != pages ||
	    !kvtier_region_tryget(region)) {
		if (d->old)
			kvtier_direct_unplan(d, 0, d->nr_runs);
		goto out;
	}
	runs = d->nr_runs;
	if (kvtier_direct_queue(d, iocb, from, pages, kvtier_direct_write_end,
				KVT_STAT_DIRECT_WRITE_ASYNC))
		return -EIOCBQUEUED;
	/* Take none of the pages written: all of it synchronously. */
	kvtier_direct_release(d);
	kvtier_direct_unplan(d, 0, runs);
	kvtier_region_put(region);
out:
	kfree(d->old);
	kfree(d);
	return -EAGAIN;
}

/*
 * The last bio of an asynchronous direct read completed: check, read what
 * failed through the pool, unpin, and complete the request, last: that
 * may drop the file, and with it the region and the tier.
 */
static void kvtier_direct_end(struct work_struct *work)
{
	struct kvtier_direct *d = container_of(work, struct kvtier_direct,
					       end_work);
	struct kvtier_ubio *last = &d->runs[d->nr_runs - 1];
	unsigned int kept, all = last->first + last->nr;
	struct kiocb *iocb = d->iocb;
	int err = -EIO;
	long ret;

	kept = kvtier_direct_check(d);
	if (kept < all)
		kept += kvtier_direct_pool(d, kept, &err);
	kvtier_direct_release(d);
	kvtier_region_put(d->region);
	kfree(d);
	ret = kept ? (long)kept << PAGE_SHIFT : err;
	if (ret > 0)
		iocb->ki_pos += ret;
	iocb->ki_complete(iocb, ret);
}

/**
 * kvtier_direct_read_async - start an asynchronous direct read
 * @region: the file's region
 * @iocb: the request, !is_sync_kiocb(), at a page-aligned position
 * @to: kvtier_direct_ok(), ending at or before the region's end
 *
 * Returns -EIOCBQUEUED when @iocb will complete through ki_complete(), or
 * -EAGAIN when one direct read does not cover the request whole (the
 * caller serves it synchronously).
 */
ssize_t kvtier_direct_read_async(struct kvtier_region *region,
				 struct kiocb *iocb, struct iov_iter *to)
{
	pgoff_t index = iocb->ki_pos >> PAGE_SHIFT;
	size_t count = iov_iter_count(to);
	unsigned int pages = count >> PAGE_SHIFT, runs;
	struct kvtier_direct *d;

	if (!pages || kvtier_direct_max(region->tier, pages) != pages ||
	    !xa_is_value(xa_load(&region->pages, index)))
		return -EAGAIN;
	d = kvtier_direct_new(region, index, false);
	if (!d)
		return -EAGAIN;
	runs = kvtier_direct_lookup(d, pages) == pages ? d->nr_runs : 0;
	if (!runs || !kvtier_region_tryget(region)) {
		kfree(d);
		return -EAGAIN;
	}
	if (kvtier_direct_queue(d, iocb, to, pages, kvtier_direct_end,
				KVT_STAT_DIRECT_ASYNC))
		return -EIOCBQUEUED;
	/* Drop what was read: all of it synchronously. */
	kvtier_direct_settle(d);
	kvtier_direct_release(d);
	kvtier_region_put(region);
	kfree(d);
	return -EAGAIN;
}
