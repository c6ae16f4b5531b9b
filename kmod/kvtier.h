/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier internals shared by the files of kmod/.
 *
 * File map (where to look first). The data path calls one way, down the
 * list: file -> page -> pool -> writeback -> io/slots; the persistence
 * layer (names, store) sits above it.
 *   file.c     the file operations of /dev/kvtierN: open/release, ioctls,
 *              mmap, the page fault handler (kvtier_vm_fault: where a KV
 *              page is served), page_mkwrite, pread/pwrite, fsync, fadvise
 *   page.c     finding a page (kvtier_get_page), reading it back and
 *              checking its CRC, readahead, WILLNEED prefetch
 *   region.c   a region's life: made, published, destroyed
 *   pin.c      KVTIER_IOC_PIN/UNPIN: pins per binding, their bounds
 *   crcs.c     a region's page CRCs, stored sparsely
 *   mapext.c   a region's map: runs of pages on the namespace as one
 *              xarray entry each (extents)
 *   pagemap.c  a closed persistent region's page map left on the
 *              namespace: loaded on open, dropped on close
 *   crcruns.c  where a persistent region's CRCs are on the namespace
 *              (format version 4's CRC runs, copy-on-write)
 *   crc.c      computing a CRC32C: the fastest implementation the kernel
 *              has, chosen at load (the crc32c= parameter)
 *   users.c    what each uid holds in a tier; the per-user bounds
 *   pool.c     the host page pool: budget, page alloc/free, LRU, eviction
 *              (kvtier_evict_page: where a page is evicted), the
 *              background worker, the shrinker
 *   writeback.c  where dirty pages go to the namespace: slot assignment,
 *              batches, completion, the range pass (fsync, DONTNEED)
 *   direct.c   pread and pwrite of pages not in the pool straight between
 *              the namespace and the caller's memory, and their rules
 *   io.c       where bytes hit the namespace: read and write bios, flush,
 *              discard, the in-flight cap
 *   slots.c    namespace space: the slot allocator (free extents), deferred
 *              frees; its types in slots.h
 *   store.c    the on-namespace store: superblock, checkpoint, commit,
 *              format, load at attach, capacity reclaim of regions
 *   journal.c  version 2's metadata journal: a commit appends what
 *              changed; attach replays it after the checkpoint
 *   lease.c    the ownership lease: one read-write attach at a time
 *   names.c    named regions: bind by name, permissions, unlink, list
 *   fs.c       kvtierfs: a tier's persistent named regions as the files
 *              of a mount (their data path is file.c's)
 *   gpu.c      GPU ranges the CUDA shim registers (accounting, debugfs)
 *   tier.c     one tier: its character device, made and destroyed
 *   backing.c  attaching and detaching the namespace (block device)
 *   sysfs.c    /sys/class/kvtier/kvtierN/ attributes (knobs)
 *   debugfs.c  /sys/kernel/debug/kvtier/ (stats)
 *   fail_inject.c  fault injection sites (CONFIG_FAULT_INJECTION_DEBUG_FS)
 *   main.c     module load/unload, the num_tiers parameter, the class
 *   compat.h   kernel API differences, from conftest.sh's HAVE_* probes
 *
 * A page's life: absent (reads as zero, no memory, no slot) -> resident
 * clean or dirty (in the pool, mapped on demand) -> written back (has a
 * slot on the namespace, clean) -> evicted (only the slot remains; the
 * xarray holds the slot number) -> refaulted (read back from the slot).
 * A direct write (direct.c) takes a page that is absent or only on the
 * namespace straight to a fresh slot, never through the pool.
 *
 * Lock order (outermost first; Documentation/kvtier-design.rst has the
 * same list with what each lock is for):
 *   i_rwsem of a kvtierfs inode (fs.c: a file's size grows under it,
 *     kvtier_region_grow(), which takes page locks, then store.lock;
 *     never taken under mmap_lock or any lock below)
 *   mmap_lock / per-VMA lock (fault path)
 *     kvtier_file.lock (binding a region to a file), then
 *     kvtier_tier.lock (attach/detach, open/release, region creation, a
 *       knob write's cross-checks, the ioctls' name lookups (names.c);
 *       never on the I/O path)
 *     kvtier_file.pin_lock (a file's pins)
 *     kvtier_store.lock (commits; loading and unloading the page maps
 *       of closed regions, pagemap.c). Never taken under a page lock, and no
 *       page lock is taken under it: a write-back that finds the namespace
 *       full queues the store's room work (kvtier_store_need_room()). A
 *       budget stall waits for that work (flush_work) under the locks
 *       above it: mmap_lock, pin_lock, tier.lock (detach).
 *     page lock (PG_locked of a resident page; held across its I/O, but
 *       fsync's and background write-back let go of it once the bios are
 *       out: KVT_PG_WRITEBACK, which writers wait for holding the lock. A
 *       task holding such marks never sleeps on a page lock or another
 *       mark: it finishes its batch first, see writeback.c).
 *       Several are held at once by write-back batches, by clean pages
 *       evicted together (struct kvtier_drops: reclaim, DONTNEED) and by
 *       a fault's neighbours (fault-around, file.c); only the range pass
 *       (writeback.c) waits for one while holding others, in index order
 *       within one region; every other holder only tries them.
 *       kvtier_slots.lock (a mutex; only memory allocation under it)
 *       i_mmap_rwsem of a region's address_space (unmap_mapping_range)
 *       kvtier_tier.regions_lock
 *         kvtier_region.pages xa_lock (page locks are only tried under
 *         it: a page locked there is the region's page at its index
 *         until it is unlocked, since a kp leaves the xarray only under
 *         its page lock and is freed after, or with its region, whose
 *         last reference is gone)
 *           kvtier_pool.lock
 *   kvtier_tier.gpu_lock is a leaf: nothing else is taken under it.
 */
#ifndef KVTIER_H
#define KVTIER_H

#include <linux/blk_types.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/math64.h>
#include <linux/uidgid.h>
#include <linux/kvtier_format.h>
#include <linux/mutex.h>
#include <linux/rbtree.h>
#include <linux/refcount.h>
#include <linux/rhashtable.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <linux/kvtier.h>

#include "compat.h"
#include "slots.h"

#define KVTIER_NAME		"kvtier"
#define KVTIER_MAX_TIERS	64

/**
 * struct kvtier_backing - the namespace a tier stages pages to
 * @kb: the exclusively claimed block device; kb.bdev is NULL when detached
 * @path: the path it was attached by, as shown by sysfs backing_dev
 * @nr_sectors: size in 512-byte sectors, sampled at attach
 * @lbs: logical block size in bytes
 */
struct kvtier_backing {
	struct kvtier_bdev kb;
	char *path;
	sector_t nr_sectors;
	unsigned int lbs;
	bool read_only;			/* opened read-only: nothing is written */
};

/**
 * struct kvtier_store - the on-namespace store of an attached tier
 * @lock: serialises commits (and guards every field below but @changes,
 *        @dropping and the geometry, which is fixed while attached)
 * @uuid: the namespace's, from its superblock
 * @format_time: seconds since the epoch
 * @nr_blocks: namespace blocks at format time
 * @meta_start: first block of checkpoint area 0
 * @meta_blocks: blocks of each checkpoint area
 * @data_start: block of data slot 0
 * @nr_slots: data slots
 * @max_regions: persistent regions a checkpoint has room for
 * @version: format version, 1, 2 (INCOMPAT_JOURNAL, journal.c), 3 (and
 *           INCOMPAT_EXTENTS: kvtier_store_extents()) or 4 (and
 *           INCOMPAT_CRC_RUNS: kvtier_store_crc_runs())
 * @crcs_block: version 3: first block of the CRC section of checkpoint
 *              area 0 and 1
 * @crcs_run: version 3: the CRC sections are runs of data slots, held
 *            allocated (INCOMPAT_CRCS_RUN: an upgrade from version 2),
 *            not the ends of the areas
 * @ckpt_extents: the checkpoint the newest superblock names maps pages by
 *                extents (was written as version 3): how closed regions'
 *                maps are read back. Differs from kvtier_store_extents()
 *                only during the checkpoint of an upgrade from version 2
 * @generation: of the last commit that reached the media
 * @ckpt_copy: superblock copy (and checkpoint area) of the last checkpoint;
 *             the next goes to the other (version 1: generation % 2)
 * @journal_start: first data slot of the journal (version 2); the slot
 *                 allocator hands out only the slots before it
 * @journal_blocks: blocks in the journal; 0 for version 1
 * @journal_head: virtual block of the first transaction after the last
 *                checkpoint; the live journal is [@journal_head, @journal_pos)
 * @journal_pos: virtual block where the next transaction goes
 * @gen_min: the lowest generation the next commit may have: after an
 *           attach of a version-2 namespace fell back to the older
 *           superblock copy, past every transaction the journal after the
 *           newer copy's checkpoint can hold (0 otherwise; store.lock)
 * @need_full: the next commit writes a checkpoint, not a transaction: a
 *             transaction failed (the changes it took are not recorded
 *             anywhere else), an unlink found no memory for its record, or
 *             attach fell back to an older copy. Set under regions_lock or
 *             store.lock (setting is always safe); cleared only in the
 *             regions_lock section where a checkpoint takes its regions,
 *             so no change made after that section is lost
 * @dels: struct kvtier_journal_del of persistent regions unlinked since the
 *        last commit took them, under regions_lock: queued in the section
 *        that unlinks, taken in the one that lists the regions to record
 * @ckpt: the checkpoint buffer (kvmalloc or vmalloc), @ckpt_size bytes: a
 *        checkpoint's page records go through its first MiB a MiB at a
 *        time (version 3: its extent records and its CRCs through a half
 *        each), its header and region records are whole after that; a
 *        journal transaction is built in it whole; it grows to the
 *        largest of those and is kept while attached (store.c)
 * @map_buf: KVT_CKPT_CHUNK bytes through which a closed region's page
 *           records (version 3: extent records and CRCs) are read back
 *           (pagemap.c), allocated on first use and
 *           kept while attached; under @lock
 * @unload_work: drops the page maps of closed regions, unlinks regions
 *               whose records are damaged (pagemap.c); delayed, so that
 *               the kicks of many closes make one pass
 * @ckpt_attempt: checkpoints begun since attach (under @lock)
 * @retired_runs: struct kvtier_crc_runs that a checkpoint replaced, whose
 *                runs are deferred once it is on the media (crcruns.c;
 *                under @lock, and regions_lock where it is filled)
 * @crc_runs_bytes: memory of every struct kvtier_crc_runs (a gauge)
 * @lost_slots: slots of destroyed regions whose records were damaged:
 *              taken until the detach forgets them
 * @nr_unloaded: regions whose map is unloaded (pagemap.c; a gauge)
 * @releasing: slots the next successful commit frees
 * @changes: bumped by every change a commit must record (atomic)
 * @committed_changes: @changes as of the last commit's snapshot
 * @commit_work: commits in the background (slots a region let go of)
 * @room_work: makes room when a write-back found the namespace full
 *             (kvtier_store_need_room()), outside every page lock
 * @room_owner: owner of the region whose write-back asked for room last
 *              (its unused regions are reclaimed first; racy, a hint)
 * @room_used: slots in use when a write-back last found none free: a run
 *             that finds fewer makes no room (they were freed since)
 * @room_asked: bumped by every request for room; a waiter compares it with
 *              the value before its write-back (kvtier_store_room_ticket())
 * @room_err: what @room_work's last run did (kvtier_store_wait_room())
 * @closing: detach's final commit is under way, or the store is being
 *           loaded (from kvtier_store_open() to kvtier_store_opened()):
 *           @room_work and @unload_work do nothing, and background
 *           write-back is not queued (pool.clean_work)
 * @dropping: persistent regions are being forgotten, not deleted: their
 *            slots are freed in memory only (detach, failed attach); set
 *            only while kvtier_store_drop_regions() runs
 * @bad_copy: superblock copy (0 or 1) found damaged at attach, or the one
 *            whose checkpoint was: the metadata has no second good
 *            generation until a commit rewrites that copy; -1 when none
 *            (sysfs state "degraded")
 * @has_sealed: the last snapshot had a sealed region (RO_COMPAT_SEALED)
 * @lease_block: block of the ownership lease (lease.c); 0 when the
 *               namespace has none (formatted without RO_COMPAT_LEASE)
 * @lease_held: this tier holds the lease (read-write attach of a namespace
 *              with one); set at attach, cleared at detach, under tier->lock
 * @lease_lost: another attach took the lease over: nothing more is written
 *              (set by @lease_work, read locklessly by the write paths)
 * @lease_seq: seq of the record last written; @lease_nonce: this attach's;
 *             @lease_acquired: when it was taken; @lease_renewed: when the
 *             record was last written (wall seconds). Written at attach (under
 *             tier->lock, before @lease_work exists) and then only by
 *             @lease_work; detach cancels @lease_work before reading them.
 * @lease_interval_ms: renewal interval of this attach (the knob at attach)
 * @lease_work: renews the lease every @lease_interval_ms
 * @upgrading: the commit under way is the checkpoint of an upgrade from
 *             version 1 (kvtier_store_upgrade(); store.lock)
 * @freeze_at: the crash point a commit stops at (enum kvtier_freeze_point,
 *             debugfs freeze_at; tests only), READ_ONCE/WRITE_ONCE
 * @frozen: a commit is stopped at @freeze_at, holding @lock
 * @freeze_wait: where it waits for @freeze_at to change
 */
struct kvtier_store {
	struct mutex lock;		/* commits; see above */
	u8 uuid[16];
	u64 format_time;
	u64 nr_blocks;
	u64 meta_start;
	u64 meta_blocks;
	u64 data_start;
	u64 nr_slots;
	u64 max_regions;
	u32 version;
	u64 crcs_block[2];
	bool crcs_run;
	bool ckpt_extents;
	u64 generation;
	int ckpt_copy;
	u64 journal_start;
	u64 journal_blocks;
	u64 journal_head;
	u64 journal_pos;
	u64 gen_min;
	bool need_full;
	struct list_head dels;
	void *ckpt;
	size_t ckpt_size;
	void *map_buf;
	struct delayed_work unload_work;
	u64 ckpt_attempt;
	struct list_head retired_runs;
	atomic_long_t crc_runs_bytes;
	atomic_long_t lost_slots;
	atomic_long_t nr_unloaded;
	struct kvtier_extents releasing;
	atomic64_t changes;
	s64 committed_changes;
	struct work_struct commit_work;
	struct work_struct room_work;
	kuid_t room_owner;
	unsigned long room_used;
	atomic_t room_asked;
	int room_err;
	bool closing;
	bool dropping;
	int bad_copy;
	bool has_sealed;
	u64 lease_block;
	bool lease_held;
	bool lease_lost;
	u64 lease_seq;
	u64 lease_nonce;
	u64 lease_acquired;
	u64 lease_renewed;
	unsigned int lease_interval_ms;
	struct delayed_work lease_work;
	bool upgrading;
	int freeze_at;
	bool frozen;
	wait_queue_head_t freeze_wait;
};

/*
 * Whether @st's checkpoints map pages by extents, with their CRCs in a CRC
 * section (version 3, INCOMPAT_EXTENTS); else by page records.
 */
static inline bool kvtier_store_extents(const struct kvtier_store *st)
{
	return st->version >= 3;
}

/*
 * Whether @st's checkpoints keep each region's CRCs in runs of data slots
 * of its own, the CRC section only for what found no free slot (version
 * 4, INCOMPAT_CRC_RUNS).
 */
static inline bool kvtier_store_crc_runs(const struct kvtier_store *st)
{
	return st->version >= 4;
}

/*
 * Whether @st's region records have sizes in bytes, and a transaction may
 * make a region larger (version 5, INCOMPAT_FILE_SIZES): files that grow.
 */
static inline bool kvtier_store_file_sizes(const struct kvtier_store *st)
{
	return st->version >= 5;
}

/*
 * Blocks of checkpoint area @copy a checkpoint's records may take: all
 * but the CRC section at its end, where version 3 has it there.
 */
static inline u64 kvtier_index_blocks(const struct kvtier_store *st, int copy)
{
	if (!kvtier_store_extents(st) || st->crcs_run)
		return st->meta_blocks;
	return st->crcs_block[copy] - (st->meta_start + copy * st->meta_blocks);
}

/*
 * Crash points of the persistence tests (debugfs "freeze_at"): a commit
 * that reaches the armed one stops there, with store.lock held, until the
 * point is disarmed, so that the host can cut the power at a known place
 * (tests/persist/run.sh crash). Only checkpoints that take the place of
 * journal transactions stop, and the one of an upgrade from version 1.
 */
enum kvtier_freeze_point {
	KVT_FREEZE_NONE,
	KVT_FREEZE_CKPT_AREA,	/* checkpoint written, superblock not */
	KVT_FREEZE_CKPT_SUPER,	/* superblock written, slots not released */
	KVT_FREEZE_NR,
};

/* Counters in debugfs stats, named by cause. Racy sums; see admin guide. */
enum kvtier_stat {
	KVT_STAT_FAULT_MINOR,
	KVT_STAT_FAULT_MAJOR,
	KVT_STAT_FAULT_ZERO,
	KVT_STAT_FAULT_AROUND,
	KVT_STAT_READAHEAD,
	KVT_STAT_EVICT_CLEAN,
	KVT_STAT_EVICT_DIRTY,
	KVT_STAT_WB_PAGES,
	KVT_STAT_WB_BYTES,
	KVT_STAT_WB_BIOS,
	KVT_STAT_READ_PAGES,
	KVT_STAT_READ_BYTES,
	KVT_STAT_READ_BIOS,
	KVT_STAT_BUDGET_STALL,
	KVT_STAT_PREFETCH,
	KVT_STAT_IO_ERROR,
	KVT_STAT_NOSPACE,
	KVT_STAT_DISCARD,
	KVT_STAT_SHRINK_SCAN,
	KVT_STAT_SHRINK_FREE,
	KVT_STAT_FLUSH,
	KVT_STAT_REFAULT,
	KVT_STAT_CSUM_ERROR,
	KVT_STAT_COMMIT,
	KVT_STAT_JOURNAL_COMMIT,
	KVT_STAT_REGION_RECLAIM,
	KVT_STAT_MAP_LOAD,
	KVT_STAT_MAP_UNLOAD,
	KVT_STAT_VERIFY_AHEAD,
	KVT_STAT_WB_CRC_HELPED,
	KVT_STAT_PAGE_REUSED,
	KVT_STAT_DIRECT_READ,
	KVT_STAT_DIRECT_RETRY,
	KVT_STAT_DIRECT_ASYNC,
	KVT_STAT_DIRECT_WRITE,
	KVT_STAT_DIRECT_WRITE_RETRY,
	KVT_STAT_DIRECT_WRITE_ASYNC,
	KVT_STAT_WB_UNCHECKED,
	KVT_STAT_WB_BACKGROUND,
	KVT_STAT_WB_WAITS,
	KVT_STAT_RECLAIM_WB_SKIPS,
	KVT_STAT_CKPT_CRC_BYTES,
	KVT_STAT_NR,
};

/*
 * Latency histograms (debugfs "latency"): bucket 0 counts t < 1 us, bucket
 * i counts 2^(i-1) <= t < 2^i us, the last bucket everything longer.
 */
#define KVT_HIST_BUCKETS	26

enum kvtier_hist_id {
	KVT_HIST_FAULT_MINOR,
	KVT_HIST_FAULT_MAJOR,
	KVT_HIST_FAULT_ZERO,
	KVT_HIST_READ,
	KVT_HIST_WRITE,
	KVT_HIST_COMMIT_JOURNAL,	/* a commit that wrote a transaction */
	KVT_HIST_COMMIT_CKPT,		/* one that wrote a checkpoint */
	KVT_HIST_NR,
};

/**
 * struct kvtier_hist - a latency histogram (debugfs "latency")
 * @b: counts by log2 microseconds, see kvtier_hist_add()
 * @sum_ns: the sum of every value counted, for averages (Prometheus _sum)
 */
struct kvtier_hist {
	atomic64_t b[KVT_HIST_BUCKETS];
	atomic64_t sum_ns;
};

static inline void kvtier_hist_add(struct kvtier_hist *h, u64 ns)
{
	u64 us = div_u64(ns, NSEC_PER_USEC);

	atomic64_inc(&h->b[min_t(unsigned int, fls64(us), KVT_HIST_BUCKETS - 1)]);
	atomic64_add(ns, &h->sum_ns);
}

/* Bio sizes (debugfs "io"): bucket i counts bios of 2^i pages. */
#define KVT_IO_BUCKETS		9

/*
 * A page that is only on the namespace is an xarray value entry holding
 * its slot and the tier's eviction clock at the time it was evicted (a
 * shadow entry, as in mm/workingset.c): a fault that reads it back within
 * a budget's worth of evictions is a refault, the thrashing signal.
 *
 * An extent is one such entry for an aligned group of KVT_EXTENT_PAGES
 * pages that lie in consecutive slots: an xarray entry of that order (a
 * multi-index entry, as the page cache stores a large folio), holding the
 * group's first slot, the newest eviction clock of its pages and
 * KVT_EXTENT_BIT. It takes one slot of the node above instead of a node
 * of its own, so a region whose pages are on the namespace in runs costs
 * its CRCs per page and next to nothing for its map (mapext.c). Read
 * it with kvt_shadow_slot(), which takes the index.
 */
#define KVT_SLOT_BITS		36
#define KVT_SLOT_MASK		((1UL << KVT_SLOT_BITS) - 1)
#define KVT_CLOCK_BITS		(BITS_PER_LONG - 2 - KVT_SLOT_BITS)
#define KVT_CLOCK_MASK		((1UL << KVT_CLOCK_BITS) - 1)
#define KVT_EXTENT_BIT		(BITS_PER_LONG - 2)
#define KVT_EXTENT_ORDER	XA_CHUNK_SHIFT
#define KVT_EXTENT_PAGES	BIT(KVT_EXTENT_ORDER)

static inline void *kvt_mk_shadow(unsigned long slot, unsigned long clock)
{
	return xa_mk_value(slot | (clock & KVT_CLOCK_MASK) << KVT_SLOT_BITS);
}

static inline void *kvt_mk_extent(unsigned long slot, unsigned long clock)
{
	return xa_mk_value(slot | (clock & KVT_CLOCK_MASK) << KVT_SLOT_BITS |
			   1UL << KVT_EXTENT_BIT);
}

static inline bool kvt_is_extent(const void *entry)
{
	return xa_is_value(entry) &&
	       (xa_to_value(entry) & 1UL << KVT_EXTENT_BIT);
}

/* The slot of the page at @index, whose entry @entry is a value entry. */
static inline unsigned long kvt_shadow_slot(const void *entry, pgoff_t index)
{
	unsigned long slot = xa_to_value(entry) & KVT_SLOT_MASK;

	if (kvt_is_extent(entry))
		slot += index & (KVT_EXTENT_PAGES - 1);
	return slot;
}

static inline unsigned long kvt_shadow_clock(const void *entry)
{
	return xa_to_value(entry) >> KVT_SLOT_BITS & KVT_CLOCK_MASK;
}

/* The shadow the page at @index of extent @extent has once it is split. */
static inline void *kvt_extent_shadow(const void *extent, pgoff_t index)
{
	return kvt_mk_shadow(kvt_shadow_slot(extent, index),
			     kvt_shadow_clock(extent));
}

extern const char * const kvtier_stat_names[KVT_STAT_NR];

/**
 * struct kvtier_knobs - tunables, written through sysfs; defaults, ranges
 * and units are the knob table's (sysfs.c)
 *
 * Read without a lock (READ_ONCE): a change applies to the next decision.
 */
struct kvtier_knobs {
	unsigned int host_budget_mb;
	unsigned int watermark_high;	/* percent of budget */
	unsigned int watermark_low;	/* percent of budget */
	unsigned int dirty_background_pct; /* percent of budget; 0: off */
	unsigned int readahead_kb;
	unsigned int writeback_batch_kb;
	unsigned int max_inflight_kb;
	unsigned int pin_budget_mb;
	unsigned int user_pin_mb;	/* per uid; 0: only pin_budget_mb */
	unsigned int discard;		/* 0 or 1 */
	unsigned int checksum;		/* 0 or 1 */
	unsigned int user_quota_mb;	/* per owner uid; 0: unlimited */
	unsigned int max_regions;	/* per tier; 0: unlimited */
	unsigned int user_max_regions;	/* per owner uid; 0: unlimited */
	unsigned int read_only;		/* 0 or 1; changes only while detached */
	unsigned int lease_interval_ms;	/* ms; changes only while detached */
	unsigned int format_version;	/* 1 to 4; used when formatting */
};

/**
 * struct kvtier_pool - the tier's host pages
 * @lock: protects @lru, @nr_pages and the KVT_PG_LRU bit of every page
 * @lru: resident pages, most recently faulted at the head
 * @nr_pages: pages charged to the budget: resident plus being read
 * @nr_dirty: resident pages with KVT_PG_DIRTY (racy, for stats)
 * @wait: tasks waiting for budget
 * @reclaim_work: background write-back and eviction down to watermark_low
 *                (or @shrink_to, if lower)
 * @shrink_to: pages the shrinker asked the worker to get down to (it could
 *             not write dirty pages back itself); ULONG_MAX when none
 * @shrinker: gives pages back under global memory pressure
 * @clean_work: background write-back while more than dirty_background_pct
 *              of the budget is dirty (writeback.c); a run that falls short
 *              of its goal queues itself again, delayed
 * @clean_pause: that delay, in jiffies: doubled at every run short of its
 *               goal, 0 after one that reached it; the worker's own (and
 *               the attach's, which resets it while no worker can run)
 */
struct kvtier_pool {
	spinlock_t lock;		/* protects lru, nr_pages, KVT_PG_LRU */
	struct list_head lru;
	unsigned long nr_pages;
	atomic_long_t nr_dirty;
	wait_queue_head_t wait;
	struct work_struct reclaim_work;
	struct delayed_work clean_work;
	unsigned long clean_pause;
	unsigned long shrink_to;
	struct shrinker *shrinker;
	spinlock_t spare_lock;		/* protects spare, nr_spare */
	struct list_head spare;		/* evicted pages kept for reuse,
					 * uncharged, on page->lru (pool.c)
					 */
	unsigned long nr_spare;		/* under spare_lock; a gauge without */
	unsigned long no_spares_until;	/* jiffies; the shrinker's last call
					 * + 1 s (READ/WRITE_ONCE)
					 */
};

/**
 * struct kvtier_tier - one tier: /dev/kvtierN, its host pool, its namespace
 * @id: N
 * @dev: the class device; its release frees the tier
 * @cdev: /dev/kvtierN
 * @lock: protects @backing, @nr_open and @nr_mounts. Held across the
 *        block device open and close of attach/detach; never taken on the
 *        I/O path.
 * @backing: the attached namespace (protected by @lock)
 * @nr_open: open files of /dev/kvtierN and of its kvtierfs mount
 *           (protected by @lock); while any exists the namespace cannot
 *           be detached
 * @nr_mounts: kvtierfs superblocks of the tier (protected by @lock):
 *             while one exists the namespace cannot be detached
 * @debugfs: /sys/kernel/debug/kvtier/kvtierN
 * @knobs: tunables (sysfs)
 * @pool: host pages
 * @slots: namespace space; valid while attached
 * @store: the on-namespace store; valid while attached
 * @inflight_bytes: tier I/O submitted and not completed
 * @inflight_wait: submitters waiting under max_inflight_kb
 * @direct_srcu: readers are direct reads between checking their slots and
 *               their bios' completion; a commit waits for them before
 *               it frees (and discards) slots, and so does a direct write
 *               before it frees the slots of the pages it moved (direct.c)
 * @meta_inflight: metadata and lease I/O submitted and not completed
 * @nr_prefetch: regions' WILLNEED prefetches queued or running, at most
 *               KVTIER_PREFETCH_MAX (page.c)
 * @io_progress: jiffies of the last I/O completion, or of the submission
 *               that found no I/O in flight; with I/O outstanding and no
 *               progress for KVTIER_STALL_MS the path is stalled (sysfs
 *               state "degraded"). Racy gauge, written with WRITE_ONCE.
 * @stats: counters
 * @lat: latency histograms, cleared at attach and by writing 0 to debugfs
 * @io_sizes: bio size histograms, [0] reads, [1] writes
 * @io_pages: the pages of the bios counted in @io_sizes, [0] and [1]
 * @evict_clock: evictions that left a shadow entry (see kvt_mk_shadow)
 * @first_error: sticky first I/O error (-errno) since attach, 0 if none
 * @regions_lock: protects @regions, @dirty_regions, @nr_regions and every
 *                entry of @users
 * @regions: every live region of the tier (debugfs "regions")
 * @dirty_regions: the regions of @regions that may have dirty pages, for
 *                 background write-back's pick (writeback.c), so that it
 *                 does not walk every region at each round; see
 *                 kvtier_region.dirty_node
 * @nr_regions: entries of @regions
 * @crc_chunks: CRC chunks its regions hold (crcs.c; atomic)
 * @xa_extents: extent entries in its regions' page xarrays (mapext.c; atomic)
 * @users: what each uid holds (uid in the initial user namespace ->
 *         struct kvtier_user; users.c)
 * @nr_pinned: pages pinned, plus pins being taken (reserved first)
 * @gpu_lock: protects @gpu_ranges and @gpu_next_id
 * @gpu_ranges: GPU ranges registered through the tier's files (gpu.c)
 * @gpu_next_id: id of the last range registered
 */
struct kvtier_tier {
	unsigned int id;
	struct device dev;
	struct cdev cdev;
	struct mutex lock;		/* attach/detach vs open, see above */
	struct kvtier_backing backing;
	unsigned int nr_open;
	unsigned int nr_mounts;
	struct dentry *debugfs;
	struct kvtier_knobs knobs;
	struct kvtier_pool pool;
	struct kvtier_slots slots;
	struct kvtier_store store;
	atomic_long_t inflight_bytes;
	wait_queue_head_t inflight_wait;
	struct srcu_struct direct_srcu;
	atomic_t meta_inflight;
	atomic_t nr_prefetch;
	unsigned long io_progress;
	atomic64_t stats[KVT_STAT_NR];
	struct kvtier_hist lat[KVT_HIST_NR];
	atomic64_t io_sizes[2][KVT_IO_BUCKETS];
	atomic64_t io_pages[2];
	atomic_long_t evict_clock;
	int first_error;
	spinlock_t regions_lock;	/* regions, dirty_regions, names, nr_*, users */
	struct list_head regions;
	struct list_head dirty_regions;
	struct rhashtable names;	/* linked regions by name (names.c) */
	unsigned long nr_persistent;	/* of those, persistent */
	unsigned long nr_regions;
	atomic_long_t crc_chunks;
	atomic_long_t xa_extents;
	struct xarray users;
	atomic_long_t nr_pinned;
	spinlock_t gpu_lock;		/* protects gpu_ranges, gpu_next_id */
	struct list_head gpu_ranges;
	u64 gpu_next_id;
};

/*
 * I/O of the tier outstanding with nothing completed for this long: the
 * path to the namespace is stalled (a fabrics controller reconnecting, a
 * device timing out). Shown as state "degraded".
 */
#define KVTIER_STALL_MS		2000

void kvtier_io_started(struct kvtier_tier *tier, bool was_idle);
void kvtier_io_progress(struct kvtier_tier *tier);
bool kvtier_io_stalled(struct kvtier_tier *tier);

/* Record the tier's first I/O error; later ones only count. */
static inline void kvtier_set_error(struct kvtier_tier *tier, int err)
{
	cmpxchg(&tier->first_error, 0, err);
}

static inline void kvtier_count(struct kvtier_tier *tier, enum kvtier_stat s,
				long n)
{
	atomic64_add(n, &tier->stats[s]);
}

/*
 * A checkpoint's page records are written and read through this much of
 * a buffer, not whole: 65,536 a piece (store.c, pagemap.c).
 */
#define KVT_CKPT_CHUNK		SZ_1M

/**
 * struct kvtier_crc_runs - where a region's CRCs are on the namespace
 *                          (version 4; the CRC run records of its map)
 * @retired: on store.retired_runs once a checkpoint replaced them
 * @keep: of @run, those taken over from the map (only the others are
 *        freed when these runs are retired or abandoned)
 * @cap: runs @run has room for
 * @nr: runs in @run
 * @blocks: blocks of the CRC stream they hold, the sum of their len
 * @run: as in the checkpoint: each run's slot, first block, blocks
 */
struct kvtier_crc_runs {
	struct list_head retired;
	u32 keep;
	u32 cap;
	u32 nr;
	u64 blocks;
	struct kvtier_disk_extent run[];
};

/*
 * A persistent region's page records in the checkpoint area the newest
 * superblock names (pagemap.c).
 * @off: byte offset of the first in the area; @count: how many; @crc:
 *       CRC32C of their @count * 16 bytes. Version 3: of its extent records
 * @pages: version 3: pages its extents map, and CRCs in the CRC section
 * @crcs_off: version 3: byte offset of its first CRC from the start of the
 *            CRC section; @crcs_crc: CRC32C of its @pages * 4 bytes there
 *            (version 4: of its CRC stream, in @runs then from @crcs_off)
 * @runs: version 4: its CRC runs (NULL: none), which @count includes
 *        after its extent records; kept while the region is, loaded or
 *        not, and freed with it
 * @valid: they are the region's page map as of @seq: written by the last
 *         checkpoint (or read at attach) with no page changed since
 * @seq: @changes when the records were taken
 * @changes: pages given a new slot since attach (write-back completion,
 *           journal replay)
 * @unloaded: @pages and @crcs are empty, and there is no inode: the
 *            records are the map
 * @lost: the records are damaged (their CRC failed): the region cannot be
 *        read, is in no commit and is unlinked (pagemap.c). If only its
 *        CRCs are damaged (version 3) its slots are loaded and freed with
 *        it, unless a checkpoint left it out first; else they stay taken
 *        in memory until the next attach (store.lost_slots).
 *        Set once, under store.lock (or before the store is visible); read
 *        locklessly by the open gate, kvtier_pagemap_load()
 * @next_*: what checkpoint attempt @next_ckpt (store.ckpt_attempt) wrote,
 *          taken as the map once its superblock is on the media;
 *          @next_runs NULL: @runs as they are
 */
struct kvtier_region_map {
	u64 off;
	u64 count;
	u32 crc;
	u64 pages;
	u64 crcs_off;
	u32 crcs_crc;
	struct kvtier_crc_runs *runs;
	bool valid;
	bool unloaded;
	bool lost;
	int seq;
	atomic_t changes;
	u64 next_ckpt;
	u64 next_off;
	u64 next_count;
	u32 next_crc;
	u64 next_pages;
	u64 next_crcs_off;
	u32 next_crcs_crc;
	struct kvtier_crc_runs *next_runs;
	int next_seq;
};

/**
 * struct kvtier_region - a mapped KV region of a tier
 * @tier: the tier whose pool and namespace hold the pages
 * @inode: private anonymous inode; its i_mapping is the address_space
 *         every mapping of the region is linked into, so eviction can
 *         unmap a page from all processes with unmap_mapping_range()
 * @nr_pages: size in pages: DIV_ROUND_UP(@size, PAGE_SIZE). Read without
 *            a lock: it only grows (kvtier_region_grow(), with @size)
 * @size: size in bytes; a whole number of pages but for a file of a
 *        kvtierfs mount (format version 5). Changes with @nr_pages, under
 *        tier->regions_lock and the kvtierfs inode's lock; read with
 *        kvtier_region_size()
 * @pages: index -> struct kvtier_page * (resident) or xa_mk_value(slot)
 *         (only on the namespace); absent means never written (zero).
 *         Entries change under the xa_lock with the page locked, or, for a
 *         page not in the pool, by a direct write (direct.c, W5).
 * @ref: the file's reference plus one per in-progress evictor/worker
 * @err: sticky first write-back error (-errno), reported by fsync
 * @id: unique in the tier, for debugfs and tracepoints
 * @owner: fsuid of the creator
 * @node: on tier->regions
 * @lru_node: on its owner's LRU while it is linked and persistent (users.c:
 *            struct kvtier_user.lru), under tier->regions_lock
 * @dirty_node: on tier->dirty_regions from when @nr_dirty goes from 0 to 1
 *              (kvtier_region_dirtied()) until background write-back's
 *              pick finds it at 0, or the region leaves @node; under
 *              tier->regions_lock. Off it, @nr_dirty is 0, or about to
 *              be put back by the task that made it 1
 * @nr_resident: pages in the pool (racy gauges and counters below are for
 *               inspection only; nothing decides on them)
 * @nr_dirty: of those, dirty
 * @nr_slots: slots on the namespace
 * @nr_faults: faults served
 * @nr_refaults: of those, refaults
 * @nr_pinned: pages pinned
 * @last_use: jiffies of the last fault or read/write
 * @crcs: CRC32C of each page's last written-back copy, in chunks by index
 *        (crcs.c); set when the write completes (under the xa_lock, with
 *        the page's slot), checked by the first user of a page read back
 * @nr_crc_chunks: chunks in @crcs
 * @nr_extents: extent entries in @pages (mapext.c: changes under its xa_lock)
 * @users: files bound to the region, plus one while it is named (linked);
 *         the region is destroyed when it drops to zero
 * @name: "" for an unnamed region
 * @linked: the name can be found: in tier->names (under tier->regions_lock)
 * @name_node: in tier->names while @linked
 * @mode: permission bits of a named region
 * @gid: fsgid of the creator
 * @created: creation time, seconds since the epoch
 * @ra_next: index after the last read from the namespace; a miss there
 *           continues a sequential run and gets the full readahead window
 * @ra_pos: index of the last access of a sequential run (the reader's
 *          position, for @ra_work)
 * @clean_next: where background write-back's next pass over the region
 *              starts (after the last page it took; a hint, READ/WRITE_ONCE)
 * @ra_seq: the last miss continued a sequential run: @ra_work may read
 *          ahead of the reader
 * @ra_start: index of the first miss of the current sequential run
 * @ra_work: asynchronous readahead (page.c): keeps reads submitted up
 *           to a few windows past @ra_pos, so a sequential reader does not
 *           wait for one window at a time. Queued holding a region
 *           reference, which it drops when done; the workqueue runs it at
 *           most once at a time. @ra_next, @ra_pos, @ra_seq and @ra_start
 *           are hints,
 *           read and written with READ_ONCE/WRITE_ONCE and no lock: a
 *           stale value costs a smaller or a wasted read, never data (the
 *           pages themselves change only under the xa_lock and page lock)
 * @persistent: named and kept on the namespace (fixed at creation); its
 *              pages are written copy-on-write (see slots.c)
 * @pinned: never reclaimed for space (KVTIER_REGION_PINNED)
 * @sealed: immutable (KVTIER_REGION_SEALED): bound read-only only; set
 *          under regions_lock while no file is bound, never cleared
 * @gpu_bytes: bytes of its mappings registered as KVTIER_GPU_HMM ranges
 * @pf_lock: guards @pf_first and @pf_last
 * @pf_first: first page WILLNEED asked for that @pf_work has not taken
 *            yet; @pf_last the last; @pf_first > @pf_last when none. Calls
 *            made while it is queued widen the range: one prefetch per
 *            region, however many calls
 * @pf_work: WILLNEED prefetch (page.c); queued holding a region
 *           reference and a count in tier->nr_prefetch, dropped when done
 * @jr_changed: a persistent region on a version-2 store was created or
 *              changed (attributes, or pages, which carry KVT_XA_CHANGED in
 *              @pages) since a commit last recorded it; exchanged to 0 by
 *              the commit that records it (journal.c)
 * @jr_pages: entries of @pages that carry KVT_XA_CHANGED, changed with the
 *            mark under @pages' xa_lock: what bounds a transaction's size
 * @map: where a persistent region's page records are in the checkpoint on
 *       the media, so that a closed one need not keep @pages and @crcs
 *       (pagemap.c). Under store.lock, except @map.unloaded (also set
 *       under regions_lock; read locklessly with acquire, pagemap.c) and
 *       @map.changes (atomic)
 */
struct kvtier_region {
	struct kvtier_tier *tier;
	struct inode *inode;
	pgoff_t nr_pages;
	loff_t size;
	struct xarray pages;
	refcount_t ref;
	int err;
	u64 id;
	kuid_t owner;
	struct list_head node;
	struct list_head lru_node;
	struct list_head dirty_node;
	atomic_long_t nr_resident;
	atomic_long_t nr_dirty;
	atomic_long_t nr_slots;
	atomic_long_t nr_faults;
	atomic_long_t nr_refaults;
	atomic_long_t nr_pinned;
	unsigned long last_use;
	struct xarray crcs;
	atomic_long_t nr_crc_chunks;
	atomic_long_t nr_extents;
	refcount_t users;
	char name[KVTIER_NAME_MAX];
	bool linked;
	struct rhash_head name_node;
	umode_t mode;
	kgid_t gid;
	time64_t created;
	pgoff_t ra_next;
	pgoff_t clean_next;
	pgoff_t ra_pos;
	pgoff_t ra_start;
	bool ra_seq;
	struct work_struct ra_work;
	bool persistent;
	bool pinned;
	bool sealed;
	atomic_long_t gpu_bytes;
	spinlock_t pf_lock;		/* pf_first, pf_last */
	pgoff_t pf_first;
	pgoff_t pf_last;
	struct work_struct pf_work;
	atomic_t jr_changed;
	atomic_long_t jr_pages;
	struct kvtier_region_map map;
};

/*
 * Mark of an entry of kvtier_region.pages whose slot changed since a
 * commit recorded it (version-2 stores): set with the slot under the
 * xa_lock, cleared by the commit that records it. An entry keeps its
 * marks when a page is evicted to a shadow entry and back.
 */
#define KVT_XA_CHANGED		XA_MARK_1

/* Per-page state of a resident page (zram-style, behind accessors). */
enum kvtier_page_flag {
	KVT_PG_UPTODATE,	/* contents valid: zero-filled or read */
	KVT_PG_DIRTY,		/* newer than the namespace copy */
	KVT_PG_ERROR,		/* the read from the namespace failed */
	KVT_PG_REFERENCED,	/* used since the clock hand last passed */
	KVT_PG_LRU,		/* on pool->lru (changes under pool->lock) */
	KVT_PG_PINNED,		/* never evicted: kvtier_page.pins > 0 */
	KVT_PG_VERIFY,		/* read in, checksum not yet checked: not
				 * UPTODATE until its first user, holding
				 * the page lock, checks it (io.c)
				 */
	KVT_PG_GUP,		/* a GUP reference was held when write-back
				 * took its snapshot: DMA may change the
				 * page under the bio, so it stays dirty
				 * (writeback.c, under the page lock); kept
				 * until the next write-back plans it, so
				 * background write-back passes it over
				 */
	KVT_PG_ZEROED,		/* new from the page allocator, which zeroed
				 * it (init_on_alloc): a zero-fill need not
				 * clear it again; only read by the
				 * zero-fill right after kvtier_page_new()
				 */
	KVT_PG_NOCRC,		/* the write-back in progress computed no
				 * CRC (checksum off, not persistent): valid
				 * with @crc, under the write-back
				 */
	KVT_PG_WRITEBACK,	/* being written back with its lock let go
				 * (writeback.c): readers and faults may
				 * use it; writers, eviction and other
				 * write-backs wait or pass it over. Set
				 * under the page lock, cleared without it
				 * (clear_and_wake_up_bit) by the task that
				 * started the write, which holds a page
				 * reference until then
				 */
};

/**
 * struct kvtier_page - a resident page of a region
 * @page: the host page; the pool holds one reference
 * @region: owner
 * @index: page index in @region
 * @slot: namespace slot holding its last written-back copy, or KVTIER_NO_SLOT;
 *        changes under the region's xa_lock when a write-back completes
 * @wb_slot: the slot a write-back in progress writes to (valid under it)
 * @crc: CRC32C of the copy being written back (valid under write-back)
 * @pins: bindings that pin the page (pin.c); KVT_PG_PINNED is set while
 *        it is not zero. Changes under the page lock.
 * @flags: KVT_PG_* bits
 * @lru: on pool->lru
 */
struct kvtier_page {
	struct page *page;
	struct kvtier_region *region;
	pgoff_t index;
	unsigned long slot;
	unsigned long wb_slot;
	u32 crc;
	u32 pins;
	unsigned long flags;
	struct list_head lru;
};

static inline bool kvt_pg_test(const struct kvtier_page *kp,
			       enum kvtier_page_flag f)
{
	return test_bit(f, &kp->flags);
}

static inline void kvt_pg_set(struct kvtier_page *kp, enum kvtier_page_flag f)
{
	set_bit(f, &kp->flags);
}

static inline void kvt_pg_clear(struct kvtier_page *kp, enum kvtier_page_flag f)
{
	clear_bit(f, &kp->flags);
}

static inline bool kvt_pg_test_and_clear(struct kvtier_page *kp,
					 enum kvtier_page_flag f)
{
	return test_and_clear_bit(f, &kp->flags);
}

static inline bool kvt_pg_test_and_set(struct kvtier_page *kp,
				       enum kvtier_page_flag f)
{
	return test_and_set_bit(f, &kp->flags);
}

/*
 * Is @kp marked KVT_PG_WRITEBACK? An acquire, pairing with the release in
 * clear_and_wake_up_bit() (writeback.c): a page found unmarked shows the
 * slot, CRC and clean state its write-back recorded.
 */
static inline bool kvt_pg_writeback(const struct kvtier_page *kp)
{
	return test_bit_acquire(KVT_PG_WRITEBACK, &kp->flags);
}

/*
 * Is @kp still the region's page at @index, with @page, which the caller
 * holds locked (and a reference to)? kp may have been freed before the
 * lock was taken, so it is looked at under the xa_lock, which every free
 * of a published kp takes to remove it first (but a region's own
 * destruction, which no caller with a region reference can meet). If it
 * is, it stays so until the caller unlocks @page: removing it takes that
 * lock.
 */
static inline bool kvtier_page_is_at(struct kvtier_region *region,
				     pgoff_t index, struct kvtier_page *kp,
				     struct page *page)
{
	bool ret;

	xa_lock(&region->pages);
	ret = xa_load(&region->pages, index) == kp && kp->page == page;
	xa_unlock(&region->pages);
	return ret;
}

/* The one conversion of the knobs' units (KiB, MiB) to pages. */
static inline unsigned long kvtier_kb_pages(unsigned long kb)
{
	return kb >> (PAGE_SHIFT - 10);
}

static inline unsigned long kvtier_mb_pages(unsigned long mb)
{
	return (unsigned long)mb << (20 - PAGE_SHIFT);
}

static inline unsigned long kvtier_budget_pages(struct kvtier_tier *tier)
{
	return kvtier_mb_pages(READ_ONCE(tier->knobs.host_budget_mb));
}

/* Pages of one write-back batch (writeback_batch_kb), at least one. */
static inline unsigned int kvtier_writeback_batch(struct kvtier_tier *tier)
{
	return max(1UL, kvtier_kb_pages(READ_ONCE(tier->knobs.writeback_batch_kb)));
}

static inline struct kvtier_tier *dev_to_tier(struct device *dev)
{
	return container_of(dev, struct kvtier_tier, dev);
}

/* fs.c: kvtierfs */
int kvtierfs_open(struct inode *inode, struct file *file);
int kvtierfs_init(void);
void kvtierfs_exit(void);

/* main.c */
extern struct class kvtier_class;
struct kvtier_tier *kvtier_tier_by_id(unsigned int id);
extern struct vfsmount *kvtier_mnt;
extern struct kmem_cache *kvtier_page_cache;
extern struct workqueue_struct *kvtier_wq;
extern struct workqueue_struct *kvtier_lease_wq;
extern struct workqueue_struct *kvtier_direct_wq;

/**
 * struct kvtier_file - an open file of /dev/kvtierN
 * @tier: the tier
 * @inode: private anonymous inode whose i_mapping is the file's f_mapping
 *	until a region is bound; NULL for a kvtierfs file (bound at open)
 * @lock: serialises binding @region (first mmap, KVTIER_IOC_REGION_CREATE,
 *	a name); readers do not take it, see kvtier_file_region()
 * @region: the file's region, or NULL; set once, with smp_store_release()
 *	after @readonly and the file's f_mapping, and never changed
 * @readonly: bound with KVTIER_OPEN_RDONLY: no writable mapping, no pwrite
 * @pin_lock: serialises the file's PIN, UNPIN and release of its pins
 * @pins: indices of @region this file pins (value entries; pin.c)
 */
struct kvtier_file {
	struct kvtier_tier *tier;
	struct inode *inode;
	struct mutex lock;		/* binds region */
	struct kvtier_region *region;
	bool readonly;
	struct mutex pin_lock;		/* protects pins */
	struct xarray pins;
};

/* file.c: the file operations; where a page fault is served */
extern const struct file_operations kvtier_fops;
extern const struct file_operations kvtierfs_file_fops;
struct kvtier_file *kvtier_file_new(struct kvtier_tier *tier,
				    struct file *file, bool anon);
int kvtier_file_create_region(struct kvtier_file *kf, loff_t size);
struct kvtier_region *kvtier_file_region(struct file *file);
int kvtier_file_sync(struct kvtier_region *region, loff_t start, loff_t end,
		     bool evict, bool flush);
struct kvtier_region *kvtier_vma_region(struct vm_area_struct *vma);

/* page.c: finding, reading back and publishing pages; readahead */
enum kvtier_get {
	KVT_GET_MINOR,		/* was resident */
	KVT_GET_ZERO,		/* never written: zero-filled, no I/O */
	KVT_GET_MAJOR,		/* read from the namespace */
	KVT_GET_BLANK,		/* kvtier_get_page_blank(): to be written whole */
};

struct kvtier_page *kvtier_get_page(struct kvtier_region *region,
				    pgoff_t index, enum kvtier_get *how);
struct kvtier_page *kvtier_get_page_nowait(struct kvtier_region *region,
					   pgoff_t index);
struct kvtier_page *kvtier_get_page_blank(struct kvtier_region *region,
					  pgoff_t index, enum kvtier_get *how);
bool kvtier_page_blank_end(struct kvtier_page *kp, size_t filled);
bool kvtier_page_ready(struct kvtier_page *kp);
void kvtier_ra_async(struct kvtier_region *region, pgoff_t index);
void kvtier_read_request(struct kvtier_region *region, pgoff_t index,
			 pgoff_t last, pgoff_t *next);
void kvtier_ra_work(struct work_struct *work);
void kvtier_prefetch(struct kvtier_region *region, pgoff_t first,
		     pgoff_t last);
void kvtier_prefetch_work(struct work_struct *work);

/* region.c: a region's life */
struct kvtier_region *kvtier_region_new(struct kvtier_tier *tier,
					struct inode *inode, loff_t size);
bool kvtier_region_tryget(struct kvtier_region *region);
void kvtier_region_put(struct kvtier_region *region);
void kvtier_region_dirtied(struct kvtier_region *region);
int kvtier_region_publish(struct kvtier_region *region);
void kvtier_region_put_user(struct kvtier_region *region);
time64_t kvtier_region_last_used(struct kvtier_region *region);
int kvtier_region_set_size(struct kvtier_region *region, loff_t size,
			   bool exempt);
int kvtier_region_grow(struct kvtier_region *region, loff_t size, bool exempt);

/* Bytes in @region: its pages, or less for a kvtierfs file (version 5). */
static inline loff_t kvtier_region_size(struct kvtier_region *region)
{
	/* Pairs with kvtier_region_set_size(): its pages are there. */
	return smp_load_acquire(&region->size);
}

/* users.c */
int kvtier_user_prepare(struct kvtier_tier *tier, kuid_t uid);
int kvtier_region_admit(struct kvtier_tier *tier, kuid_t owner,
			pgoff_t nr_pages, bool exempt);
int kvtier_region_admit_early(struct kvtier_tier *tier, pgoff_t nr_pages,
			      bool exempt);
void kvtier_region_list_add(struct kvtier_region *region);
void kvtier_region_list_del(struct kvtier_region *region);
int kvtier_user_charge_pages(struct kvtier_region *region, pgoff_t nr,
			     bool exempt);
void kvtier_user_lru_add(struct kvtier_region *region, bool sorted);
void kvtier_user_lru_closed(struct kvtier_region *region);
void kvtier_users_lru_sort(struct kvtier_tier *tier);
struct kvtier_region *kvtier_user_lru_victim(struct kvtier_tier *tier,
					     kuid_t owner);
int kvtier_user_charge_pins(struct kvtier_tier *tier, kuid_t uid,
			    unsigned long nr);
void kvtier_user_uncharge_pins(struct kvtier_tier *tier, kuid_t uid,
			       unsigned long nr);
void kvtier_users_destroy(struct kvtier_tier *tier);

/* crc.c */
u32 kvtier_crc32c(const void *p, size_t len);
u32 kvtier_crc32c_cat(u32 crc_a, u32 crc_b, size_t len_b);
int kvtier_crc_module_init(void);
void kvtier_crc_module_exit(void);

/* mapext.c: a group of pages in consecutive slots as one entry */
void kvtier_mapext_make_locked(struct kvtier_region *r, pgoff_t index);
int kvtier_mapext_split(struct kvtier_region *r, pgoff_t index, gfp_t gfp);
int kvtier_mapext_split_locked(struct kvtier_region *r, pgoff_t index);
void kvtier_mapext_make_all(struct kvtier_region *r);
void kvtier_mapext_walked(struct kvtier_region *r, struct xa_state *xas,
			  unsigned long *group);
void kvtier_mapext_forget(struct kvtier_region *r);

/* crcruns.c: a region's CRCs in runs of data slots (version 4) */
struct kvtier_crc_runs *kvtier_crc_runs_new(struct kvtier_store *st,
					    const struct kvtier_crc_runs *old,
					    u32 cap);
void kvtier_crc_runs_free(struct kvtier_store *st, struct kvtier_crc_runs *runs);
int kvtier_crc_runs_room(struct kvtier_store *st, struct kvtier_crc_runs **runs);
void kvtier_crc_runs_add(struct kvtier_crc_runs *runs, u64 slot, u32 len, bool join);
void kvtier_crc_runs_put_slots(struct kvtier_tier *tier,
			       const struct kvtier_crc_runs *runs, u32 from,
			       bool defer);
unsigned long kvtier_crc_runs_slot(const struct kvtier_crc_runs *runs,
				   u64 block, u64 *nr);
void kvtier_crc_runs_retire(struct kvtier_store *st, struct kvtier_region_map *m);
void kvtier_crc_runs_release(struct kvtier_tier *tier);
void kvtier_crc_runs_abandon(struct kvtier_store *st, struct kvtier_region_map *m);
void kvtier_crc_runs_destroy(struct kvtier_region *r);

/* Of @m's records, the extent (or page) records: not its CRC run records. */
static inline u64 kvtier_map_extent_records(const struct kvtier_region_map *m)
{
	return m->count - (m->runs ? m->runs->nr : 0);
}

/*
 * Bytes of a CRC stream of @pages pages that @runs (may be NULL) do not
 * hold: those in the CRC section.
 */
static inline u64 kvtier_crcs_tail(u64 pages, const struct kvtier_crc_runs *runs)
{
	u64 all = pages * sizeof(__le32);
	u64 held = runs ? runs->blocks * KVTIER_BLOCK_SIZE : 0;

	return all > held ? all - held : 0;
}

/* crcs.c */
int kvtier_crcs_reserve(struct kvtier_region *region, pgoff_t index, gfp_t gfp);
int kvtier_crcs_reserve_range(struct kvtier_region *region, pgoff_t index,
			      pgoff_t nr, gfp_t gfp);
void kvtier_crcs_set(struct kvtier_region *region, pgoff_t index, u32 crc,
		     bool unchecked);
bool kvtier_crcs_get(struct kvtier_region *region, pgoff_t index, u32 *crc);
bool kvtier_crcs_unchecked(struct kvtier_region *region, pgoff_t index);
unsigned long kvtier_crcs_bytes(struct kvtier_region *region);

/* pagemap.c */
struct kvtier_disk_page;

/*
 * Whether a page record of index @index may follow the one of index *@prev
 * (-1 before the first) in @r: indexes increase and stay inside the
 * region. Sets *@prev to @index if so.
 */
static inline bool kvtier_record_index_next(struct kvtier_region *r, u32 index,
					    s64 *prev)
{
	if ((s64)index <= *prev || index >= r->nr_pages)
		return false;
	*prev = index;
	return true;
}

/*
 * What a half of the map buffer holds during a checkpoint's copies of
 * closed regions' maps (pagemap.c): @nr blocks from @first of the stream
 * (records, or CRCs); @nr 0: nothing.
 */
struct kvtier_map_win {
	u64 first;
	u64 nr;
};

int kvtier_pagemap_walk(struct kvtier_region *r,
			int (*fn)(struct kvtier_region *r, void *arg,
				  const struct kvtier_disk_page *p, size_t n),
			void *arg);
int kvtier_pagemap_copy(struct kvtier_region *r, struct kvtier_map_win *win,
			int (*fn)(void *arg, bool crcs, const void *p, size_t n),
			void *arg);
int kvtier_pagemap_load_locked(struct kvtier_region *r);
int kvtier_pagemap_load_replay(struct kvtier_region *r);
int kvtier_pagemap_load(struct kvtier_region *r);
int kvtier_pagemap_load_to_unlink(struct kvtier_region *r);
void kvtier_pagemap_damaged(struct kvtier_region *r);
void kvtier_pagemap_unload_closed(struct kvtier_tier *tier);
void kvtier_pagemap_kick(struct kvtier_tier *tier);
void kvtier_pagemap_checkpointed(struct kvtier_tier *tier, u64 attempt, bool ok);
int kvtier_pagemap_load_all(struct kvtier_tier *tier);
void kvtier_pagemap_init(struct kvtier_store *st);
void kvtier_crcs_destroy(struct kvtier_region *region);
u64 kvtier_crcs_chunk_bytes(void);

/* pin.c */
long kvtier_file_pin(struct file *file, const struct kvtier_pin *pin, bool pin_it);
void kvtier_pin_release(struct file *file);

/* gpu.c */
struct seq_file;
long kvtier_ioctl_gpu_register(struct kvtier_file *kf,
			       struct kvtier_gpu_range __user *uarg);
long kvtier_ioctl_gpu_unregister(struct kvtier_file *kf,
				 struct kvtier_gpu_range __user *uarg);
void kvtier_gpu_release(struct kvtier_file *kf);
void kvtier_gpu_show(struct seq_file *m, struct kvtier_tier *tier);

/* names.c */
long kvtier_ioctl_region_open(struct file *file,
			      struct kvtier_region_open __user *uarg);
long kvtier_ioctl_region_unlink(struct kvtier_tier *tier,
				struct kvtier_region_name __user *uarg);
long kvtier_ioctl_region_list(struct kvtier_tier *tier,
			      struct kvtier_region_list __user *uarg);
long kvtier_ioctl_region_setflags(struct kvtier_tier *tier,
				  struct kvtier_region_flags __user *uarg);
int kvtier_names_init(struct kvtier_tier *tier);
void kvtier_names_exit(struct kvtier_tier *tier);
void kvtier_names_drop_all(struct kvtier_tier *tier);
int kvtier_name_valid(const char *name);
struct kvtier_region *kvtier_name_find(struct kvtier_tier *tier,
				       const char *name);
int kvtier_name_may_bind(struct kvtier_region *region, bool rdonly);
struct kvtier_region *kvtier_name_create_file(struct kvtier_tier *tier,
					      const char *name, umode_t mode);
int kvtier_name_hash(struct kvtier_region *region);
bool kvtier_name_unhash(struct kvtier_region *region);
u64 kvtier_nr_persistent(struct kvtier_tier *tier);
int kvtier_name_unlink(struct kvtier_region *region);
int kvtier_name_rename(struct kvtier_region *region, const char *to,
		       struct kvtier_region *target);
bool kvtier_name_relink(struct kvtier_region *region);
struct kvtier_region *kvtier_name_get(struct kvtier_tier *tier,
				      const char *name);

/* pool.c: the budget, the LRU, eviction, page alloc/free, the shrinker */
int kvtier_pool_init(struct kvtier_tier *tier);
void kvtier_pool_exit(struct kvtier_tier *tier);
int kvtier_pool_charge(struct kvtier_tier *tier, bool may_wait);
void kvtier_pool_wake(struct kvtier_pool *pool);
void kvtier_pool_uncharge(struct kvtier_tier *tier, unsigned long nr);
void kvtier_pool_add(struct kvtier_tier *tier, struct kvtier_page *kp);
void kvtier_pool_del(struct kvtier_tier *tier, struct kvtier_page *kp);
void kvtier_pool_mark_dirty(struct kvtier_tier *tier, struct kvtier_page *kp);
long kvtier_reclaim(struct kvtier_tier *tier, unsigned long nr, bool writeback);
void kvtier_pool_kick(struct kvtier_tier *tier);
bool kvtier_pool_reclaiming(struct kvtier_tier *tier);
int kvtier_evict_page(struct kvtier_page *kp, bool unmapped);
void kvtier_pages_sort(struct kvtier_page **kps, unsigned int nr);
void kvtier_unmap_runs(struct kvtier_page **kps, unsigned int nr);

/* Clean pages evicted together; on the stack (a budget stall reaches here). */
#define KVTIER_DROP_BATCH	16

/**
 * struct kvtier_drops - clean pages to evict together (pool.c)
 * @nr: pages in @kps
 * @region_refs: each page also holds a reference to its region (reclaim's
 *               kvtier_lru_isolate()), put after its eviction
 * @freed: pages evicted by the flushes so far
 * @busy: pages a flush kept for another reference (a GUP pin, a lookup)
 * @kps: locked, each with a page reference; kvtier_drops_flush() consumes
 *       the locks and references. Pages of one tier, not pinned.
 *
 * Unmapping a page costs a TLB flush, and in a process whose threads run
 * on other CPUs a shootdown (an IPI to each and a wait for all): the
 * flush unmaps each run of consecutive indexes once, not each page.
 */
struct kvtier_drops {
	unsigned int nr;
	bool region_refs;
	unsigned long freed;
	unsigned int busy;
	struct kvtier_page *kps[KVTIER_DROP_BATCH];
};

void kvtier_drops_add(struct kvtier_drops *d, struct kvtier_page *kp);
void kvtier_drops_flush(struct kvtier_drops *d);
struct kvtier_page *kvtier_page_new(struct kvtier_region *region,
				    pgoff_t index, bool may_wait);
void kvtier_page_free(struct kvtier_page *kp);
void kvtier_page_zero(struct kvtier_page *kp);
unsigned long kvtier_spare_free(struct kvtier_tier *tier, unsigned long nr);

/* The bios of a write batch in flight (io.c, kvtier_io_write_start()). */
struct kvtier_io_batch {
	atomic_t pending;		/* bios in flight, + 1 until the wait */
	struct completion done;
	unsigned int nr, bios;
	int *errs;			/* per page, set by the completions */
};

/*
 * A write-back batch between kvtier_writeback_start() and
 * kvtier_writeback_finish(). Its pages stay locked throughout, but a
 * start asked to release them unlocks those whose bios went out
 * (KVT_PG_WRITEBACK); finishing them takes them out of @kps, leaving
 * the caller the ones it still holds locked.
 */
struct kvtier_wb {
	struct kvtier_tier *tier;
	struct kvtier_page **kps;	/* the batch, sorted by start */
	unsigned int nr;
	struct kvtier_page **wr;	/* those submitted, and their count */
	unsigned int n;
	int *errs;			/* nr for kps, then n for wr */
	int ret;			/* an error before submission */
	unsigned int released;		/* wr[0..released) were unlocked */
	unsigned long cleaned;		/* of those, clean when finished */
	struct kvtier_io_batch io;
};

/*
 * Two write-back batches in flight (reclaim, the range pass): the next is
 * collected in batch[cur] while wb[!cur] is written. One allocation holds
 * it and both batches' arrays (kvtier_wb_pair_alloc(); kfree() frees it).
 */
struct kvtier_wb_pair {
	struct kvtier_wb wb[2];
	struct kvtier_page **batch[2];
	unsigned int batch_max;		/* pages each batch array holds */
	unsigned int cur;
	bool behind;			/* wb[!cur] is in flight */
	bool background;		/* background write-back's: a full
					 * namespace asks for no room
					 */
	bool release;			/* batches unlock their pages once
					 * submitted (struct kvtier_wb)
					 */
	struct kvtier_page *kps[];
};

/* writeback.c: where dirty pages go to the namespace */
void kvtier_writeback_start(struct kvtier_wb *wb, struct kvtier_tier *tier,
			    struct kvtier_page **kps, unsigned int nr,
			    bool ask_room, bool release);
int kvtier_page_wait_writeback(struct kvtier_page *kp);
int kvtier_writeback_finish(struct kvtier_wb *wb);
struct kvtier_wb_pair *kvtier_wb_pair_alloc(unsigned int batch_max, gfp_t gfp);
struct kvtier_wb *kvtier_wb_pair_start(struct kvtier_wb_pair *p,
				       struct kvtier_tier *tier,
				       unsigned int nr);
struct kvtier_wb *kvtier_wb_pair_written(struct kvtier_wb_pair *p);
struct kvtier_wb *kvtier_wb_pair_behind(struct kvtier_wb_pair *p);
unsigned int kvtier_wb_pair_inflight(const struct kvtier_wb_pair *p);
int kvtier_region_writeback(struct kvtier_region *region, pgoff_t first,
			    pgoff_t last, bool evict);
long kvtier_dirty_excess(struct kvtier_tier *tier, unsigned int div);
bool kvtier_clean_room(struct kvtier_tier *tier, unsigned long nr);
void kvtier_writeback_background(struct work_struct *work);

/* direct.c: pread and pwrite between the caller's memory and the namespace */
struct iov_iter;
bool kvtier_direct_ok(loff_t pos, const struct iov_iter *to);
ssize_t kvtier_direct_read(struct kvtier_region *region, pgoff_t index,
			   pgoff_t last, struct iov_iter *to, pgoff_t *pool_to);
ssize_t kvtier_direct_write(struct kvtier_region *region, pgoff_t index,
			    pgoff_t last, struct iov_iter *from,
			    pgoff_t *pool_to);
ssize_t kvtier_direct_write_async(struct kvtier_region *region,
				  struct kiocb *iocb, struct iov_iter *from);
ssize_t kvtier_direct_read_async(struct kvtier_region *region,
				 struct kiocb *iocb, struct iov_iter *to);

/* io.c: where bytes hit the namespace (bios) */
void kvtier_io_drain(struct kvtier_tier *tier);
int kvtier_io_read(struct kvtier_tier *tier, struct kvtier_page **kps,
		   unsigned int nr);

/**
 * struct kvtier_ubio - one bio of a direct read or write (direct.c, io.c)
 * @tier: whose namespace
 * @bio: set when prepared
 * @slot: first slot; the pages are at consecutive slots
 * @nr: pages asked for; once prepared, pages to move
 * @first: its first page, counted from the direct read's or write's first
 * @err: its status, once completed
 * @write: a direct write: from the caller's pages to the slots
 * @verify: queue @work when the read succeeded (its CRCs, direct.c)
 * @claimed: @work or the reader took the CRC check (the other skips it)
 * @crc_ok: what the check found
 * @start_ns: when it was submitted
 * @srcu_idx: of the tier's direct_srcu, entered before a read's
 *            submission and left by its completion
 * @pending: bios of the direct read or write in flight, plus one for the
 *           submitter
 * @end: called when @pending drops to zero (may free this)
 * @work: checks the pages read on another CPU while others are in flight
 */
struct kvtier_ubio {
	struct kvtier_tier *tier;
	struct bio *bio;
	unsigned long slot;
	unsigned int nr;
	unsigned int first;
	int err;
	bool write;
	bool verify;
	atomic_t claimed;
	bool crc_ok;
	u64 start_ns;
	int srcu_idx;
	atomic_t *pending;
	void (*end)(struct kvtier_ubio *ur);
	struct work_struct work;
};

int kvtier_io_prepare_user(struct kvtier_ubio *ur, const struct iov_iter *iter,
			   gfp_t gfp);
void kvtier_io_submit_user(struct kvtier_ubio *ur, bool reserved);
bool kvtier_inflight_reserve(struct kvtier_tier *tier, long bytes);
void kvtier_inflight_unreserve(struct kvtier_tier *tier, long bytes);
void kvtier_io_user_done(struct bio *bio);
bool kvtier_io_verify(struct kvtier_tier *tier, struct kvtier_page *kp);
unsigned int kvtier_io_write_start(struct kvtier_tier *tier,
				   struct kvtier_page **kps, unsigned int nr,
				   int *errs, struct kvtier_io_batch *b);
int kvtier_io_write_wait(struct kvtier_tier *tier, struct kvtier_io_batch *b);
int kvtier_io_flush(struct kvtier_tier *tier);
#define KVT_META_QUIET	0x1	/* kvtier_io_meta(): the lease's own I/O */
int kvtier_io_meta(struct kvtier_tier *tier, blk_opf_t opf, u64 block,
		   void *buf, unsigned int nr, unsigned int flags);
void kvtier_io_discard(struct kvtier_tier *tier, unsigned long slot,
		       unsigned long nr);

/**
 * struct kvtier_meta_mem - the kernel memory of a tier's metadata, in
 *                          bytes (sysfs "metadata"; racy gauges)
 * @regions: each region's struct kvtier_region and inode
 * @page_maps: the regions' page xarrays (slot numbers and resident pages),
 *             estimated as one xarray node per 64-page group that holds a
 *             page on the namespace and is not an extent, plus the nodes
 *             above those
 * @crcs: the regions' CRC32C chunks (crcs.c)
 * @allocator: the slot allocator's runs: free, deferred and releasing
 * @buffer: the checkpoint buffer, which journal transactions use too
 */
struct kvtier_meta_mem {
	u64 regions;
	u64 page_maps;
	u64 crcs;
	u64 allocator;
	u64 buffer;
};

void kvtier_meta_mem(struct kvtier_tier *tier, struct kvtier_meta_mem *m);

/* store.c: open/close/drop under tier->lock */
void kvtier_store_init(struct kvtier_store *st);
int kvtier_store_open(struct kvtier_tier *tier, bool format);
void kvtier_store_opened(struct kvtier_tier *tier);
int kvtier_store_close(struct kvtier_tier *tier);
int kvtier_store_sync(struct kvtier_tier *tier);
void kvtier_store_drop_regions(struct kvtier_tier *tier);
int kvtier_store_commit(struct kvtier_tier *tier);
int kvtier_store_upgrade(struct kvtier_tier *tier, unsigned int version);
void kvtier_store_kick(struct kvtier_tier *tier);
void kvtier_store_need_room(struct kvtier_tier *tier, kuid_t owner);
unsigned int kvtier_store_room_ticket(struct kvtier_tier *tier);
int kvtier_store_wait_room(struct kvtier_tier *tier, unsigned int ticket);
int kvtier_store_writeback(struct kvtier_region *region, pgoff_t first,
			   pgoff_t last, bool evict);

/* store.c, for journal.c: the regions a commit records, and their records */
struct kvtier_disk_region;
enum kvtier_get_how {
	KVT_GET_ALL,	/* every linked persistent region */
	KVT_GET_CKPT,	/* every one, for a checkpoint: takes the changes */
	KVT_GET_TXN,	/* those with changes, for a transaction: takes them */
};

int kvtier_persistent_get(struct kvtier_tier *tier, struct kvtier_region ***out,
			  unsigned int *n, enum kvtier_get_how how,
			  struct list_head *dels);
void kvtier_region_record(struct kvtier_region *r, struct kvtier_disk_region *rec);
int kvtier_record_check(struct kvtier_tier *tier,
			const struct kvtier_disk_region *rec);
void kvtier_record_attrs(struct kvtier_region *r,
			 const struct kvtier_disk_region *rec);
struct kvtier_region *kvtier_region_from_record(struct kvtier_tier *tier, bool unloaded,
						const struct kvtier_disk_region *rec);
void *kvtier_ckpt_buf(struct kvtier_store *st, size_t size);

/* journal.c: the metadata journal of version-2 stores */
struct kvtier_journal_del {
	struct list_head node;		/* in kvtier_store.dels */
	char name[KVTIER_NAME_MAX];
};

u64 kvtier_journal_blocks(u64 nr_slots);
struct kvtier_journal_del *kvtier_journal_del_new(void);
void kvtier_journal_unlinked(struct kvtier_region *r,
			     struct kvtier_journal_del *del);
void kvtier_journal_dels_free(struct list_head *dels);
void kvtier_journal_page_changed(struct kvtier_region *r, pgoff_t index);
void kvtier_journal_region_changed(struct kvtier_region *r);
int kvtier_journal_commit(struct kvtier_tier *tier, u64 gen);
int kvtier_journal_replay(struct kvtier_tier *tier);

/* lease.c: the ownership lease (single read-write attach) */
void kvtier_lease_init(struct kvtier_store *st);
int kvtier_lease_format(struct kvtier_tier *tier);
int kvtier_lease_acquire(struct kvtier_tier *tier, void *found);
void kvtier_lease_release(struct kvtier_tier *tier, const void *found);
ssize_t kvtier_lease_show(struct kvtier_tier *tier, char *buf);

/* The namespace was taken over by another read-write attach: write nothing. */
static inline bool kvtier_fenced(struct kvtier_tier *tier)
{
	return READ_ONCE(tier->store.lease_lost);
}

/* tier.c */
struct kvtier_tier *kvtier_tier_create(unsigned int id, dev_t devt);
void kvtier_tier_destroy(struct kvtier_tier *tier);

/* backing.c: callers hold tier->lock, except for kvtier_backing_capacity */
loff_t kvtier_backing_capacity(struct kvtier_tier *tier);
bool kvtier_backing_attached(const struct kvtier_tier *tier);
int kvtier_backing_attach(struct kvtier_tier *tier, const char *path,
			  bool format);
int kvtier_backing_detach(struct kvtier_tier *tier);

/* sysfs.c: the attributes, and the knob table (defaults, ranges, units) */
extern const struct attribute_group *kvtier_tier_groups[];
void kvtier_sysfs_init(void);
void kvtier_knobs_init(struct kvtier_knobs *knobs);

/*
 * fail_inject.c: fault injection sites, each failing the allocation or write it
 * names with the error that site documents; no-ops unless the kernel has
 * CONFIG_FAULT_INJECTION_DEBUG_FS.
 */
enum kvtier_fail_site {
	KVT_FAIL_PAGE_ALLOC,	/* a resident page: -ENOMEM */
	KVT_FAIL_IO_ALLOC,	/* a data read/write descriptor: -ENOMEM */
	KVT_FAIL_SLOT_ALLOC,	/* namespace slots: none free (-ENOSPC) */
	KVT_FAIL_META_WRITE,	/* a store metadata write: -EIO, no I/O */
	KVT_FAIL_NR,
};

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
bool kvtier_should_fail(enum kvtier_fail_site site);
void kvtier_fail_inject_init(struct dentry *root);
#else
static inline bool kvtier_should_fail(enum kvtier_fail_site site)
{
	return false;
}

static inline void kvtier_fail_inject_init(struct dentry *root)
{
}
#endif

/* debugfs.c */
void kvtier_debugfs_init(void);
void kvtier_debugfs_exit(void);
void kvtier_debugfs_tier_add(struct kvtier_tier *tier);
void kvtier_debugfs_tier_remove(struct kvtier_tier *tier);
void kvtier_latency_reset(struct kvtier_tier *tier);
void kvtier_freeze_point(struct kvtier_tier *tier, enum kvtier_freeze_point p);

#endif /* KVTIER_H */
