// SPDX-License-Identifier: GPL-2.0
/*
 * Races and lifetimes in the data path (issue 25, items 1, 2, 3, 4, 7, 11, 13),
 * each driven hard enough to go wrong on a module that has them, with a
 * tier formatted on /dev/mapper/kvt-race, a device-mapper table over
 * KVTIER_NS1 that a test swaps (dmsetup load + resume) to make I/O fail:
 *
 * - failed_reads (variants error: every read of the namespace fails, the
 *   dm error target; crc: the region's slots are overwritten under the
 *   tier, every read mismatches its CRC32C): eight threads fault and
 *   pread the same evicted pages for 3 s. Every access gets SIGBUS or
 *   EIO, never bytes; an access that saw another task's failed read must
 *   not use the page that task freed (the major-fault path did, and
 *   uncharged the pool twice: a use-after-free). Afterwards the pool
 *   holds no more than its budget, and once the namespace holds the
 *   bytes again (the linear table back; the slots rewritten as they
 *   were) every byte reads back; closing leaves nothing resident.
 * - mkwrite_vs_evict: writers store into mapped pages while another
 *   thread evicts the whole region (DONTNEED) in a loop: each first store
 *   after an eviction goes through page_mkwrite, which looked at a page
 *   entry it held no lock on. Every store lands: each page holds its last
 *   value, in memory and after write-back.
 * - odirect_read_into_mapping: O_DIRECT reads from NS0 into a mapping of
 *   the region (pattern A, then B, then A...) while another thread writes
 *   the region back and drops it in a loop: write-back cleared the dirty
 *   state of a page the read's DMA was still filling, and the page was
 *   then dropped with the older bytes on the namespace. Every byte is the
 *   last round's, in memory and after write-back.
 * - longterm_pin_refused: a long-term writable pin (FOLL_LONGTERM, as
 *   io_uring fixed buffers take) would let a device write a kvtier page
 *   long after its dirty state was read, behind page_mkwrite. Registering
 *   a mapping of a region as an io_uring fixed buffer is refused on both
 *   kernels (6.1: io_uring takes no file-backed buffers but shmem and
 *   hugetlbfs, EOPNOTSUPP; 6.12: GUP refuses long-term writable pins of
 *   mappings that track dirty pages, EFAULT), and the region keeps its
 *   bytes. RDMA's long-term pins are not refused on 6.1 (no hook for a
 *   module there); write-back keeps a page dirty while any GUP reference
 *   holds it (odirect_read_into_mapping).
 * - willneed_storm: one process calls WILLNEED over a 256 MiB region (32
 *   MiB of it written and evicted, the rest never written) as fast as it
 *   can for 6 s. Meanwhile another region's 8 MiB write + fsync completes
 *   within 2 s, three times; a second read-write attach of the namespace
 *   through another path is refused (the holder's lease renewals run on a
 *   queue of their own); the storming process exits within 5 s of its
 *   last call. Each call queued a work item that walked the whole range
 *   page by page without yielding: the queue grew without bound.
 * - reclaim_stops_when_commits_fail: on an 8 MiB namespace held mostly by
 *   unused persistent regions, with the metadata area failing writes, a
 *   volatile region larger than the free space is written back: the
 *   writer gets ENOSPC or EIO, and no persistent region is reclaimed
 *   (space reclaim took one after another, each commit failing, and the
 *   first commit that succeeded made all the unlinks durable). Once
 *   commits work, every region is there with its bytes.
 * - close_unload_under_reads: WILLNEED queues reads of an evicted region,
 *   and at once the file is closed, the tier detached and the module
 *   unloaded, while the reads complete (the read completion touched the
 *   tier after unlocking the last page); 24 times, every other time with
 *   the bytes checked first.
 * - fallback_attach_defers_slots: an attach that fell back to the older
 *   superblock copy (the newest checkpoint names a page past its
 *   region's end, found after the regions before it were loaded) left the
 *   store "dropping": an unlinked persistent region's slots were freed at once,
 *   before the unlink was committed. With the metadata area failing
 *   writes, unlink the region, write another region into the space, and
 *   detach (the commit fails); attached again, the region is back, and
 *   every byte of it reads right, none from the other region.
 *
 * - direct_pread_races: preads into page-aligned buffers (the direct
 *   path: bios into the caller's pages) race unaligned preads (the pool),
 *   pwrites, stores and loads through a mapping, fsync (commits, which
 *   free the slots that write-backs moved away from) and DONTNEED, in
 *   four processes over a persistent region twice the budget, with
 *   checksum on and off. Every byte any of them reads is that byte of its
 *   offset's pattern in one of the seeds written (a pool copy racing a
 *   store may tear a word; a slot read after it was given to another page
 *   would hold another offset's words); at the end the
 *   region holds the last seed written, byte for byte. A stress test: the
 *   allocator hands freed slots out again only after going round the
 *   namespace, so slot reuse under a read is the next test's job.
 * - direct_pwrite_races: the same racers over a volatile named region that
 *   starts never written, with checksum off (aligned pwrites write
 *   directly to fresh slots, freeing the old ones under direct reads) and
 *   on (through the pool).
 *   Every byte read is 0 or that byte of one of the seeds; at the end a
 *   last seed written directly reads back whole, and the region holds no
 *   more slots than pages.
 * - direct_read_of_reused_slot: the race the direct path must not lose,
 *   set up to happen. A direct pread of a page is held up by dm-delay;
 *   meanwhile the page is rewritten and committed, which frees its old
 *   slot, on a namespace with no other free slot, where another region's
 *   page is written next. The commit waits for the read (fsync takes
 *   most of the delay), so the pread returns the page's bytes as they
 *   were when it began, never the other region's, with checksum off and
 *   on; and the other region's page then lands in the freed slot.
 *
 * - direct_write_frees_slot_after_reads: the same race with a direct
 *   write (checksum off) moving the page instead of a commit: the slot it
 *   left is freed only after the delayed direct read of it, so region B,
 *   written into every free slot next, never reaches the reader; then a
 *   pwrite that would take the reserve left for the pool goes through it.
 *
 * - writeback_lets_readers_in: fsync and DONTNEED of a region while its
 *   write-back is held up by dm-delay (writes and flushes), checksum off
 *   and on. fsync's write-back lets go of the page locks once its bio is
 *   out: a pread and a fault on its pages return before the write
 *   completes; a pwrite and a store through the mapping wait for it
 *   (writeback_waits; without the wait the page changes under the bio, and
 *   with checksum on it reads back as a CRC mismatch), and either can be
 *   killed while it waits, changing nothing. DONTNEED waits for
 *   the write-back in flight and drops every page, without writing any
 *   again; reclaim, pushed by another region over the budget, passes the
 *   pages in flight over (writing them again would give them a second
 *   slot: the namespace would hold more slots than the regions' pages).
 *   Every byte reads back after.
 * - long_pread_signals_and_unmaps: a 16 MiB pread of pages only on the
 *   namespace, every read bio held up 100 ms by dm-delay, through the pool
 *   (a buffer that is not page-aligned) and straight into the caller's
 *   pages (an aligned one; each path checked by direct_read_pages).
 *   Signals with a handler (real-time: queued) every few milliseconds do
 *   not cut it short: every byte, right. SIGKILL ends the process doing
 *   it at once, long before its read would have ended (fewer pages read
 *   than it asked for). The buffer's second half unmapped while it runs:
 *   EFAULT or a short read, whose bytes are right. The region is intact
 *   after each, and nothing stays resident once it is closed.
 * - names_wait_for_attach: UNLINK and SETFLAGS of a persistent region,
 *   and LIST, issued while an attach (its reads held up by dm-delay) loads
 *   the namespace, wait for the attach to finish (its "attached" log
 *   line is there when they return, not when they were issued), and a
 *   process waiting so is killed at once; every other region's bytes,
 *   the freed slots and the pin survive a reattach.
 *
 * The guest's kernel log is checked by the rig (tests/vm/run.sh). Needs
 * KVTIER_NS1 and dmsetup (skips without them). Runs as root in the test
 * VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/kvtier.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define DM_NAME		"kvt-race"
#define DM_DEV		"/dev/mapper/" DM_NAME

static unsigned long long ns1_sectors(void)
{
	return kvt_dev_size(kvt_ns("KVTIER_NS1")) / 512;
}

/* Swap the live table (one or more lines) in: suspend, load, resume. */
static int table(const char *lines)
{
	return kvt_run("printf '%s' | dmsetup load " DM_NAME " 2>/dev/null && "
		       "dmsetup suspend " DM_NAME " && dmsetup resume " DM_NAME
		       " || { dmsetup resume " DM_NAME "; false; }", lines);
}

static int linear(void)
{
	return kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "linear %s 0",
			    kvt_ns("KVTIER_NS1"));
}

/*
 * Writes (and reads) of the metadata @sb describes fail: blocks
 * [0, data_start) and, on version 2, the journal; the rest is linear.
 */
static int meta_error(const struct kvtier_disk_super *sb)
{
	unsigned long long spb = KVTIER_BLOCK_SIZE / 512;
	unsigned long long s = le64toh(sb->data_start) * spb;
	unsigned long long js = s + le64toh(sb->journal_start) * spb;
	unsigned long long je = js + le64toh(sb->journal_blocks) * spb;
	const char *ns = kvt_ns("KVTIER_NS1");
	char t[512];

	if (!sb->journal_blocks)
		snprintf(t, sizeof(t), "0 %llu error\\n%llu %llu linear %s %llu\\n", s, s,
			 ns1_sectors() - s, ns, s);
	else
		snprintf(t, sizeof(t), "0 %llu error\\n%llu %llu linear %s %llu\\n"
			 "%llu %llu error\\n%llu %llu linear %s %llu\\n",
			 s, s, js - s, ns, s, js, je - js, je, ns1_sectors() - je, ns, je);
	return table(t);
}


/* A tier file with an unnamed region of @len, or -errno. */
static int region_fd(unsigned long long len)
{
	struct kvtier_region_create c = { .size = len };
	int fd = kvt_tier_open(0, O_RDWR);

	if (fd < 0)
		return -errno;
	if (ioctl(fd, KVTIER_IOC_REGION_CREATE, &c)) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Fill @len bytes of @fd with pattern @seed, write back and drop them. */
static int fill_evict(int fd, unsigned long long len, unsigned long long seed)
{
	unsigned char *buf = malloc(len);
	int ret = -1;

	if (!buf)
		return -1;
	kvt_fill(buf, len, 0, seed);
	if (pwrite(fd, buf, len, 0) == (ssize_t)len && !fsync(fd) &&
	    !posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		ret = 0;
	free(buf);
	return ret;
}

/* -1 if @len bytes of @fd read back as pattern @seed, else the bad offset. */
static long long check_fd(int fd, unsigned long long len, unsigned long long seed)
{
	unsigned char *buf = malloc(len);
	long long bad;

	if (!buf)
		return 0;
	if (pread(fd, buf, len, 0) != (ssize_t)len) {
		free(buf);
		return 0;
	}
	bad = kvt_check(buf, len, 0, seed);
	free(buf);
	return bad;
}

/* Create persistent region @name of @len, filled with @seed, synced, evicted. */
static int persistent_filled(const char *name, unsigned long long len,
			     unsigned long long seed)
{
	int fd = kvt_tier_open(0, O_RDWR), ret;

	if (fd < 0)
		return -errno;
	ret = kvt_bind_name(fd, name, len, KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, 0600);
	if (!ret && fill_evict(fd, len, seed))
		ret = -errno;
	close(fd);
	return ret;
}

FIXTURE(race) {
	int dummy;
};

/* kvtier loaded; NS1 behind a linear dm table, formatted as tier 0. */
static void tier_up(struct __test_metadata *_metadata)
{
	const char *ns1 = kvt_ns("KVTIER_NS1"), *why;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	why = kvt_dm_missing("error");
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_FALSE(kvt_exists(DM_DEV));
	ASSERT_GT(ns1_sectors(), 0);
	ASSERT_EQ(0, kvt_dm_linear(DM_NAME, ns1));
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
}

/* In the parent, every file of the test closed: linear, detach, unload. */
static void tier_down(struct __test_metadata *_metadata)
{
	if (kvt_exists(DM_DEV))
		EXPECT_EQ(0, linear());
	if (kvt_loaded()) {
		kvt_tier_write(0, "backing_dev", "none");
		EXPECT_TRUE(kvt_state_is(0, "detached"));
		EXPECT_EQ(0, kvt_unload());
	}
	if (kvt_exists(DM_DEV))
		EXPECT_EQ(0, kvt_dm_remove(DM_NAME));
}

FIXTURE_SETUP(race)
{
	tier_up(_metadata);
}

FIXTURE_TEARDOWN_PARENT(race)
{
	tier_down(_metadata);
}

/* ------------------------------------------------------------------ */
/* item 1: faults and preads racing over pages whose reads fail        */

FIXTURE(rd) {
	int dummy;
};

FIXTURE_VARIANT(rd) {
	int crc;	/* bytes changed under the tier, else reads fail */
};

FIXTURE_VARIANT_ADD(rd, error) { .crc = 0 };
FIXTURE_VARIANT_ADD(rd, crc) { .crc = 1 };

FIXTURE_SETUP(rd)
{
	tier_up(_metadata);
}

FIXTURE_TEARDOWN_PARENT(rd)
{
	tier_down(_metadata);
}

#define RD_LEN		(2 * MiB)
#define RD_THREADS	8

struct rd_arg {
	int fd, use_map;
	volatile unsigned char *map;
	volatile int *stop;
	unsigned long long rng;
	long failed, wrong;
};

static __thread sigjmp_buf rd_jmp;

static void rd_sigbus(int sig)
{
	(void)sig;
	siglongjmp(rd_jmp, 1);
}

static void *rd_thread(void *p)
{
	struct rd_arg *a = p;
	unsigned char buf[PAGE];
	unsigned long long off;

	while (!*a->stop) {
		a->rng = a->rng * 6364136223846793005ULL + 1442695040888963407ULL;
		/* Mostly a few hot pages, so tasks meet on the same one. */
		off = ((a->rng >> 33) % (a->rng & 1 ? 8 : RD_LEN / PAGE)) * PAGE;
		if (a->use_map) {
			if (!sigsetjmp(rd_jmp, 1)) {
				(void)a->map[off];
				a->wrong++;
			} else {
				a->failed++;
			}
		} else if (pread(a->fd, buf, PAGE, off) == -1 && errno == EIO) {
			a->failed++;
		} else {
			a->wrong++;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(rd, failed_reads, 300)
{
	struct kvtier_disk_super sb;
	struct rd_arg a[RD_THREADS];
	pthread_t th[RD_THREADS];
	struct sigaction sa = { .sa_handler = rd_sigbus };
	volatile int stop = 0;
	unsigned char *map, *junk;
	long failed = 0, wrong = 0;
	int fd, i;

	fd = region_fd(RD_LEN);
	ASSERT_GE(fd, 0);
	map = mmap(NULL, RD_LEN, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, fill_evict(fd, RD_LEN, 31));
	if (variant->crc) {
		/* A fresh tier's first write-back took slots 0..511. */
		ASSERT_EQ(0, kvt_super_read(DM_DEV, &sb, NULL));
		ASSERT_EQ(0, posix_memalign((void **)&junk, PAGE, RD_LEN));
		memset(junk, 0x5a, RD_LEN);
		ASSERT_EQ(0, kvt_dev_write(kvt_ns("KVTIER_NS1"), junk, RD_LEN,
					   kvt_slot_offset(&sb, 0)));
		free(junk);
	} else {
		char t[64];

		snprintf(t, sizeof(t), "0 %llu error\\n", ns1_sectors());
		ASSERT_EQ(0, table(t));
	}

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	for (i = 0; i < RD_THREADS; i++) {
		a[i] = (struct rd_arg){ .fd = fd, .use_map = i % 2, .map = map,
					.stop = &stop, .rng = 0x9e3779b97f4a7c15ULL * (i + 1) };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, rd_thread, &a[i]));
	}
	sleep(3);
	stop = 1;
	for (i = 0; i < RD_THREADS; i++) {
		pthread_join(th[i], NULL);
		failed += a[i].failed;
		wrong += a[i].wrong;
	}
	signal(SIGBUS, SIG_DFL);
	TH_LOG("%ld accesses failed as they must, %ld got bytes; resident %lld pages",
	       failed, wrong, kvt_stat(0, "resident_pages"));
	ASSERT_EQ(0, wrong);
	ASSERT_GT(failed * kvt_time_scale(), 1000);
	ASSERT_LE(kvt_stat(0, "resident_pages"), 4 * MiB / PAGE);

	/* The bytes come back once the namespace holds them again. */
	if (variant->crc) {
		ASSERT_EQ(0, posix_memalign((void **)&junk, PAGE, RD_LEN));
		kvt_fill(junk, RD_LEN, 0, 31);
		ASSERT_EQ(0, kvt_dev_write(kvt_ns("KVTIER_NS1"), junk, RD_LEN,
					   kvt_slot_offset(&sb, 0)));
		free(junk);
	} else {
		ASSERT_EQ(0, linear());
	}
	ASSERT_EQ(-1, check_fd(fd, RD_LEN, 31));
	ASSERT_EQ(-1, kvt_check(map, RD_LEN, 0, 31));
	munmap(map, RD_LEN);
	close(fd);
	ASSERT_EQ(0, kvt_stat(0, "resident_pages"));
}

/* ------------------------------------------------------------------ */
/* item 2: page_mkwrite racing eviction                                */

#define MK_LEN		(4 * MiB)
#define MK_WRITERS	4

struct mk_arg {
	volatile unsigned long long *map;	/* one word a page */
	unsigned long long first, nr, *last;
	volatile int *stop;
};

static void *mk_writer(void *p)
{
	struct mk_arg *a = p;
	unsigned long long v = 0, i;

	while (!*a->stop) {
		v++;
		for (i = a->first; i < a->first + a->nr; i++) {
			a->map[i * (PAGE / 8)] = (i << 32) | v;
			a->last[i] = (i << 32) | v;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(race, mkwrite_vs_evict, 300)
{
	unsigned long long npages = MK_LEN / PAGE, *last, i, word;
	struct mk_arg a[MK_WRITERS];
	pthread_t th[MK_WRITERS];
	volatile int stop = 0;
	unsigned long evictions = 0;
	unsigned long long *map;
	time_t end;
	int fd;

	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 8));
	fd = region_fd(MK_LEN);
	ASSERT_GE(fd, 0);
	map = mmap(NULL, MK_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	last = calloc(npages, sizeof(*last));
	ASSERT_NE(NULL, last);
	for (i = 0; i < MK_WRITERS; i++) {
		a[i] = (struct mk_arg){ .map = map, .first = i * npages / MK_WRITERS,
					.nr = npages / MK_WRITERS, .last = last,
					.stop = &stop };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, mk_writer, &a[i]));
	}
	/* 3 s and 4 passes at least: a debug kernel may need 1 s a pass. */
	end = time(NULL) + 3;
	while (time(NULL) < end || evictions < 4) {
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		evictions++;
	}
	stop = 1;
	for (i = 0; i < MK_WRITERS; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu evictions of the region under %d writers; %lld pages written back",
	       evictions, MK_WRITERS, kvt_stat(0, "writeback_pages"));
	for (i = 0; i < npages; i++)
		ASSERT_EQ(last[i], map[i * (PAGE / 8)]);
	/* And on the namespace: written back, dropped, read again. */
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	for (i = 0; i < npages; i++) {
		ASSERT_EQ((ssize_t)sizeof(word), pread(fd, &word, sizeof(word), i * PAGE));
		ASSERT_EQ(last[i], word);
	}
	free(last);
	munmap(map, MK_LEN);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* item 4: DMA into a mapping (O_DIRECT read) racing write-back        */

#define OD_LEN		(4 * MiB)
#define OD_CHUNK	(256 * 1024)
#define OD_B		(64 * MiB)	/* where pattern B lies on NS0 */

struct od_arg {
	int fd;
	volatile int *stop;
	unsigned long passes;
	int err;
};

/* Write back and drop the region, over and over. */
static void *od_evictor(void *p)
{
	struct od_arg *a = p;

	while (!*a->stop) {
		if (fsync(a->fd) || posix_fadvise(a->fd, 0, 0, POSIX_FADV_DONTNEED))
			a->err = errno;
		a->passes++;
	}
	return NULL;
}

TEST_F_TIMEOUT(race, odirect_read_into_mapping, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	struct od_arg ev = { 0 };
	volatile int stop = 0;
	unsigned long long off, round = 0;
	unsigned char *map, *buf;
	unsigned int short_reads = 0;
	pthread_t th;
	time_t end;
	int fd, src;

	if (!ns0)
		SKIP(return, "no first namespace in KVTIER_NS0");
	/* Patterns A and B on NS0, which no tier uses here. */
	ASSERT_EQ(0, posix_memalign((void **)&buf, PAGE, OD_LEN));
	kvt_fill(buf, OD_LEN, 0, 61);
	ASSERT_EQ(0, kvt_dev_write(ns0, buf, OD_LEN, 0));
	kvt_fill(buf, OD_LEN, 0, 62);
	ASSERT_EQ(0, kvt_dev_write(ns0, buf, OD_LEN, OD_B));
	src = open(ns0, O_RDONLY | O_DIRECT | O_CLOEXEC);
	ASSERT_GE(src, 0);

	/* Room for the whole region: only write-back and drop race the reads. */
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	fd = region_fd(OD_LEN);
	ASSERT_GE(fd, 0);
	map = mmap(NULL, OD_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ev = (struct od_arg){ .fd = fd, .stop = &stop };
	ASSERT_EQ(0, pthread_create(&th, NULL, od_evictor, &ev));
	/* Each round reads all of A or B into the mapping, the other in turn. */
	end = time(NULL) + 4;
	for (round = 0; time(NULL) < end || round < 4; round++)
		for (off = 0; off < OD_LEN; off += OD_CHUNK) {
			ssize_t n = pread(src, map + off, OD_CHUNK, (round % 2 ? OD_B : 0) + off);

			if (n != (ssize_t)OD_CHUNK && short_reads++ < 8)
				TH_LOG("round %llu, offset %llu: read %zd (%s)",
				       round, off, n, n < 0 ? strerror(errno) : "short");
		}
	stop = 1;
	pthread_join(th, NULL);
	close(src);
	TH_LOG("%llu rounds of O_DIRECT reads into the mapping; %lu write-back and drop passes; %u reads short or failed",
	       round, ev.passes, short_reads);
	/* A page written while DMA changed it failed its CRC: EFAULT. */
	ASSERT_EQ(0, short_reads);
	ASSERT_EQ(0, ev.err);
	/* The last round's bytes, in memory and on the namespace. */
	ASSERT_EQ(-1, kvt_check(map, OD_LEN, 0, round % 2 ? 61 : 62));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, check_fd(fd, OD_LEN, round % 2 ? 61 : 62));
	ASSERT_EQ(-1, kvt_check(map, OD_LEN, 0, round % 2 ? 61 : 62));
	free(buf);
	munmap(map, OD_LEN);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* item 4: long-term writable pins of a mapping (io_uring fixed buffers) */

TEST_F_TIMEOUT(race, longterm_pin_refused, 120)
{
	struct io_uring_params params = { 0 };
	struct iovec iov;
	struct utsname u;
	unsigned char *map;
	int fd, ring, ret, major = 0, minor = 0;

	fd = region_fd(MiB);
	ASSERT_GE(fd, 0);
	map = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	kvt_fill(map, MiB, 0, 63);
	ASSERT_EQ(0, fsync(fd));

	ring = syscall(__NR_io_uring_setup, 4, &params);
	if (ring < 0)
		SKIP(return, "io_uring_setup: %s", strerror(errno));
	iov = (struct iovec){ .iov_base = map, .iov_len = MiB };
	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1);
	ASSERT_EQ(0, uname(&u));
	sscanf(u.release, "%d.%d", &major, &minor);
	TH_LOG("%s: registering a kvtier mapping as a fixed buffer: %s", u.release,
	       ret ? strerror(errno) : "accepted");
	/* Accepted, a device could write the pages behind dirty tracking. */
	ASSERT_EQ(-1, ret);
	/* 6.5+: GUP's writable_file_mapping_allowed(); before, io_uring's own check. */
	ASSERT_EQ(major > 6 || (major == 6 && minor >= 5) ? EFAULT : EOPNOTSUPP, errno);
	close(ring);
	/* Nothing was pinned or changed. */
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(map, MiB, 0, 63));
	munmap(map, MiB);
	close(fd);
}

/* ------------------------------------------------------------------ */
/* item 3: close, detach and unload while reads complete               */

TEST_F_TIMEOUT(race, close_unload_under_reads, 600)
{
	const unsigned long long len = 8 * MiB;
	int round, fd;

	for (round = 0; round < 24; round++) {
		if (round) {
			ASSERT_EQ(0, kvt_load("num_tiers=1"));
			ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
			ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
		}
		fd = region_fd(len);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, fill_evict(fd, len, 40 + round));
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED));
		if (round % 2)
			ASSERT_EQ(-1, check_fd(fd, len, 40 + round));
		close(fd);
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
		ASSERT_EQ(0, kvt_unload());
	}
	/* The teardown finds the module unloaded. */
}

/* ------------------------------------------------------------------ */
/* item 13: slots of a region unlinked after a fallback attach         */

TEST_F_TIMEOUT(race, fallback_attach_defers_slots, 300)
{
	const unsigned long long alen = 1 * MiB, clen = 64 * 1024, dlen = 2 * MiB;
	struct kvtier_disk_super sb;
	struct kvtier_disk_ckpt *hdr;
	struct kvtier_disk_page *pages;
	unsigned char blk[PAGE], *area;
	unsigned long long gen, ckpt, bytes;
	int fd, dfd, ret, copy;

	/* A, then C: the generation before the last still has A's pages. */
	ASSERT_EQ(0, persistent_filled("fb-a", alen, 51));
	ASSERT_EQ(0, persistent_filled("fb-c", clen, 52));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));

	/*
	 * Damage the newest checkpoint so that it passes its CRC but names a
	 * page past the end of A: the attach refuses it with A's region
	 * already loaded (dropped again), and falls back.
	 */
	ASSERT_EQ(0, kvt_super_read(DM_DEV, &sb, &copy));
	gen = le64toh(sb.generation);
	bytes = le64toh(sb.ckpt_bytes);
	ckpt = le64toh(sb.meta_start) + copy * le64toh(sb.meta_blocks);
	area = calloc(1, bytes + PAGE);
	ASSERT_NE(NULL, area);
	ASSERT_EQ(0, kvt_dev_read(DM_DEV, area, (bytes + PAGE - 1) / PAGE * PAGE, ckpt * PAGE));
	hdr = (struct kvtier_disk_ckpt *)area;
	ASSERT_EQ(2, le64toh(hdr->nr_regions));
	pages = (struct kvtier_disk_page *)(area + sizeof(*hdr) +
		le64toh(hdr->nr_regions) * sizeof(struct kvtier_disk_region));
	if (le32toh(sb.version) >= 3)	/* an extent record there */
		((struct kvtier_disk_extent *)pages)->index = htole32(0xffffffffU);
	else
		pages[0].index = htole32(0xffffffffU);
	ASSERT_EQ(0, kvt_dev_write(DM_DEV, area, (bytes + PAGE - 1) / PAGE * PAGE, ckpt * PAGE));
	ASSERT_EQ(0, kvt_dev_read(DM_DEV, blk, PAGE, copy * PAGE));
	((struct kvtier_disk_super *)blk)->ckpt_crc = htole32(kvt_crc32c(~0U, area, bytes));
	kvt_super_seal(blk);
	ASSERT_EQ(0, kvt_dev_write(DM_DEV, blk, PAGE, copy * PAGE));
	free(area);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	ASSERT_EQ((long long)gen - 1, kvt_stat(0, "generation"));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_bind_name(fd, "fb-a", 0, 0, 0));
	ASSERT_EQ(-1, check_fd(fd, alen, 51));
	close(fd);

	/* Commits fail from now on: the unlink stays uncommitted. */
	ASSERT_EQ(0, meta_error(&sb));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ret = kvt_unlink_name(fd, "fb-a");
	TH_LOG("unlink with commits failing: %s", ret ? strerror(-ret) : "ok");
	ASSERT_TRUE(ret == 0 || ret == -EIO);
	close(fd);
	/* A new region's write-back takes the first free slots. */
	dfd = region_fd(dlen);
	ASSERT_GE(dfd, 0);
	ret = fill_evict(dfd, dlen, 53);
	TH_LOG("another region's write-back: %s", ret ? strerror(errno) : "ok");
	close(dfd);
	ret = kvt_tier_write(0, "backing_dev", "none");
	TH_LOG("detach with commits failing: %s", ret ? strerror(-ret) : "ok");
	ASSERT_TRUE(kvt_state_is(0, "detached"));

	/* The unlink never reached the media: A is back, with its bytes. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	ASSERT_EQ((long long)gen - 1, kvt_stat(0, "generation"));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_bind_name(fd, "fb-a", 0, 0, 0));
	ASSERT_EQ(-1, check_fd(fd, alen, 51));
	ASSERT_EQ(0, kvt_unlink_name(fd, "fb-a"));
	close(fd);
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
}

/* ------------------------------------------------------------------ */
/* item 7: a WILLNEED storm against everyone else                      */

#define ST_LEN		(256 * MiB)	/* the storming region: fresh... */
#define ST_WRITTEN	(32 * MiB)	/* ...but for this much, evicted */
#define ST_SECONDS	6
#define PATH_B		"/dev/mapper/kvt-race-b"

/* The storm: WILLNEED over a whole region as fast as it goes; then exit. */
static void storm(int report)
{
	long long end, calls = 0;
	int fd = region_fd(ST_LEN);

	if (fd < 0 || fill_evict(fd, ST_WRITTEN, 91))
		_exit(1);
	if (write(report, "s", 1) != 1)
		_exit(1);
	end = kvt_now_ms() + ST_SECONDS * 1000;
	while (kvt_now_ms() < end) {
		if (posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED))
			_exit(2);
		calls++;
	}
	if (write(report, &calls, sizeof(calls)) != sizeof(calls))
		_exit(1);
	close(fd);
	_exit(0);
}

TEST_F_TIMEOUT(race, willneed_storm, 300)
{
	long long t0, ms, worst = 0, calls = 0, exit_ms;
	int p[2], fd, st, i, ret;
	unsigned char *buf;
	pid_t pid;
	char c;

	/* Tier 1 tries a second path to the namespace during the storm. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	ASSERT_EQ(0, kvt_dm_linear("kvt-race-b", kvt_ns("KVTIER_NS1")));
	buf = malloc(8 * MiB);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(p[0]);
		storm(p[1]);
	}
	close(p[1]);
	ASSERT_EQ(1, read(p[0], &c, 1));

	/* Another user's 8 MiB write and fsync, three times, each in 2 s. */
	for (i = 0; i < 3; i++) {
		fd = region_fd(8 * MiB);
		ASSERT_GE(fd, 0);
		kvt_fill(buf, 8 * MiB, 0, 92 + i);
		t0 = kvt_now_ms();
		ASSERT_EQ((ssize_t)(8 * MiB), pwrite(fd, buf, 8 * MiB, 0));
		ASSERT_EQ(0, fsync(fd));
		ms = kvt_now_ms() - t0;
		worst = ms > worst ? ms : worst;
		ASSERT_EQ(-1, check_fd(fd, 8 * MiB, 92 + i));
		close(fd);
		if (i == 1) {
			/* The holder renews its lease through the storm. */
			ret = kvt_tier_write(1, "backing_dev", PATH_B);
			TH_LOG("a second read-write attach during the storm: %s",
			       ret ? strerror(-ret) : "attached");
			ASSERT_EQ(-EBUSY, ret);
		}
	}
	ASSERT_EQ((ssize_t)sizeof(calls), read(p[0], &calls, sizeof(calls)));
	t0 = kvt_now_ms();
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	exit_ms = kvt_now_ms() - t0;
	close(p[0]);
	TH_LOG("%lld WILLNEED calls in %d s; slowest write + fsync %lld ms; the storming process exited %lld ms after its last call",
	       calls, ST_SECONDS, worst, exit_ms);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_LT(worst, 2000 * kvt_time_scale());
	ASSERT_LT(exit_ms, 5000 * kvt_time_scale());
	ASSERT_GT(calls * kvt_time_scale(), 1000);
	free(buf);
	ASSERT_EQ(0, kvt_dm_remove("kvt-race-b"));
}

/* ------------------------------------------------------------------ */
/* item 11: no space reclaim while commits fail                        */

#define RC_NS		(8 * MiB)	/* the namespace of this test */
#define RC_REGIONS	3
#define RC_LEN		(1536 * 1024ULL)

TEST_F_TIMEOUT(race, reclaim_stops_when_commits_fail, 300)
{
	struct kvtier_disk_super sb;
	char t[256], name[32];
	int fd, i, ret;

	/* A namespace of 8 MiB, most of it held by unused persistent regions. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	snprintf(t, sizeof(t), "0 %llu linear %s 0\\n", RC_NS / 512, kvt_ns("KVTIER_NS1"));
	ASSERT_EQ(0, table(t));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	for (i = 0; i < RC_REGIONS; i++) {
		snprintf(name, sizeof(name), "rc-%d", i);
		ASSERT_EQ(0, persistent_filled(name, RC_LEN, 70 + i));
	}
	ASSERT_EQ(0, kvt_super_read(DM_DEV, &sb, NULL));

	/*
	 * Commits fail (the metadata area refuses writes; data slots work).
	 * A volatile region larger than the free space cannot be written
	 * back, and no persistent region may be reclaimed for it: each would
	 * be unlinked for good by the first commit that succeeds.
	 */
	ASSERT_EQ(0, meta_error(&sb));
	fd = region_fd(4 * MiB);
	ASSERT_GE(fd, 0);
	ret = fill_evict(fd, 4 * MiB, 79);
	TH_LOG("a 4 MiB write-back into %lld free bytes with commits failing: %s",
	       kvt_tier_num(0, "capacity") - kvt_tier_num(0, "used"),
	       ret ? strerror(errno) : "ok");
	ASSERT_NE(0, ret);
	ASSERT_TRUE(errno == ENOSPC || errno == EIO);
	ASSERT_EQ(0, kvt_stat(0, "regions_reclaimed"));
	close(fd);

	/* Commits work again: detach commits, and every region is there. */
	snprintf(t, sizeof(t), "0 %llu linear %s 0\\n", RC_NS / 512, kvt_ns("KVTIER_NS1"));
	ASSERT_EQ(0, table(t));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	for (i = 0; i < RC_REGIONS; i++) {
		snprintf(name, sizeof(name), "rc-%d", i);
		fd = kvt_tier_open(0, O_RDWR);
		ASSERT_GE(fd, 0);
		ret = kvt_bind_name(fd, name, 0, 0, 0);
		if (ret)
			TH_LOG("%s: %s after the failed commits", name, strerror(-ret));
		ASSERT_EQ(0, ret);
		ASSERT_EQ(-1, check_fd(fd, RC_LEN, 70 + i));
		close(fd);
	}
}

/* ------------------------------------------------------------------ */
/* direct reads racing everything else on the same pages               */

#define DR_LEN		(8 * MiB)
#define DR_SEED0	81
#define DR_SEEDS	4

/* A byte that is 0 is right too: a region whose pages start never written. */
static int dr_zero_ok;

/*
 * -1 if every byte of @len bytes at region offset @base is that byte of
 * its word's pattern in one of the DR_SEEDS seeds from DR_SEED0; else the
 * first bad offset. Byte by byte, not word by word: a copy through the
 * pool (copy_to_user, rep movsb) racing a store through a mapping may
 * see a word part old, part new. Another offset's word matches in all 8
 * bytes with odds of about (4/256)^8.
 */
static KVT_FAST long long dr_check(const unsigned char *p, size_t len,
				   unsigned long long base)
{
	const unsigned long long *w = (const void *)p;
	unsigned long long x, want;
	size_t i;
	int s, b;

	for (i = 0; i < len / 8; i++) {
		for (b = 0; b < 8; b++) {
			x = (w[i] >> (8 * b)) & 0xff;
			for (s = 0; s < DR_SEEDS; s++) {
				want = kvt_pattern(base + i * 8, DR_SEED0 + s);
				if (x == ((want >> (8 * b)) & 0xff))
					break;
			}
			if (s == DR_SEEDS && !(dr_zero_ok && !x)) {
				fprintf(stderr, "# offset %llu: word %016llx\n",
					base + i * 8, w[i]);
				return (long long)(base + i * 8);
			}
		}
	}
	return -1;
}

/* A random page-aligned range of at most @max bytes in the region. */
static void dr_range(unsigned int *rs, size_t max, size_t *off, size_t *len)
{
	*off = (rand_r(rs) % (DR_LEN / PAGE)) * PAGE;
	*len = (1 + rand_r(rs) % (max / PAGE)) * PAGE;
	if (*len > DR_LEN - *off)
		*len = DR_LEN - *off;
}

/*
 * One racer until @end, as process @who: 0 preads into aligned memory
 * (direct), 1 preads into unaligned memory (pool) and pwrites from aligned
 * (direct for a volatile region with the checksum off; also through
 * io_uring, asynchronous) and unaligned memory (pool), 2 stores
 * and loads through a mapping, 3 fsyncs and drops. Exits 0, or 1 + the
 * byte it found wrong (logged), 2 for a failed call.
 */
static int dr_racer(const char *name, int who, time_t end)
{
	unsigned int rs = 1000 + who;
	unsigned char *buf, *map = NULL;
	size_t off, len;
	long long bad = -1;
	int fd;

	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0 || kvt_bind_name(fd, name, DR_LEN, 0, 0))
		return 2;
	if (posix_memalign((void **)&buf, PAGE, 2 * MiB + PAGE))
		return 2;
	if (who == 2) {
		map = mmap(NULL, DR_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			return 2;
	}
	while (time(NULL) < end && bad < 0) {
		int seed = DR_SEED0 + rand_r(&rs) % DR_SEEDS;

		switch (who) {
		case 0:
			dr_range(&rs, 2 * MiB, &off, &len);
			if (pread(fd, buf, len, off) != (ssize_t)len)
				return 2;
			bad = dr_check(buf, len, off);
			break;
		case 1:
			dr_range(&rs, 256 * KiB, &off, &len);
			if (rand_r(&rs) % 2) {
				if (pread(fd, buf + 8, len, off) != (ssize_t)len)
					return 2;
				bad = dr_check(buf + 8, len, off);
			} else {
				/*
				 * Aligned (direct with the checksum off), the
				 * same through io_uring (asynchronous), or
				 * unaligned (the pool).
				 */
				int way = rand_r(&rs) % 3;
				unsigned char *src = buf + (way == 2 ? 8 : 0);
				long long res = 0;

				kvt_fill(src, len, off, seed);
				if (way == 1) {
					if (kvt_uring_pwrites(fd, src, len, 1, off,
							      &res, NULL) ||
					    res != (long long)len)
						return 2;
				} else if (pwrite(fd, src, len, off) != (ssize_t)len) {
					return 2;
				}
			}
			break;
		case 2:
			dr_range(&rs, 64 * KiB, &off, &len);
			if (rand_r(&rs) % 2)
				kvt_fill(map + off, len, off, seed);
			else
				bad = dr_check(map + off, len, off);
			break;
		default:
			if (fsync(fd) ||
			    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
				return 2;
			usleep(rand_r(&rs) % 20000);
			break;
		}
	}
	if (bad >= 0)
		fprintf(stderr, "# racer %d: wrong word at offset %lld\n",
			who, bad);
	return bad < 0 ? 0 : 1;
}

/* Four racers on region @name for @secs; 0 if all exited 0. */
static int dr_race(const char *name, int secs)
{
	time_t end = time(NULL) + secs;
	int who, status, ret = 0;
	pid_t pid[4];

	for (who = 0; who < 4; who++) {
		pid[who] = fork();
		if (!pid[who])
			_exit(dr_racer(name, who, end));
	}
	for (who = 0; who < 4; who++) {
		if (pid[who] < 0 || waitpid(pid[who], &status, 0) != pid[who] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			ret = -1;
	}
	return ret;
}

TEST_F_TIMEOUT(race, direct_pread_races, 300)
{
	long long direct, retries;
	unsigned char *buf;
	int crc, fd;

	ASSERT_EQ(0, posix_memalign((void **)&buf, PAGE, DR_LEN));
	ASSERT_EQ(0, persistent_filled("dr", DR_LEN, DR_SEED0));
	for (crc = 1; crc >= 0; crc--) {
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		direct = kvt_stat(0, "direct_read_pages");
		retries = kvt_stat(0, "direct_read_retries");
		ASSERT_EQ(0, dr_race("dr", 5));
		direct = kvt_stat(0, "direct_read_pages") - direct;
		retries = kvt_stat(0, "direct_read_retries") - retries;
		TH_LOG("checksum %d: %lld pages read directly, %lld read again through the pool",
		       crc, direct, retries);
		ASSERT_GT(direct, 0);
	}
	/* Quiet: the last seed everywhere, on the namespace and back. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_bind_name(fd, "dr", DR_LEN, 0, 0));
	ASSERT_EQ(0, fill_evict(fd, DR_LEN, DR_SEED0 + 1));
	direct = kvt_stat(0, "direct_read_pages");
	ASSERT_EQ((ssize_t)DR_LEN, pread(fd, buf, DR_LEN, 0));
	ASSERT_EQ(-1, kvt_check(buf, DR_LEN, 0, DR_SEED0 + 1));
	ASSERT_EQ((long long)(DR_LEN / PAGE), kvt_stat(0, "direct_read_pages") - direct);
	close(fd);
	free(buf);
}

TEST_F_TIMEOUT(race, direct_pwrite_races, 300)
{
	long long direct, retries, reads, async;
	unsigned char *buf;
	int crc, fd;

	/* Volatile and named, so the racers share it; never written yet. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_bind_name(fd, "dw", DR_LEN, KVTIER_OPEN_CREATE, 0600));
	ASSERT_EQ(0, posix_memalign((void **)&buf, PAGE, DR_LEN));
	dr_zero_ok = 1;
	for (crc = 0; crc <= 1; crc++) {
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		direct = kvt_stat(0, "direct_write_pages");
		retries = kvt_stat(0, "direct_write_retries");
		reads = kvt_stat(0, "direct_read_pages");
		async = kvt_stat(0, "direct_write_async");
		ASSERT_EQ(0, dr_race("dw", 5));
		direct = kvt_stat(0, "direct_write_pages") - direct;
		retries = kvt_stat(0, "direct_write_retries") - retries;
		TH_LOG("checksum %d: %lld pages written directly, %lld written again, %lld asynchronous writes, %lld read directly",
		       crc, direct, retries,
		       kvt_stat(0, "direct_write_async") - async,
		       kvt_stat(0, "direct_read_pages") - reads);
		ASSERT_EQ(!crc, direct > 0);
	}
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	/* Quiet: the last seed everywhere, on the namespace and back. */
	dr_zero_ok = 0;
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	kvt_fill(buf, DR_LEN, 0, DR_SEED0 + 2);
	ASSERT_EQ((ssize_t)DR_LEN, pwrite(fd, buf, DR_LEN, 0));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	memset(buf, 0, DR_LEN);
	ASSERT_EQ((ssize_t)DR_LEN, pread(fd, buf, DR_LEN, 0));
	ASSERT_EQ(-1, kvt_check(buf, DR_LEN, 0, DR_SEED0 + 2));
	ASSERT_EQ(-1, check_fd(fd, DR_LEN, DR_SEED0 + 2));
	/* Every slot is one page's: no more than the region's pages used. */
	ASSERT_LE(kvt_tier_num(0, "used"), (long long)DR_LEN);
	ASSERT_EQ(0, kvt_unlink_name(fd, "dw"));
	close(fd);
	free(buf);
}

#define RS_NS		(4 * MiB)	/* the namespace of this test */
#define RS_DELAY_MS	2000
#define RS_PAGE		(5 * PAGE)	/* the page read, and rewritten */

struct rs_read {
	int fd;
	unsigned char *buf;
	ssize_t got;
};

static void *rs_reader(void *p)
{
	struct rs_read *r = p;

	r->got = pread(r->fd, r->buf, PAGE, RS_PAGE);
	return NULL;
}

/*
 * The first @bytes of NS1 as the dm device: linear, or with reads delayed
 * by @rd_ms and writes and flushes by @wr_ms (dm-delay).
 */
static int delay_table(unsigned long long bytes, int rd_ms, int wr_ms)
{
	const char *ns = kvt_ns("KVTIER_NS1");
	char t[256];

	if (rd_ms || wr_ms)
		snprintf(t, sizeof(t), "0 %llu delay %s 0 %d %s 0 %d\n",
			 bytes / 512, ns, rd_ms, ns, wr_ms);
	else
		snprintf(t, sizeof(t), "0 %llu linear %s 0\n", bytes / 512, ns);
	return table(t);
}

/* The first RS_NS of NS1, its reads delayed by @delay_ms (0: none). */
static int rs_table(int delay_ms)
{
	return delay_table(RS_NS, delay_ms, 0);
}

/* The tier's free data space, in pages. */
static long long rs_free_pages(void)
{
	return kvt_stat(0, "slots_total") - kvt_stat(0, "slots_used");
}

TEST_F_TIMEOUT(race, direct_read_of_reused_slot, 300)
{
	struct rs_read r = { 0 };
	long long pages, d0, r0, t0;
	unsigned char *page;
	pthread_t th;
	int crc, fb;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	ASSERT_EQ(0, posix_memalign((void **)&r.buf, PAGE, PAGE));
	ASSERT_EQ(0, posix_memalign((void **)&page, PAGE, PAGE));
	for (crc = 0; crc <= 1; crc++) {
		/* A small namespace: region A takes all of it but one slot. */
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
		ASSERT_EQ(0, rs_table(0));
		ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		pages = rs_free_pages() - 1;
		ASSERT_GT(pages, 64);
		ASSERT_EQ(0, persistent_filled("rs-a", pages * PAGE, 91));
		ASSERT_EQ(1, rs_free_pages());

		/* Reads now take RS_DELAY_MS; writes and flushes do not. */
		r.fd = kvt_tier_open(0, O_RDWR);
		ASSERT_GE(r.fd, 0);
		ASSERT_EQ(0, kvt_bind_name(r.fd, "rs-a", 0, 0, 0));
		ASSERT_EQ(0, rs_table(RS_DELAY_MS));
		d0 = kvt_stat(0, "direct_read_pages");
		r0 = kvt_stat(0, "direct_read_retries");
		ASSERT_EQ(0, pthread_create(&th, NULL, rs_reader, &r));
		usleep(RS_DELAY_MS * 1000 / 4);

		/*
		 * The page rewritten and committed: its old slot is free, once
		 * the read of it is over.
		 */
		kvt_fill(page, PAGE, RS_PAGE, 92);
		ASSERT_EQ((ssize_t)PAGE, pwrite(r.fd, page, PAGE, RS_PAGE));
		t0 = kvt_now_ms();
		ASSERT_EQ(0, fsync(r.fd));
		t0 = kvt_now_ms() - t0;
		ASSERT_EQ(1, rs_free_pages());
		/* ... and the only one: region B's page goes there. */
		fb = region_fd(PAGE);
		ASSERT_GE(fb, 0);
		kvt_fill(page, PAGE, 0, 93);
		ASSERT_EQ((ssize_t)PAGE, pwrite(fb, page, PAGE, 0));
		ASSERT_EQ(0, fsync(fb));
		ASSERT_EQ(0, rs_free_pages());

		pthread_join(th, NULL);
		TH_LOG("checksum %d: pread %zd; fsync %lld ms; direct_read_pages +%lld, direct_read_retries +%lld",
		       crc, r.got, t0, kvt_stat(0, "direct_read_pages") - d0,
		       kvt_stat(0, "direct_read_retries") - r0);
		ASSERT_EQ((ssize_t)PAGE, r.got);
		ASSERT_EQ(-1, kvt_check(r.buf, PAGE, RS_PAGE, 91));
		ASSERT_EQ(1, kvt_stat(0, "direct_read_pages") - d0);
		ASSERT_EQ(0, kvt_stat(0, "direct_read_retries") - r0);
		ASSERT_GE(t0, RS_DELAY_MS / 2);
		/* Region B's page is in the old slot; the page reads anew. */
		ASSERT_EQ(0, linear());
		ASSERT_EQ((ssize_t)PAGE, pread(r.fd, r.buf, PAGE, RS_PAGE));
		ASSERT_EQ(-1, kvt_check(r.buf, PAGE, RS_PAGE, 92));
		close(fb);
		close(r.fd);
	}
	free(page);
	free(r.buf);
}

/*
 * The same race with a direct write (checksum off) in place of the
 * commit: the page's direct pwrite moves it to a free slot and frees its
 * old one only when the delayed direct read of it is over, so region B,
 * written next through the pool into every free slot, that one too,
 * never reaches the reader.
 */
TEST_F_TIMEOUT(race, direct_write_frees_slot_after_reads, 300)
{
	struct rs_read r = { 0 };
	long long pages, room, d0, t0;
	unsigned char *page;
	pthread_t th;
	int fb;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	ASSERT_EQ(0, posix_memalign((void **)&r.buf, PAGE, PAGE));
	ASSERT_EQ(0, posix_memalign((void **)&page, PAGE, PAGE));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, rs_table(0));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	/*
	 * Region A takes all of the namespace but one slot and the reserve
	 * direct writes leave to the pool (1/64).
	 */
	room = 1 + kvt_stat(0, "slots_total") / 64;
	pages = rs_free_pages() - room;
	ASSERT_GT(pages, 64);
	r.fd = region_fd(pages * PAGE);
	ASSERT_GE(r.fd, 0);
	ASSERT_EQ(0, fill_evict(r.fd, pages * PAGE, 91));
	ASSERT_EQ(room, rs_free_pages());

	/* Reads now take RS_DELAY_MS; writes do not. */
	ASSERT_EQ(0, rs_table(RS_DELAY_MS));
	d0 = kvt_stat(0, "direct_write_pages");
	ASSERT_EQ(0, pthread_create(&th, NULL, rs_reader, &r));
	usleep(RS_DELAY_MS * 1000 / 4);

	/* Moved to a free slot; the old one is freed after the read ... */
	kvt_fill(page, PAGE, RS_PAGE, 92);
	t0 = kvt_now_ms();
	ASSERT_EQ((ssize_t)PAGE, pwrite(r.fd, page, PAGE, RS_PAGE));
	t0 = kvt_now_ms() - t0;
	ASSERT_EQ(1, kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(room, rs_free_pages());
	/* ... and region B, through the pool, takes every free slot. */
	fb = region_fd(room * PAGE);
	ASSERT_GE(fb, 0);
	ASSERT_EQ(0, fill_evict(fb, room * PAGE, 93));
	ASSERT_EQ(1, kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(0, rs_free_pages());

	pthread_join(th, NULL);
	TH_LOG("pread %zd; the direct pwrite took %lld ms", r.got, t0);
	ASSERT_EQ((ssize_t)PAGE, r.got);
	ASSERT_EQ(-1, kvt_check(r.buf, PAGE, RS_PAGE, 91));
	ASSERT_GE(t0, RS_DELAY_MS / 2);
	/* The page reads anew, and B's pages are B's. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ((ssize_t)PAGE, pread(r.fd, r.buf, PAGE, RS_PAGE));
	ASSERT_EQ(-1, kvt_check(r.buf, PAGE, RS_PAGE, 92));
	ASSERT_EQ(-1, check_fd(fb, room * PAGE, 93));

	close(fb);

	/*
	 * B's slots back: one page plus the reserve free. Two pages would
	 * take the reserve: an aligned pwrite of them goes through the pool,
	 * whose write-back keeps their slots.
	 */
	ASSERT_EQ(room, rs_free_pages());
	free(page);
	ASSERT_EQ(0, posix_memalign((void **)&page, PAGE, 2 * PAGE));
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(page, 2 * PAGE, 7 * PAGE, 94);
	ASSERT_EQ((ssize_t)(2 * PAGE), pwrite(r.fd, page, 2 * PAGE, 7 * PAGE));
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_EQ(2, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, fsync(r.fd));
	ASSERT_EQ(0, posix_fadvise(r.fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(room, rs_free_pages());
	memset(page, 0, 2 * PAGE);
	ASSERT_EQ((ssize_t)(2 * PAGE), pread(r.fd, page, 2 * PAGE, 7 * PAGE));
	ASSERT_EQ(-1, kvt_check(page, 2 * PAGE, 7 * PAGE, 94));
	close(r.fd);
	free(page);
	free(r.buf);
}

#define WB_NS		(64 * MiB)	/* the namespace of this test */
/*
 * Long enough for a pread, a fault or a store to meet one write-back in
 * flight (they take milliseconds; writeback_pages counts at the write's
 * completion, the flush is held up as long after it). Step 2b forks and
 * kills two writers within one write: it has twice as long.
 */
#define WB_DELAY_MS	1500
#define WB_KILL_MS	3000
#define WB_RECLAIM_MS	600	/* step 4: C's write-back against B's reclaim */
#define WB_PAGES	16
#define WB_LEN		(WB_PAGES * PAGE)
#define WB_OTHER	(5 * MiB)	/* region B: over the 4 MiB budget */

/* The first WB_NS of NS1, its writes and flushes delayed by @ms (0: none). */
static int wb_table(int ms)
{
	return delay_table(WB_NS, 0, ms);
}

struct wb_sync {
	int fd;
	int ret;
	pthread_t th;
};

static void *wb_fsync(void *p)
{
	struct wb_sync *s = p;

	s->ret = fsync(s->fd);
	return NULL;
}

/*
 * Make @fd's WB_LEN dirty with pattern @seed and start an fsync of it in a
 * thread; returns once its bio is out and its pages let go of, with
 * writeback_pages before it in *@w0, or -1. The bytes are written from
 * @buf + 8 (WB_LEN + 8 bytes): memory that is not page-aligned goes
 * through the pool, never straight to the namespace (checksum off).
 */
static int wb_start(struct wb_sync *s, int fd, unsigned char *buf,
		    unsigned long long seed, long long *w0)
{
	long long b0 = kvt_stat(0, "writeback_bios");

	kvt_fill(buf + 8, WB_LEN, 0, seed);
	if (pwrite(fd, buf + 8, WB_LEN, 0) != (ssize_t)WB_LEN)
		return -1;
	*w0 = kvt_stat(0, "writeback_pages");
	s->fd = fd;
	s->ret = -1;
	if (pthread_create(&s->th, NULL, wb_fsync, s))
		return -1;
	if (kvt_wait_stat(0, "writeback_bios", b0, 1, 10) < 1)
		return -1;
	/* The locks go right after the bios: give the thread the moment. */
	usleep(100 * 1000);
	return 0;
}

/*
 * Wait for wb_start()'s fsync: it succeeded, wrote WB_PAGES pages, and
 * left @dirty pages dirty (written to during it).
 */
static void wb_end(struct __test_metadata *_metadata, struct wb_sync *s,
		   long long w0, long long dirty)
{
	pthread_join(s->th, NULL);
	ASSERT_EQ(0, s->ret);
	ASSERT_EQ(w0 + WB_PAGES, kvt_stat(0, "writeback_pages"));
	ASSERT_EQ(dirty, kvt_stat(0, "dirty_pages"));
}

TEST_F_TIMEOUT(race, writeback_lets_readers_in, 300)
{
	unsigned char *buf, *map, *other;
	long long w0, k0, used, t_read, t_write, skips, met = 0;
	struct wb_sync s;
	int crc, fd, fc, fb, i, status;
	pid_t pid;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	ASSERT_EQ(0, posix_memalign((void **)&buf, PAGE, WB_LEN + 8));
	other = malloc(WB_OTHER + 8);
	ASSERT_NE(NULL, other);
	for (crc = 0; crc <= 1; crc++) {
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
		ASSERT_EQ(0, wb_table(0));
		ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		/* Nothing but the fsync writes: no background write-back. */
		ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
		fd = region_fd(WB_LEN);
		ASSERT_GE(fd, 0);
		map = mmap(NULL, WB_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		ASSERT_NE(MAP_FAILED, map);
		ASSERT_EQ(0, wb_table(WB_DELAY_MS));

		/* 1: a pread and a fault get in; a pwrite waits. */
		ASSERT_EQ(0, wb_start(&s, fd, buf, 1, &w0));
		memset(buf, 0, PAGE);
		t_read = kvt_now_ms();
		ASSERT_EQ((ssize_t)PAGE, pread(fd, buf, PAGE, 3 * PAGE));
		ASSERT_EQ(-1, kvt_check(buf, PAGE, 3 * PAGE, 1));
		ASSERT_EQ(-1, kvt_check(map + 4 * PAGE, PAGE, 4 * PAGE, 1));
		t_read = kvt_now_ms() - t_read;
		ASSERT_EQ(w0, kvt_stat(0, "writeback_pages"));
		k0 = kvt_stat(0, "writeback_waits");
		kvt_fill(buf, PAGE, 5 * PAGE, 2);
		t_write = kvt_now_ms();
		ASSERT_EQ((ssize_t)PAGE, pwrite(fd, buf, PAGE, 5 * PAGE));
		t_write = kvt_now_ms() - t_write;
		TH_LOG("checksum %d: during fsync (writes delayed %d ms): pread + fault %lld ms, pwrite %lld ms",
		       crc, WB_DELAY_MS, t_read, t_write);
		EXPECT_EQ(w0 + WB_PAGES, kvt_stat(0, "writeback_pages"));
		EXPECT_EQ(k0 + 1, kvt_stat(0, "writeback_waits"));
		wb_end(_metadata, &s, w0, 1);

		/* 2: a store through the mapping waits. */
		ASSERT_EQ(0, wb_start(&s, fd, buf, 3, &w0));
		k0 = kvt_stat(0, "writeback_waits");
		kvt_fill(map + 6 * PAGE, PAGE, 6 * PAGE, 4);
		EXPECT_EQ(w0 + WB_PAGES, kvt_stat(0, "writeback_pages"));
		EXPECT_EQ(k0 + 1, kvt_stat(0, "writeback_waits"));
		wb_end(_metadata, &s, w0, 1);

		/*
		 * 2b: a pwrite and a store waiting for it can be killed, and
		 * change nothing.
		 */
		ASSERT_EQ(0, wb_table(WB_KILL_MS));
		ASSERT_EQ(0, wb_start(&s, fd, buf, 8, &w0));
		k0 = kvt_stat(0, "writeback_waits");
		for (i = 0; i < 2; i++) {
			pid = fork();
			ASSERT_GE(pid, 0);
			if (!pid) {
				/* Never outlive a test that failed. */
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				kvt_fill(buf + 8, PAGE, 7 * PAGE, 9);
				if (i)
					kvt_fill(map + 8 * PAGE, PAGE, 8 * PAGE, 9);
				else if (pwrite(fd, buf + 8, PAGE, 7 * PAGE) < 0)
					_exit(1);
				_exit(0);
			}
			ASSERT_GE(kvt_wait_stat(0, "writeback_waits", k0, i + 1, 5), i + 1);
			ASSERT_EQ(0, kill(pid, SIGKILL));
			ASSERT_EQ(0, kvt_reap(pid, 5, &status));
			ASSERT_TRUE(WIFSIGNALED(status));
		}
		/* Both gone before the write completed. */
		EXPECT_EQ(w0, kvt_stat(0, "writeback_pages"));
		wb_end(_metadata, &s, w0, 0);
		ASSERT_EQ(-1, kvt_check(map + 7 * PAGE, 2 * PAGE, 7 * PAGE, 8));
		ASSERT_EQ(0, wb_table(WB_DELAY_MS));

		/* 3: DONTNEED waits for the write-back and drops it all. */
		ASSERT_EQ(0, wb_start(&s, fd, buf, 5, &w0));
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		EXPECT_EQ(w0 + WB_PAGES, kvt_stat(0, "writeback_pages"));
		EXPECT_EQ(0, kvt_stat(0, "resident_pages"));
		wb_end(_metadata, &s, w0, 0);
		ASSERT_EQ(0, kvt_stat(0, "resident_pages"));
		ASSERT_EQ(-1, kvt_check(map, WB_LEN, 0, 5));

		/*
		 * 4: region C's first write-back in flight (fresh slots) while
		 * region B pushes reclaim through the budget, C's pages the
		 * coldest.
		 */
		fc = region_fd(WB_LEN);
		ASSERT_GE(fc, 0);
		fb = region_fd(WB_OTHER);
		ASSERT_GE(fb, 0);
		ASSERT_EQ(0, wb_table(WB_RECLAIM_MS));
		kvt_fill(other + 8, WB_OTHER, 0, 7);
		skips = kvt_stat(0, "reclaim_wb_skips");
		ASSERT_EQ(0, wb_start(&s, fc, buf, 6, &w0));
		/* Not page-aligned: through the pool. */
		ASSERT_EQ((ssize_t)WB_OTHER, pwrite(fb, other + 8, WB_OTHER, 0));
		pthread_join(s.th, NULL);
		skips = kvt_stat(0, "reclaim_wb_skips") - skips;
		met += skips > 0;
		ASSERT_EQ(0, s.ret);
		ASSERT_EQ(0, wb_table(0));
		ASSERT_EQ(0, fsync(fb));
		used = kvt_stat(0, "slots_used");
		TH_LOG("checksum %d: slots used %lld for %d pages; writeback_waits %lld; reclaim passed over %lld pages in flight",
		       crc, used, 2 * WB_PAGES + (int)(WB_OTHER / PAGE),
		       kvt_stat(0, "writeback_waits"), skips);
		ASSERT_EQ(2 * WB_PAGES + WB_OTHER / PAGE, used);

		/* Every byte, read back from the namespace. */
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, posix_fadvise(fc, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, posix_fadvise(fb, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, kvt_stat(0, "resident_pages"));
		ASSERT_EQ(-1, check_fd(fd, WB_LEN, 5));
		ASSERT_EQ(-1, check_fd(fc, WB_LEN, 6));
		ASSERT_EQ(-1, check_fd(fb, WB_OTHER, 7));
		ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
		munmap(map, WB_LEN);
		close(fb);
		close(fc);
		close(fd);
	}
	free(other);
	free(buf);
	/* Step 4 proves its case only where reclaim met the pages in flight. */
	if (!met)
		SKIP(return, "reclaim never met a page in flight: step 4 proved nothing");
}

#define LP_LEN		(16 * MiB)	/* read by one long pread */
#define LP_DELAY_MS	100

struct lp_read {
	int fd;
	unsigned char *buf;
	ssize_t got;
	int err;
	int done;
	pthread_t th;
};

static void *lp_reader(void *p)
{
	struct lp_read *r = p;

	r->got = pread(r->fd, r->buf, LP_LEN, 0);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static volatile sig_atomic_t lp_signals;

static void lp_on_signal(int sig)
{
	(void)sig;
	lp_signals++;
}

/* Drop the region's pages, then start a pread of all of it into @buf. */
static int lp_start(struct lp_read *r, int fd, unsigned char *buf)
{
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		return -1;
	*r = (struct lp_read){ .fd = fd, .buf = buf };
	return pthread_create(&r->th, NULL, lp_reader, r);
}

TEST_F_TIMEOUT(race, long_pread_signals_and_unmaps, 300)
{
	struct sigaction sa = { .sa_handler = lp_on_signal };
	long long t0, ok_len, d0, r0, b0;
	unsigned char *map, *buf;
	struct lp_read r;
	int direct, fd, status;
	pid_t pid;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	/* Queued, not merged: each one sent during the read is handled. */
	ASSERT_EQ(0, sigaction(SIGRTMIN, &sa, NULL));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, delay_table(WB_NS, 0, 0));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	fd = region_fd(LP_LEN);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_evict(fd, LP_LEN, 31));
	/* A page more: the pool's buffer starts 8 bytes in. */
	map = mmap(NULL, LP_LEN + PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	for (direct = 0; direct <= 1; direct++) {
		buf = direct ? map : map + 8;
		ASSERT_EQ(0, delay_table(WB_NS, LP_DELAY_MS, 0));

		/* Signals with a handler, all the way through: every byte. */
		lp_signals = 0;
		d0 = kvt_stat(0, "direct_read_pages");
		t0 = kvt_now_ms();
		ASSERT_EQ(0, lp_start(&r, fd, buf));
		while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
			pthread_kill(r.th, SIGRTMIN);
			usleep(5000);
		}
		pthread_join(r.th, NULL);
		TH_LOG("%s: pread %zd in %lld ms, %d signals handled",
		       direct ? "direct" : "pool", r.got, kvt_now_ms() - t0,
		       (int)lp_signals);
		ASSERT_EQ((ssize_t)LP_LEN, r.got);
		ASSERT_EQ(-1, kvt_check(buf, LP_LEN, 0, 31));
		ASSERT_GE(lp_signals, 3);
		/* The path named: every page straight in, or none. */
		ASSERT_EQ(direct ? (long long)(LP_LEN / PAGE) : 0,
			  kvt_stat(0, "direct_read_pages") - d0);

		/*
		 * SIGKILL in the middle of one: it stops at once, not after
		 * its 16 MiB (1.6 s of delayed reads at least).
		 */
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		r0 = kvt_stat(0, "read_pages");
		b0 = kvt_stat(0, "read_bios");
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;) {
				if (pread(fd, buf, LP_LEN, 0) < 0)
					_exit(1);
				posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			}
		}
		ASSERT_GE(kvt_wait_stat(0, "read_bios", b0, 1, 10), 1);
		t0 = kvt_now_ms();
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(0, kvt_reap(pid, 10, &status));
		TH_LOG("%s: killed, reaped after %lld ms, %lld pages read",
		       direct ? "direct" : "pool", kvt_now_ms() - t0,
		       kvt_stat(0, "read_pages") - r0);
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(SIGKILL, WTERMSIG(status));
		ASSERT_LT(kvt_stat(0, "read_pages") - r0, (long long)(LP_LEN / PAGE));

		/* The buffer's second half unmapped once the read runs. */
		memset(buf, 0, LP_LEN);
		b0 = kvt_stat(0, "read_bios");
		ASSERT_EQ(0, lp_start(&r, fd, buf));
		ASSERT_GE(kvt_wait_stat(0, "read_bios", b0, 1, 10), 1);
		ASSERT_EQ(0, munmap(map + LP_LEN / 2, LP_LEN / 2 + PAGE));
		pthread_join(r.th, NULL);
		TH_LOG("%s: unmapped during the read: pread %zd (errno %d)",
		       direct ? "direct" : "pool", r.got, r.got < 0 ? r.err : 0);
		if (r.got < 0)
			ASSERT_EQ(EFAULT, r.err);
		ASSERT_LT(r.got, (ssize_t)LP_LEN);
		/* What it says it read, as far as the buffer is still there. */
		ok_len = r.got < 0 ? 0 : r.got;
		if (ok_len > (long long)(LP_LEN / 2) - (buf - map))
			ok_len = LP_LEN / 2 - (buf - map);
		ASSERT_EQ(-1, kvt_check(buf, ok_len, 0, 31));
		ASSERT_EQ(map + LP_LEN / 2,
			  mmap(map + LP_LEN / 2, LP_LEN / 2 + PAGE,
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));

		ASSERT_EQ(0, delay_table(WB_NS, 0, 0));
		ASSERT_EQ(-1, check_fd(fd, LP_LEN, 31));
	}
	munmap(map, LP_LEN + PAGE);
	close(fd);
	ASSERT_EQ(0, kvt_stat(0, "resident_pages"));
}

#define AT_REGIONS	48
#define AT_PAGES	4
#define AT_DELAY_MS	50	/* each read of the attach held up this long */

struct at_attach {
	int ret;
	int done;
	pthread_t th;
};

static void *at_attach(void *p)
{
	struct at_attach *a = p;

	a->ret = kvt_tier_write(0, "backing_dev", DM_DEV);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void at_name(char *name, size_t len, int i)
{
	snprintf(name, len, "at%02d", i);
}

/*
 * Whether the kernel has logged an attach of DM_DEV since @fd (/dev/kmsg,
 * opened at its end) was opened: the attach logs it holding tier->lock,
 * as its last step.
 */
static int at_logged(int fd, int *seen)
{
	if (kvt_kmsg_scan(fd, "attached " DM_DEV " (") > 0)
		*seen = 1;
	return *seen;
}

/*
 * Attach in a thread, its reads held up AT_DELAY_MS, and call @op (0:
 * UNLINK of the last region, 1: SETFLAGS PINNED of the one before, the
 * last once the first is gone, 2: LIST, which must list all the
 * AT_REGIONS - 1 left) every millisecond until it finds the region (or
 * any). Returns 0 if the call that found it was issued before the attach
 * had finished and returned after it (it waited); 1 if it was issued after
 * the attach had finished (the thread stalled for the whole attach between
 * two calls: the round proved nothing; it did what it does); 2 if no call
 * found it and the attach is over (a stall after the last one: nothing
 * done, nothing proved); -1 otherwise.
 */
static int at_call_during_attach(struct __test_metadata *_metadata, int op)
{
	struct kvtier_region_flags rf = { .set = KVTIER_REGION_PINNED };
	struct kvtier_region_entry e[AT_REGIONS];
	struct kvtier_region_list rl;
	struct at_attach a = { 0 };
	int fd, kfd, ret = -1, before, after, seen = 0;

	at_name(rf.name, sizeof(rf.name), AT_REGIONS - 1 - op);
	if (kvt_tier_write(0, "backing_dev", "none") || delay_table(WB_NS, AT_DELAY_MS, 0))
		return -1;
	fd = kvt_tier_open(0, O_RDWR);
	kfd = kvt_kmsg_end();
	if (fd < 0 || kfd < 0 || pthread_create(&a.th, NULL, at_attach, &a)) {
		close(fd);
		close(kfd);
		return -1;
	}
	do {
		usleep(1000);
		before = at_logged(kfd, &seen);
		rl = (struct kvtier_region_list){ .entries = (unsigned long)e,
						  .count = AT_REGIONS };
		if (op == 2)
			ret = ioctl(fd, KVTIER_IOC_REGION_LIST, &rl) ? -errno :
			      rl.count ? 0 : -ENOENT;
		else if (op)
			ret = ioctl(fd, KVTIER_IOC_REGION_SETFLAGS, &rf) ? -errno : 0;
		else
			ret = kvt_unlink_name(fd, rf.name);
		after = at_logged(kfd, &seen);
	} while (ret == -ENOENT && !__atomic_load_n(&a.done, __ATOMIC_ACQUIRE));
	pthread_join(a.th, NULL);
	close(fd);
	close(kfd);
	TH_LOG("%s: %d; attach logged before the call %d, after it %d",
	       op == 2 ? "LIST" : op ? "SETFLAGS" : "UNLINK", ret, before, after);
	if (a.ret || delay_table(WB_NS, 0, 0))
		return -1;
	/* Every call came before the attach, the thread stalled through it. */
	if (ret == -ENOENT)
		return 2;
	if (ret || !after || (op == 2 && rl.count != AT_REGIONS - 1))
		return -1;
	return before ? 1 : 0;
}

/*
 * A name call waiting for an attach can be killed: a child's UNLINK,
 * issued 100 ms into a delayed attach, is killed, and the child is reaped
 * before the attach has logged its end. Returns 0 if so, 1 if the attach
 * had ended before the kill (the round proved nothing), -1 otherwise.
 */
static int at_kill_during_attach(struct __test_metadata *_metadata)
{
	struct at_attach a = { 0 };
	int fd, kfd, status, seen = 0, reaped = -1;
	pid_t pid;

	if (kvt_tier_write(0, "backing_dev", "none") || delay_table(WB_NS, AT_DELAY_MS, 0))
		return -1;
	fd = kvt_tier_open(0, O_RDWR);
	kfd = kvt_kmsg_end();
	if (fd < 0 || kfd < 0 || pthread_create(&a.th, NULL, at_attach, &a)) {
		close(fd);
		close(kfd);
		return -1;
	}
	pid = fork();
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			kvt_unlink_name(fd, "at-none");
	}
	if (pid > 0) {
		usleep(100 * 1000);
		kill(pid, SIGKILL);
		if (!kvt_reap(pid, 5, &status) && WIFSIGNALED(status))
			reaped = at_logged(kfd, &seen);
	}
	pthread_join(a.th, NULL);
	close(fd);
	close(kfd);
	TH_LOG("killed while the attach waited: reaped %s the attach ended",
	       reaped ? "after" : "before");
	if (a.ret || reaped < 0)
		return -1;
	if (delay_table(WB_NS, 0, 0))
		return -1;
	return reaped ? 1 : 0;
}

/* Create persistent region @i of names_wait_for_attach, written whole. */
static int at_create(unsigned char *buf, int i)
{
	int fd = kvt_tier_open(0, O_RDWR), ret;
	char name[32];

	if (fd < 0)
		return -errno;
	at_name(name, sizeof(name), i);
	ret = kvt_bind_name(fd, name, AT_PAGES * PAGE,
			    KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
			    KVTIER_OPEN_PERSISTENT, 0600);
	kvt_fill(buf, AT_PAGES * PAGE, 0, 200 + i);
	if (!ret && pwrite(fd, buf, AT_PAGES * PAGE, 0) != (ssize_t)(AT_PAGES * PAGE))
		ret = -EIO;
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Round @op of names_wait_for_attach (@op 3: the kill), again while one
 * proved nothing, three times at most (then it fails). An UNLINK that
 * came too late unlinked its region: it is made again first.
 */
static int at_round(struct __test_metadata *_metadata, unsigned char *buf, int op)
{
	int try, ret = 1;

	for (try = 0; try < 3; try++) {
		ret = op == 3 ? at_kill_during_attach(_metadata) :
		      at_call_during_attach(_metadata, op);
		if (ret <= 0)
			return ret;
		TH_LOG("round %d, try %d: the attach was over (%d): again", op, try, ret);
		if (ret == 1 && !op && at_create(buf, AT_REGIONS - 1))
			return -1;
	}
	return -1;
}

/*
 * An ioctl that names a region finds it only once the attach that loads
 * it has finished: UNLINK, SETFLAGS and LIST issued during an attach wait
 * for it.
 * An attach makes each region findable as soon as it has read its record,
 * before it has claimed the region's slots, and holds no reference of its
 * own: an UNLINK then would free the region under the attach and commit a
 * store that is half loaded. After the waited-for unlink and pin, every
 * other region is intact, the slots of the unlinked one are free, and
 * both survive a detach and an attach.
 */
TEST_F_TIMEOUT(race, names_wait_for_attach, 300)
{
	unsigned char *buf = malloc(AT_PAGES * PAGE);
	struct kvtier_region_list rl = { 0 };
	struct kvtier_region_entry *e;
	char name[32], pinned[32], version[16];
	long long used, gone;
	int fd, i;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, delay_table(WB_NS, 0, 0));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	for (i = 0; i < AT_REGIONS; i++)
		ASSERT_EQ(0, at_create(buf, i));
	/* A checkpoint (the detach's) gives each its CRC run (version 4). */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	ASSERT_EQ(0, kvt_tier_read(0, "upgrade", version, sizeof(version)));
	/* What an unlink frees: the pages, and a block of CRCs. */
	gone = AT_PAGES + (atoi(version) >= 4);
	used = kvt_stat(0, "slots_used");

	ASSERT_EQ(0, at_round(_metadata, buf, 0));
	/* Freed by the commit that follows the lookup's last reference. */
	for (i = 0; i < 1000 && kvt_stat(0, "slots_used") != used - gone; i++)
		usleep(10000);
	ASSERT_EQ(used - gone, kvt_stat(0, "slots_used"));
	ASSERT_EQ(0, at_round(_metadata, buf, 1));
	ASSERT_EQ(0, at_round(_metadata, buf, 2));
	ASSERT_EQ(0, at_round(_metadata, buf, 3));

	/* Once more from the namespace: the unlink and the pin held. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", DM_DEV));
	ASSERT_EQ(used - gone, kvt_stat(0, "slots_used"));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	rl.count = AT_REGIONS;
	e = calloc(AT_REGIONS, sizeof(*e));
	ASSERT_NE(NULL, e);
	rl.entries = (unsigned long)e;
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_LIST, &rl));
	ASSERT_EQ(AT_REGIONS - 1, rl.count);
	at_name(name, sizeof(name), AT_REGIONS - 1);
	at_name(pinned, sizeof(pinned), AT_REGIONS - 2);
	for (i = 0; i < AT_REGIONS - 1; i++) {
		ASSERT_STRNE(name, e[i].name);
		ASSERT_EQ(strcmp(e[i].name, pinned) ? 0 : KVTIER_REGION_PINNED,
			  e[i].flags & KVTIER_REGION_PINNED);
	}
	ASSERT_EQ(-ENOENT, kvt_bind_name(fd, name, 0, 0, 0));
	close(fd);
	for (i = 0; i < AT_REGIONS - 1; i++) {
		at_name(name, sizeof(name), i);
		fd = kvt_tier_open(0, O_RDWR);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, kvt_bind_name(fd, name, 0, 0, 0));
		ASSERT_EQ(-1, check_fd(fd, AT_PAGES * PAGE, 200 + i));
		close(fd);
	}
	free(e);
	free(buf);
}

TEST_HARNESS_MAIN
