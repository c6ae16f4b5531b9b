// SPDX-License-Identifier: GPL-2.0
/*
 * Where bytes hit the namespace: read and write bios of runs of pages whose
 * slots are consecutive, cache flushes and discards. Every bio of a tier
 * counts against max_inflight_kb while it is in flight.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kvtier.h"
#include "kvtier_trace.h"

/*
 * One bio's worth of pages, at consecutive slots from @slot. A read's
 * pages are all of one region; with checksum on, @work checks their CRCs
 * after the completion (kvtier_verify_ahead()), holding @region and the
 * pages' @index (after @kps, in the same allocation), not the pages.
 */
struct kvtier_io {
	struct kvtier_tier *tier;
	unsigned long slot;
	unsigned int nr;
	long bytes;
	u64 start_ns;
	atomic_t *pending;		/* writes: batch completion */
	struct completion *done;
	int *errs;			/* writes: per-page status, from index */
	unsigned int first;
	struct work_struct work;	/* reads: verify ahead */
	struct kvtier_region *region;
	pgoff_t *index;
	struct kvtier_page *kps[];
};

static inline sector_t block_to_sector(u64 block)
{
	return (sector_t)block << (PAGE_SHIFT - SECTOR_SHIFT);
}

/* Data slots start after the superblocks and checkpoint areas. */
static inline sector_t slot_to_sector(struct kvtier_tier *tier,
				      unsigned long slot)
{
	return block_to_sector(tier->store.data_start + slot);
}

/* An I/O is submitted; @was_idle: no other was in flight. */
void kvtier_io_started(struct kvtier_tier *tier, bool was_idle)
{
	if (was_idle)
		WRITE_ONCE(tier->io_progress, jiffies);
}

/* An I/O completed (or failed): the path moves. */
void kvtier_io_progress(struct kvtier_tier *tier)
{
	WRITE_ONCE(tier->io_progress, jiffies);
}

/* I/O outstanding and none completed for KVTIER_STALL_MS (a gauge). */
bool kvtier_io_stalled(struct kvtier_tier *tier)
{
	if (!atomic_long_read(&tier->inflight_bytes) &&
	    !atomic_read(&tier->meta_inflight))
		return false;
	return time_after(jiffies, READ_ONCE(tier->io_progress) +
			  msecs_to_jiffies(KVTIER_STALL_MS));
}

/* Wait until @bytes more fit under max_inflight_kb (or nothing is in flight). */
static void kvtier_inflight_get(struct kvtier_tier *tier, long bytes)
{
	long max = (long)READ_ONCE(tier->knobs.max_inflight_kb) << 10;

	wait_event(tier->inflight_wait,
		   atomic_long_read(&tier->inflight_bytes) == 0 ||
		   atomic_long_read(&tier->inflight_bytes) + bytes <= max);
	kvtier_io_started(tier, atomic_long_add_return(bytes, &tier->inflight_bytes) ==
			  bytes && !atomic_read(&tier->meta_inflight));
}

/*
 * Take @bytes of room under max_inflight_kb if it is there now (or nothing
 * is in flight), for bios submitted right after with @reserved (IOCB_NOWAIT,
 * which must not wait for it; nothing that may wait for room itself, such
 * as a fault, may come in between). Returns whether it was taken; what the
 * bios do not use goes back with kvtier_inflight_unreserve().
 */
bool kvtier_inflight_reserve(struct kvtier_tier *tier, long bytes)
{
	long max = (long)READ_ONCE(tier->knobs.max_inflight_kb) << 10;
	long cur = atomic_long_read(&tier->inflight_bytes);

	do {
		if (cur && cur + bytes > max)
			return false;
	} while (!atomic_long_try_cmpxchg(&tier->inflight_bytes, &cur,
					  cur + bytes));
	kvtier_io_started(tier, !cur && !atomic_read(&tier->meta_inflight));
	return true;
}

/*
 * A bio's bytes are no longer in flight. The count drops and the waiters
 * wake under the waitqueue's lock, which kvtier_io_drain() takes after it
 * sees zero: once it returns, no completion touches the tier any more.
 */
static void kvtier_inflight_put(struct kvtier_tier *tier, long bytes)
{
	unsigned long flags;

	kvtier_io_progress(tier);
	spin_lock_irqsave(&tier->inflight_wait.lock, flags);
	atomic_long_sub(bytes, &tier->inflight_bytes);
	wake_up_all_locked(&tier->inflight_wait);
	spin_unlock_irqrestore(&tier->inflight_wait.lock, flags);
}

/* Give back room kvtier_inflight_reserve() took that no bio used. */
void kvtier_inflight_unreserve(struct kvtier_tier *tier, long bytes)
{
	if (bytes)
		kvtier_inflight_put(tier, bytes);
}

/*
 * Wait until every data bio of the tier has completed, its completion
 * included. A read completion unlocks its pages before it is done with the
 * tier, and the page locks are all a region's destroy waits for: detach
 * drains before the tier, or the module, can go away.
 */
void kvtier_io_drain(struct kvtier_tier *tier)
{
	wait_event(tier->inflight_wait, !atomic_long_read(&tier->inflight_bytes));
	spin_lock_irq(&tier->inflight_wait.lock);
	spin_unlock_irq(&tier->inflight_wait.lock);
}

/* @read: with room for the verify-ahead work's indexes after @kps. */
static struct kvtier_io *kvtier_io_alloc(struct kvtier_tier *tier,
					 unsigned int nr, bool read)
{
	struct kvtier_io *io;
	size_t size = struct_size(io, kps, nr);

	if (kvtier_should_fail(KVT_FAIL_IO_ALLOC))
		return NULL;
	if (read)
		size += nr * sizeof(*io->index);
	io = kmalloc(size, GFP_NOIO);
	if (!io)
		return NULL;
	io->tier = tier;
	io->nr = nr;
	io->bytes = (long)nr << PAGE_SHIFT;
	io->index = read ? (pgoff_t *)&io->kps[nr] : NULL;
	return io;
}

/*
 * A bio of @nr pages is about to go: wait for room (unless @reserved: its
 * room is taken already), count its size.
 */
static void kvtier_io_account(struct kvtier_tier *tier, bool write,
			      unsigned int nr, bool reserved)
{
	if (!reserved)
		kvtier_inflight_get(tier, (long)nr << PAGE_SHIFT);
	kvtier_count(tier, write ? KVT_STAT_WB_BIOS : KVT_STAT_READ_BIOS, 1);
	atomic64_inc(&tier->io_sizes[write][min_t(unsigned int, ilog2(nr),
						  KVT_IO_BUCKETS - 1)]);
	atomic64_add(nr, &tier->io_pages[write]);
}

/* The read of @bytes at @sector ended with @err: time, trace, count, log. */
static void kvtier_io_read_ended(struct kvtier_tier *tier, sector_t sector,
				 long bytes, u64 ns, int err)
{
	kvtier_hist_add(&tier->lat[KVT_HIST_READ], ns);
	trace_kvtier_read_done(tier->id, sector, bytes, ns, err);
	if (!err) {
		kvtier_count(tier, KVT_STAT_READ_PAGES, bytes >> PAGE_SHIFT);
		kvtier_count(tier, KVT_STAT_READ_BYTES, bytes);
	} else {
		kvtier_count(tier, KVT_STAT_IO_ERROR, 1);
		kvtier_set_error(tier, err);
		pr_err_ratelimited("kvtier%u: read error %d at sector %llu\n",
				   tier->id, err, (unsigned long long)sector);
	}
}

/* The write of @bytes at @sector ended with @err: time, trace, count, log. */
static void kvtier_io_write_ended(struct kvtier_tier *tier, sector_t sector,
				  long bytes, u64 ns, int err)
{
	kvtier_hist_add(&tier->lat[KVT_HIST_WRITE], ns);
	trace_kvtier_write_done(tier->id, sector, bytes, ns, err);
	if (!err) {
		kvtier_count(tier, KVT_STAT_WB_PAGES, bytes >> PAGE_SHIFT);
		kvtier_count(tier, KVT_STAT_WB_BYTES, bytes);
	} else {
		kvtier_count(tier, KVT_STAT_IO_ERROR, 1);
		kvtier_set_error(tier, err);
		pr_err_ratelimited("kvtier%u: write error %d at sector %llu\n",
				   tier->id, err, (unsigned long long)sector);
	}
}

/*
 * Submit one bio for @io: wait for room under max_inflight_kb, account its
 * size, and start its clock.
 */
static void kvtier_io_submit(struct kvtier_io *io, blk_opf_t opf,
			     bio_end_io_t end_io)
{
	struct kvtier_tier *tier = io->tier;
	bool write = op_is_write(opf);
	struct bio *bio;
	unsigned int i;

	bio = bio_alloc(tier->backing.kb.bdev, io->nr, opf, GFP_NOIO);
	bio->bi_iter.bi_sector = slot_to_sector(tier, io->slot);
	bio->bi_end_io = end_io;
	bio->bi_private = io;
	for (i = 0; i < io->nr; i++)
		__bio_add_page(bio, io->kps[i]->page, PAGE_SIZE, 0);

	kvtier_io_account(tier, write, io->nr, false);
	io->start_ns = ktime_get_ns();
	submit_bio(bio);
}

/*
 * With checksum on, a page read back must match the CRC32C recorded when
 * it was written (unless it was written without one, checksum being off:
 * crcs.c); a mismatch is an error like a failed read: the data is never
 * handed out. The read completion only marks the page KVT_PG_VERIFY;
 * its first user checks it here, with the page lock held, before anything
 * maps or copies it (page.c, kvtier_page_ready()). So the CRC is
 * computed in process context, in parallel with the reads still in
 * flight, not in the completion of a whole bio: by the task that needs
 * the page, or by the verify-ahead work of its bio (below), whichever
 * takes the page lock first.
 */
bool kvtier_io_verify(struct kvtier_tier *tier, struct kvtier_page *kp)
{
	u32 crc, want = 0;
	bool have;
	void *data;

	/* Written with the checksum off: nothing to check it against. */
	if (kvtier_crcs_unchecked(kp->region, kp->index))
		return true;
	have = kvtier_crcs_get(kp->region, kp->index, &want);
	data = kmap_local_page(kp->page);
	crc = kvtier_crc32c(data, PAGE_SIZE);
	kunmap_local(data);
	if (have && crc == want)
		return true;
	kvtier_count(tier, KVT_STAT_CSUM_ERROR, 1);
	kvtier_set_error(tier, -EBADMSG);
	pr_err_ratelimited("kvtier%u: checksum mismatch in slot %lu (region %llu, offset %llu): %08x, expected %08x\n",
			   tier->id, kp->slot, kp->region->id,
			   (u64)kp->index << PAGE_SHIFT, crc, want);
	return false;
}

/*
 * Verify ahead: the CRCs of a read bio's pages, checked on another CPU
 * while the task that waited for the bio consumes it. The task reads
 * forwards from the page it asked for, so this goes backwards from the
 * last page and the two meet in the middle; a bio no task waits for yet
 * (readahead, a pread's request ahead of its copy, prefetch) is checked
 * whole before anyone needs it. It only takes pages nobody holds
 * (trylock) that are still KVT_PG_VERIFY: a page locked by its user is
 * checked by that user, so each CRC is computed once, and what a page
 * becomes (up to date, or failed on a mismatch) is what its first user
 * would have made it.
 *
 * The work keeps the bio's indexes, not its pages: it finds each page
 * again in the region (whose reference it holds) and holds it only while
 * checking it. A page reference held from the bio's end to the work's
 * turn would make every page of the bio look in use to eviction
 * (kvtier_evict_page()), so a DONTNEED or a reclaim pass that came
 * meanwhile would pass over them, however long the work waited to run.
 */
static void kvtier_verify_ahead(struct work_struct *work)
{
	struct kvtier_io *io = container_of(work, struct kvtier_io, work);
	struct kvtier_region *region = io->region;
	unsigned int i = io->nr, done = 0;

	while (i--) {
		struct kvtier_page *kp = NULL;
		struct page *page;
		void *entry;

		/*
		 * Locked under the xa_lock, a kp is the region's page at its
		 * index until it is unlocked (it leaves only under that lock).
		 */
		xa_lock(&region->pages);
		entry = xa_load(&region->pages, io->index[i]);
		if (entry && !xa_is_value(entry) &&
		    kvt_pg_test(entry, KVT_PG_VERIFY) &&
		    trylock_page(((struct kvtier_page *)entry)->page)) {
			kp = entry;
			get_page(kp->page);	/* across the unlock */
		}
		xa_unlock(&region->pages);
		if (!kp)
			continue;
		/* Still VERIFY now that it is ours (or checked meanwhile). */
		if (kvt_pg_test(kp, KVT_PG_VERIFY)) {
			/* Count only the pages with a CRC to check. */
			done += !kvtier_crcs_unchecked(region, kp->index);
			kvtier_page_ready(kp);
		}
		page = kp->page;
		unlock_page(page);
		put_page(page);
	}
	if (done)
		kvtier_count(io->tier, KVT_STAT_VERIFY_AHEAD, done);
	kvtier_region_put(region);
	kfree(io);
}

/*
 * Read completion: mark each page up to date (or, with checksum on, to be
 * verified by its first user) or failed, and unlock it; the faulting task
 * waits on its own page's lock, not on the whole bio. With checksum on, a
 * bio of more than one page hands its pages to the verify-ahead work: the
 * locked pages keep their region alive until here, so a region reference
 * can be taken unless the region is already being destroyed (then no
 * work: its pages are about to go).
 */
static void kvtier_read_end_io(struct bio *bio)
{
	struct kvtier_io *io = bio->bi_private;
	struct kvtier_tier *tier = io->tier;
	u64 ns = ktime_get_ns() - io->start_ns;
	int err = blk_status_to_errno(bio->bi_status);
	sector_t sector = slot_to_sector(tier, io->slot);
	bool ok = !err;
	enum kvtier_page_flag in = READ_ONCE(tier->knobs.checksum) ?
		KVT_PG_VERIFY : KVT_PG_UPTODATE;
	struct kvtier_region *region = io->kps[0]->region;
	bool ahead;
	unsigned int i;
	long bytes;

	ahead = ok && in == KVT_PG_VERIFY && io->nr > 1 &&
		refcount_inc_not_zero(&region->ref);
	kvtier_io_read_ended(tier, sector, io->bytes, ns, err);
	for (i = 0; i < io->nr; i++) {
		struct kvtier_page *kp = io->kps[i];

		if (ahead)
			io->index[i] = kp->index;
		kvt_pg_set(kp, ok ? in : KVT_PG_ERROR);
		unlock_page(kp->page);
	}
	/*
	 * The last page unlocked, its region may be destroyed and the tier
	 * detached: only the in-flight count, which detach drains, is left
	 * (and the region reference of the verify-ahead work, which the
	 * region's destruction waits for).
	 */
	bytes = io->bytes;
	bio_put(bio);
	if (ahead) {
		io->region = region;
		INIT_WORK(&io->work, kvtier_verify_ahead);
		queue_work(kvtier_wq, &io->work);
	} else {
		kfree(io);
	}
	kvtier_inflight_put(tier, bytes);
}

/*
 * Read @nr locked pages whose slots are consecutive, in one bio. Returns
 * without waiting; each page is unlocked when its data (or error) is in.
 */
int kvtier_io_read(struct kvtier_tier *tier, struct kvtier_page **kps,
		   unsigned int nr)
{
	struct kvtier_io *io;

	io = kvtier_io_alloc(tier, nr, true);
	if (!io)
		return -ENOMEM;
	memcpy(io->kps, kps, nr * sizeof(*kps));
	io->slot = kps[0]->slot;
	kvtier_io_submit(io, REQ_OP_READ, kvtier_read_end_io);
	return 0;
}

static void kvtier_ubio_end_io(struct bio *bio)
{
	struct kvtier_ubio *ur = bio->bi_private;
	struct kvtier_tier *tier = ur->tier;
	long bytes = (long)ur->nr << PAGE_SHIFT;
	sector_t sector = slot_to_sector(tier, ur->slot);
	u64 ns = ktime_get_ns() - ur->start_ns;

	ur->err = blk_status_to_errno(bio->bi_status);
	if (ur->write) {
		kvtier_io_write_ended(tier, sector, bytes, ns, ur->err);
	} else {
		/* The slots are read: a commit may free them (direct.c). */
		__srcu_read_unlock(&tier->direct_srcu, ur->srcu_idx);
		kvtier_io_read_ended(tier, sector, bytes, ns, ur->err);
	}
	kvtier_inflight_put(tier, bytes);
	if (!ur->err && ur->verify)
		queue_work(kvtier_wq, &ur->work);
	/* The last one: @ur->end may free @ur. */
	if (atomic_dec_and_test(ur->pending))
		ur->end(ur);
}

/*
 * Prepare a direct read or, with @ur->write, a direct write (direct.c): a
 * bio for @ur, moving @ur->nr pages at consecutive slots from @ur->slot
 * straight between the namespace and the user memory @iter describes
 * (page-aligned), whose pages it pins (references, on 6.1) as a block
 * device's O_DIRECT does. Only what could be pinned is moved: @ur->nr
 * becomes that. Pinning may fault, so the caller holds no lock of the
 * tier. @gfp: GFP_KERNEL for the first bio of a read or write, GFP_NOWAIT
 * for the others (it holds its bios until it is checked: it must not wait
 * for the bio pool while it does). Returns 0, or -EFAULT when no page
 * could be pinned or another error of the pinning, -ENOMEM.
 */
int kvtier_io_prepare_user(struct kvtier_ubio *ur, const struct iov_iter *iter,
			   gfp_t gfp)
{
	struct kvtier_tier *tier = ur->tier;
	struct iov_iter it = *iter;
	struct bio *bio;
	unsigned int bytes;
	int err;

	iov_iter_truncate(&it, (size_t)ur->nr << PAGE_SHIFT);
	/* As a block device's O_DIRECT write: a task waits for it. */
	bio = bio_alloc(tier->backing.kb.bdev, ur->nr,
			ur->write ? REQ_OP_WRITE | REQ_SYNC | REQ_IDLE :
				    REQ_OP_READ, gfp);
	if (!bio)
		return -ENOMEM;
	bio->bi_iter.bi_sector = slot_to_sector(tier, ur->slot);
	bio->bi_end_io = kvtier_ubio_end_io;
	bio->bi_private = ur;
	err = bio_iov_iter_get_pages(bio, &it);
	/* Whole pages of a page-aligned buffer: never a part of one. */
	bytes = bio->bi_iter.bi_size;
	if (!bytes || WARN_ON_ONCE(offset_in_page(bytes))) {
		kvtier_io_user_done(bio);
		return err ?: -EFAULT;
	}
	ur->bio = bio;
	ur->nr = bytes >> PAGE_SHIFT;
	return 0;
}

/*
 * Submit a prepared direct read, inside tier->direct_srcu (@ur->srcu_idx),
 * or direct write (outside it); @reserved: its bytes were taken by
 * kvtier_inflight_reserve(). @ur->pending counts it until its completion,
 * which leaves direct_srcu (a read), sets @ur->err, queues @ur->work on
 * kvtier_wq when a read succeeded and @ur->verify is set, and calls
 * @ur->end when the count drops to zero.
 */
void kvtier_io_submit_user(struct kvtier_ubio *ur, bool reserved)
{
	kvtier_io_account(ur->tier, ur->write, ur->nr, reserved);
	atomic_inc(ur->pending);
	ur->start_ns = ktime_get_ns();
	submit_bio(ur->bio);
}

/*
 * Unpin a direct read's or write's pages; a read's marked dirty: the
 * device wrote them, or may have (O_DIRECT does the same).
 */
void kvtier_io_user_done(struct bio *bio)
{
	bio_release_pages(bio, bio_data_dir(bio) == READ);
	bio_put(bio);
}

static void kvtier_write_end_io(struct bio *bio)
{
	struct kvtier_io *io = bio->bi_private;
	struct kvtier_tier *tier = io->tier;
	int err = blk_status_to_errno(bio->bi_status);
	u64 ns = ktime_get_ns() - io->start_ns;
	unsigned int i;

	kvtier_io_write_ended(tier, slot_to_sector(tier, io->slot), io->bytes,
			      ns, err);
	/*
	 * What the block layer says (-ENODATA for a medium error, -ENOLINK,
	 * ...) stays in the tier's error and the log; the pages, and so
	 * fsync, get EIO as from a file system (ENOSPC stays ENOSPC).
	 */
	if (err && err != -ENOSPC)
		err = -EIO;
	for (i = 0; i < io->nr; i++)
		io->errs[io->first + i] = err;
	kvtier_inflight_put(tier, io->bytes);
	if (atomic_dec_and_test(io->pending))
		complete(io->done);
	bio_put(bio);
	kfree(io);
}

/*
 * Start writing @nr locked pages, each to its wb_slot; @b tracks them until
 * kvtier_io_write_wait(). Pages whose slots are consecutive share a bio.
 * @errs[i] gets each page's status (set at once for a page whose bio could
 * not be made). Waits only for room under max_inflight_kb, never for
 * these bios: the caller may prepare and start its next batch meanwhile.
 * Returns how many pages, from the first, went out in bios; the rest
 * have their error set already.
 */
unsigned int kvtier_io_write_start(struct kvtier_tier *tier,
				   struct kvtier_page **kps, unsigned int nr,
				   int *errs, struct kvtier_io_batch *b)
{
	unsigned int i = 0, j, k;
	struct blk_plug plug;

	atomic_set(&b->pending, 1);
	init_completion(&b->done);
	b->nr = nr;
	b->bios = 0;
	b->errs = errs;
	/* Another read-write attach owns the namespace now (lease.c). */
	if (kvtier_fenced(tier)) {
		for (k = 0; k < nr; k++)
			errs[k] = -EBUSY;
		return 0;
	}
	/* The batch's bios go to the device together. */
	blk_start_plug(&plug);
	while (i < nr) {
		struct kvtier_io *io;

		for (j = i + 1; j < nr && j - i < BIO_MAX_VECS &&
		     kps[j]->wb_slot == kps[j - 1]->wb_slot + 1; j++)
			;
		io = kvtier_io_alloc(tier, j - i, false);
		if (!io) {
			for (k = i; k < nr; k++)
				errs[k] = -ENOMEM;
			break;
		}
		memcpy(io->kps, kps + i, (j - i) * sizeof(*kps));
		io->slot = kps[i]->wb_slot;
		io->pending = &b->pending;
		io->done = &b->done;
		io->errs = errs;
		io->first = i;
		atomic_inc(&b->pending);
		kvtier_io_submit(io, REQ_OP_WRITE, kvtier_write_end_io);
		b->bios++;
		i = j;
	}
	blk_finish_plug(&plug);
	return i;
}

/*
 * Wait for the writes kvtier_io_write_start() started with @b. Returns the
 * first page's error, or 0.
 */
int kvtier_io_write_wait(struct kvtier_tier *tier, struct kvtier_io_batch *b)
{
	unsigned int i;
	int ret = 0;

	if (!atomic_dec_and_test(&b->pending))
		wait_for_completion_io(&b->done);
	for (i = 0; i < b->nr; i++) {
		if (b->errs[i] && !ret)
			ret = b->errs[i];
	}
	trace_kvtier_writeback(tier->id, b->nr, b->bios, ret);
	return ret;
}

/* Make completed writes durable: flush the device's volatile cache. */
int kvtier_io_flush(struct kvtier_tier *tier)
{
	int ret;

	kvtier_count(tier, KVT_STAT_FLUSH, 1);
	ret = blkdev_issue_flush(tier->backing.kb.bdev);
	if (ret) {
		kvtier_count(tier, KVT_STAT_IO_ERROR, 1);
		kvtier_set_error(tier, ret);
		ret = -EIO;	/* for fsync, as a failed write-back */
	}
	return ret;
}

/* Tell the SSD a run of freed slots is unused, if discard is on. */
void kvtier_io_discard(struct kvtier_tier *tier, unsigned long slot,
		       unsigned long nr)
{
	struct block_device *bdev = tier->backing.kb.bdev;

	if (!READ_ONCE(tier->knobs.discard) || !bdev_max_discard_sectors(bdev) ||
	    kvtier_fenced(tier))
		return;
	/* Best effort: a failed discard loses nothing. */
	if (!blkdev_issue_discard(bdev, slot_to_sector(tier, slot),
				  block_to_sector(nr), GFP_KERNEL))
		kvtier_count(tier, KVT_STAT_DISCARD, nr);
}

/*
 * Synchronous metadata I/O (store.c, lease.c): @nr blocks at @block to or
 * from @buf (vmalloc'ed or directly mapped memory). Write flags such as
 * REQ_FUA apply to every bio. Not counted against max_inflight_kb: commits
 * are rare and must not wait behind the data they make durable. With
 * KVT_META_QUIET (the lease) there is no fault injection and a failure is
 * neither counted nor the tier's error: a lease that cannot be renewed is
 * not data loss.
 */
int kvtier_io_meta(struct kvtier_tier *tier, blk_opf_t opf, u64 block,
		   void *buf, unsigned int nr, unsigned int flags)
{
	bool quiet = flags & KVT_META_QUIET;
	bool vm = is_vmalloc_addr(buf);
	size_t len = (size_t)nr << PAGE_SHIFT;
	void *start = buf;
	u64 at = block;		/* the first block of the bio that failed */
	int ret = 0;

	if (!quiet && op_is_write(opf) && kvtier_should_fail(KVT_FAIL_META_WRITE)) {
		ret = -EIO;
		nr = 0;
	}
	if (vm && op_is_write(opf))
		flush_kernel_vmap_range(buf, len);
	while (nr && !ret) {
		unsigned int n = min_t(unsigned int, nr, BIO_MAX_VECS), i;
		struct bio *bio;

		at = block;
		bio = bio_alloc(tier->backing.kb.bdev, n, opf, GFP_NOIO);
		bio->bi_iter.bi_sector = block_to_sector(block);
		for (i = 0; i < n; i++, buf += PAGE_SIZE)
			__bio_add_page(bio, vm ? vmalloc_to_page(buf) :
				       virt_to_page(buf), PAGE_SIZE,
				       offset_in_page(buf));
		kvtier_io_started(tier, atomic_inc_return(&tier->meta_inflight) == 1 &&
				  !atomic_long_read(&tier->inflight_bytes));
		ret = submit_bio_wait(bio);
		kvtier_io_progress(tier);
		atomic_dec(&tier->meta_inflight);
		bio_put(bio);
		block += n;
		nr -= n;
	}
	if (vm && !op_is_write(opf))
		invalidate_kernel_vmap_range(start, len);
	if (ret && !quiet) {
		kvtier_count(tier, KVT_STAT_IO_ERROR, 1);
		kvtier_set_error(tier, ret);
		dev_err_ratelimited(&tier->dev, "metadata %s error %d at block %llu\n",
				    op_is_write(opf) ? "write" : "read", ret, at);
	}
	return ret;
}
