// SPDX-License-Identifier: GPL-2.0
/*
 * I/O errors and a slow device under a tier, through device-mapper over
 * KVTIER_NS1 (as kvtier_latency_test.c): the tier is formatted on
 * /dev/mapper/kvt-ioerr and the table is swapped under it (dmsetup load +
 * resume) to one that fails:
 *
 * - reads fail (the `error` target, or dm-flakey always down: with the
 *   error_reads feature where the kernel has it (6.12; there the down
 *   interval alone does not fail reads), without features on 6.1, where a
 *   down flakey fails every bio): a faulting access gets SIGBUS, pread
 *   EIO, never zeros or stale bytes; a pinned region keeps working; the
 *   error is counted (io_errors), logged, kept in sysfs error/state; once
 *   the device works again the same pages read back right; detach works.
 * - writes fail (flakey error_writes): fsync returns EIO and keeps
 *   returning it (REGION_INFO error, sticky), the pages stay dirty and
 *   readable from memory, another region is not marked; after the device
 *   recovers the bytes reach it; detach works. Background write-back
 *   stops at the error, pauses, and comes back by itself once the device
 *   works.
 * - writes silently dropped (flakey drop_writes): fsync cannot know, the
 *   CRC32C of each page catches it on read-back (EIO/SIGBUS, never the
 *   older bytes).
 * - reads corrupted (flakey corrupt_bio_byte ... r): checksum_errors,
 *   EIO/SIGBUS, never wrong bytes; a direct read (pread into page-aligned
 *   memory, synchronous or through aio) is read again through the pool,
 *   then EIO. With checksum 0, unnamed regions' pages are written without
 *   a CRC and read back unchecked; persistent regions' keep theirs.
 * - a slow device (dm-delay 100 ms): faults take the delay, nothing
 *   fails, and max_inflight_kb bounds the bytes in flight (debugfs
 *   inflight_bytes sampled while it runs).
 *
 * Needs KVTIER_NS1, dmsetup and the targets (each test skips, saying why,
 * without them); DM_DISABLE_UDEV=1 is set by the rig.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/fs.h>
#include <linux/kvtier.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define DM_NAME		"kvt-ioerr"
#define DM_DEV		"/dev/mapper/" DM_NAME
#define BUDGET_MB	4

static unsigned long long ns1_sectors(void)
{
	return kvt_dev_size(kvt_ns("KVTIER_NS1")) / 512;
}

static int linear(void)
{
	return kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "linear %s 0",
			    kvt_ns("KVTIER_NS1"));
}

/*
 * dm-flakey always down with @features ("1 error_writes"...). 0 or -1 (the
 * kernel refused the table: a feature it does not know).
 */
static int flakey(const char *features)
{
	return kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "flakey %s 0 0 3600%s%s",
			    kvt_ns("KVTIER_NS1"), *features ? " " : "", features);
}

FIXTURE(ioerr) {
	int dummy;
};

/* kvtier loaded; NS1 behind a linear dm table, formatted as tier 0. */
FIXTURE_SETUP(ioerr)
{
	const char *ns1 = kvt_ns("KVTIER_NS1"), *why;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	why = kvt_dm_missing("linear");
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_FALSE(kvt_exists(DM_DEV));
	ASSERT_GT(ns1_sectors(), 0);
	ASSERT_EQ(0, kvt_dm_linear(DM_NAME, ns1));
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", BUDGET_MB));
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
}

/* In the parent, every file of the test closed: back to linear, detach, unload. */
FIXTURE_TEARDOWN_PARENT(ioerr)
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

FIXTURE_VARIANT(ioerr) {
	const char *how;	/* "error" or "flakey" */
};

FIXTURE_VARIANT_ADD(ioerr, error_target) { .how = "error" };
FIXTURE_VARIANT_ADD(ioerr, flakey) { .how = "flakey" };

#define A_LEN	(8 * MiB)
#define B_LEN	(1 * MiB)

/*
 * Reads fail: region A (twice the budget, synced and dropped) is only on
 * the namespace, region B is pinned in memory.
 */
TEST_F_TIMEOUT(ioerr, reads_fail, 300)
{
	struct kvtier_pin pin = { .offset = 0, .length = B_LEN };
	unsigned char *a, *b;
	long long errs0, off;
	int fa, fb, i, kfd, sigbus = 0, eio = 0;
	char buf[32];

	if (!strcmp(variant->how, "flakey") && kvt_dm_missing("flakey"))
		SKIP(return, "no dm-flakey target");
	a = kvt_map_filled(&fa, A_LEN, 1);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	b = kvt_map_filled(&fb, B_LEN, 2);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, fsync(fb));
	ASSERT_EQ(0, ioctl(fb, KVTIER_IOC_PIN, &pin));
	errs0 = kvt_stat(0, "io_errors");
	ASSERT_EQ(0, errs0);
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);

	if (!strcmp(variant->how, "error")) {
		ASSERT_EQ(0, kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "error"));
	} else if (flakey("1 error_reads")) {
		/* 6.1: no error_reads; a down flakey without features fails all. */
		TH_LOG("dm-flakey without error_reads: plain down interval");
		ASSERT_EQ(0, flakey(""));
	}

	/* Every page of A: SIGBUS through the mapping, EIO from pread. */
	for (off = 0; off < (long long)A_LEN; off += 37 * PAGE) {
		sigbus += kvt_touch_or_sigbus(a + off);
		i = kvt_pread_page(fa, off + PAGE, 1);
		ASSERT_NE(1, i);	/* never wrong, zero or stale bytes */
		ASSERT_NE(2, i);
		eio += i == -EIO;
	}
	TH_LOG("%d SIGBUS, %d EIO of %llu probes", sigbus, eio, A_LEN / (37 * PAGE) + 1);
	ASSERT_EQ(A_LEN / (37 * PAGE) + 1, (unsigned long long)sigbus);
	ASSERT_EQ(A_LEN / (37 * PAGE) + 1, (unsigned long long)eio);

	/* The pinned region goes on: read and write it. */
	ASSERT_EQ(-1, kvt_check(b, B_LEN, 0, 2));
	kvt_fill(b, B_LEN, 0, 3);
	ASSERT_EQ(0, kvt_pread_page(fb, B_LEN - PAGE, 3));

	ASSERT_GT(kvt_stat(0, "io_errors"), errs0);
	ASSERT_TRUE(kvt_state_is(0, "error"));
	ASSERT_EQ(0, kvt_tier_read(0, "error", buf, sizeof(buf)));
	ASSERT_STREQ("-5", buf);
	/* Logged, rate-limited: not one line per failed bio. */
	i = kvt_kmsg_scan(kfd, "kvtier0: read error");
	close(kfd);
	TH_LOG("%d 'read error' lines for %lld failed bios", i,
	       kvt_stat(0, "io_errors") - errs0);
	ASSERT_GE(i, 1);
	ASSERT_LE(i, 10 + 1);

	/* The device works again: the same pages read back right. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ(-1, kvt_check(a, A_LEN, 0, 1));
	for (off = 0; off < (long long)A_LEN; off += 37 * PAGE)
		ASSERT_EQ(0, kvt_pread_page(fa, off + PAGE, 1));
	ASSERT_EQ(-1, kvt_check(b, B_LEN, 0, 3));
	munmap(a, A_LEN);
	munmap(b, B_LEN);
	close(fa);
	close(fb);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_TRUE(kvt_state_is(0, "detached"));
}

/* The same, and the device still failing when the tier is detached. */
TEST_F_TIMEOUT(ioerr, detach_while_failing, 300)
{
	unsigned char *a;
	int fa, ret;

	if (!strcmp(variant->how, "flakey") && kvt_dm_missing("flakey"))
		SKIP(return, "no dm-flakey target");
	a = kvt_map_filled(&fa, A_LEN, 4);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	if (!strcmp(variant->how, "error")) {
		ASSERT_EQ(0, kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "error"));
	} else if (flakey("1 error_reads")) {
		ASSERT_EQ(0, flakey(""));
	}
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + 3 * PAGE));
	ASSERT_EQ(-EIO, kvt_pread_page(fa, 5 * PAGE, 4));
	munmap(a, A_LEN);
	close(fa);
	/* Detach writes the store's commit: it fails, the tier detaches anyway. */
	ret = kvt_tier_write(0, "backing_dev", "none");
	TH_LOG("detach on a failing device: %d", ret);
	ASSERT_TRUE(ret == 0 || ret == -EIO);
	ASSERT_TRUE(kvt_state_is(0, "detached"));
	ASSERT_EQ(0, linear());
}

FIXTURE(wr) {
	int dummy;
};

FIXTURE_SETUP(wr)
{
	const char *ns1 = kvt_ns("KVTIER_NS1"), *why;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	why = kvt_dm_missing("linear");
	if (why)
		SKIP(return, "%s", why);
	if (kvt_dm_missing("flakey"))
		SKIP(return, "no dm-flakey target");
	ASSERT_FALSE(kvt_loaded());
	ASSERT_FALSE(kvt_exists(DM_DEV));
	ASSERT_EQ(0, kvt_dm_linear(DM_NAME, ns1));
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", BUDGET_MB));
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
}

FIXTURE_TEARDOWN_PARENT(wr)
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

/*
 * Write-back fails: fsync gives EIO, sticky for that region only; the
 * pages stay dirty in memory with the bytes the process wrote.
 */
TEST_F_TIMEOUT(wr, write_errors_are_sticky, 300)
{
	struct kvtier_region_info ri;
	size_t alen = 2 * MiB;
	unsigned char *a, *b;
	int fa, fb, ret;

	b = kvt_map_filled(&fb, B_LEN, 11);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, fsync(fb));
	a = kvt_map_filled(&fa, alen, 10);
	ASSERT_NE(NULL, a);

	ASSERT_EQ(0, flakey("1 error_writes"));
	/* A write with RWF_DSYNC copies, then fails as fsync does. */
	{
		unsigned char *pg = aligned_alloc(PAGE, PAGE);
		struct iovec iov = { .iov_base = pg, .iov_len = PAGE };

		ASSERT_NE(NULL, pg);
		kvt_fill(pg, PAGE, alen - PAGE, 10);
		ASSERT_EQ(-1, pwritev2(fa, &iov, 1, alen - PAGE, RWF_DSYNC));
		ASSERT_EQ(EIO, errno);
		free(pg);
	}
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, kvt_region_info(fa, &ri));
	ASSERT_EQ(-EIO, ri.error);
	ASSERT_GT(ri.dirty, 0);
	TH_LOG("after the failed fsync: %llu of %zu bytes dirty, resident %llu",
	       (unsigned long long)ri.dirty, alen, (unsigned long long)ri.resident);
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);
	ASSERT_GT(kvt_stat(0, "io_errors"), 0);
	ASSERT_TRUE(kvt_state_is(0, "error"));
	/* What the process wrote is what it reads, through both paths. */
	ASSERT_EQ(-1, kvt_check(a, alen, 0, 10));
	ASSERT_EQ(0, kvt_pread_page(fa, alen - PAGE, 10));
	/* The other region is not marked and its bytes are intact. */
	ASSERT_EQ(0, kvt_region_info(fb, &ri));
	ASSERT_EQ(0, ri.error);
	ASSERT_EQ(-1, kvt_check(b, B_LEN, 0, 11));
	ret = fsync(fb);
	TH_LOG("fsync of the clean region while writes fail: %d (%s)", ret,
	       ret ? strerror(errno) : "ok");

	/* The device recovers: A stays errored (like a file system), B is fine. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, kvt_region_info(fb, &ri));
	if (!ri.error) {
		ASSERT_EQ(0, fsync(fb));
	}
	/* A's bytes did reach the device: drop them and read them back. */
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_region_info(fa, &ri));
	ASSERT_EQ(0, ri.dirty);
	ASSERT_EQ(-1, kvt_check(a, alen, 0, 10));
	ASSERT_EQ(-1, kvt_check(b, B_LEN, 0, 11));
	munmap(a, alen);
	munmap(b, B_LEN);
	close(fa);
	close(fb);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/*
 * Writes dropped without an error: fsync succeeds (it cannot know), and
 * the CRC32C recorded for each page catches the old bytes on read-back.
 */
TEST_F_TIMEOUT(wr, dropped_writes_caught_by_checksum, 300)
{
	size_t len = 1 * MiB, off;
	long long csum0;
	unsigned char *a;
	int fa, r, eio = 0, good = 0;

	a = kvt_map_filled(&fa, len, 20);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	kvt_fill(a, len, 0, 21);
	csum0 = kvt_stat(0, "checksum_errors");
	ASSERT_EQ(0, flakey("1 drop_writes"));
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, linear());
	for (off = 0; off < len; off += PAGE) {
		r = kvt_pread_page(fa, off, 21);
		ASSERT_NE(1, r);	/* never seed 20's (or zero) bytes */
		ASSERT_NE(2, r);
		eio += r == -EIO;
		good += r == 0;
	}
	TH_LOG("%d pages EIO, %d right (still resident), checksum_errors +%lld",
	       eio, good, kvt_stat(0, "checksum_errors") - csum0);
	ASSERT_GT(eio, 0);
	ASSERT_GE(kvt_stat(0, "checksum_errors") - csum0, eio);
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + 7 * PAGE));
	ASSERT_EQ(0, kvt_stat(0, "io_errors"));
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/*
 * The same stale pages found by the verify-ahead work: WILLNEED reads
 * them back with no reader waiting, the work checks every page of each
 * bio and marks the stale ones failed (checksum_errors grows before
 * anything is read); then every read of those is EIO, never the old bytes.
 */
TEST_F_TIMEOUT(wr, dropped_writes_caught_ahead, 300)
{
	size_t len = 1 * MiB, off;
	long long csum0, v0, ahead = 0;
	unsigned char *a;
	int fa, r, i, eio = 0;

	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	a = kvt_map_filled(&fa, len, 22);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	kvt_fill(a, len, 0, 23);
	ASSERT_EQ(0, flakey("1 drop_writes"));
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, linear());
	csum0 = kvt_stat(0, "checksum_errors");
	v0 = kvt_stat(0, "read_verified_ahead");
	ASSERT_EQ(0, posix_fadvise(fa, 0, len, POSIX_FADV_WILLNEED));
	for (i = 0; i < 500; i++) {
		ahead = kvt_stat(0, "read_verified_ahead") - v0;
		if (ahead >= (long long)(len / PAGE) / 2)
			break;
		usleep(10000);
	}
	TH_LOG("%lld pages verified ahead, checksum_errors +%lld before any read",
	       ahead, kvt_stat(0, "checksum_errors") - csum0);
	ASSERT_GE(ahead, (long long)(len / PAGE) / 2);
	ASSERT_GE(kvt_stat(0, "checksum_errors") - csum0, ahead);
	for (off = 0; off < len; off += PAGE) {
		r = kvt_pread_page(fa, off, 23);
		ASSERT_NE(1, r);	/* never seed 22's (or zero) bytes */
		ASSERT_NE(2, r);
		eio += r == -EIO;
	}
	ASSERT_GE(eio, ahead);
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + 7 * PAGE));
	ASSERT_EQ(0, kvt_stat(0, "io_errors"));
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/* Reads corrupted on the way (byte 1 of each bio): CRC32C, never wrong bytes. */
TEST_F_TIMEOUT(wr, corrupted_reads_caught_by_checksum, 300)
{
	size_t len = 1 * MiB, off;
	long long csum0, first = -1;
	unsigned char *a;
	int fa, r, eio = 0, good = 0;

	a = kvt_map_filled(&fa, len, 30);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	csum0 = kvt_stat(0, "checksum_errors");
	/* Byte 1 of every read bio becomes 0x5a (a pattern byte that is 0x5a stays). */
	ASSERT_EQ(0, flakey("5 corrupt_bio_byte 1 r 90 0"));
	for (off = 0; off < len; off += PAGE) {
		r = kvt_pread_page(fa, off, 30);
		ASSERT_NE(1, r);
		ASSERT_NE(2, r);
		if (r == -EIO && first < 0)
			first = off;
		eio += r == -EIO;
		good += r == 0;
	}
	TH_LOG("%d pages EIO, %d right, checksum_errors +%lld", eio, good,
	       kvt_stat(0, "checksum_errors") - csum0);
	ASSERT_GT(eio, 0);
	ASSERT_GE(kvt_stat(0, "checksum_errors") - csum0, eio);
	/* The failed page is read again (a bio starting at it): corrupt again. */
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + first));
	ASSERT_EQ(0, linear());
	ASSERT_EQ(-1, kvt_check(a, len, 0, 30));
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/*
 * Every page of [0, @len) of @fd read one by one while reads are corrupted
 * (byte 1 of each bio: readahead is off, so every page): some are EIO,
 * none comes back with wrong bytes. Returns the EIO count.
 */
static int corrupted_preads(struct __test_metadata *_metadata, int fd,
			    size_t len, unsigned long long seed)
{
	size_t off;
	int r, eio = 0;

	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, flakey("5 corrupt_bio_byte 1 r 90 0"));
	for (off = 0; off < len; off += PAGE) {
		r = kvt_pread_page(fd, off, seed);
		EXPECT_NE(1, r);
		EXPECT_NE(2, r);
		eio += r == -EIO;
	}
	EXPECT_EQ(0, linear());
	return eio;
}

/*
 * checksum 0 covers writes of unnamed regions: their pages are written
 * back without a CRC (writeback_unchecked), and read back right with the
 * knob on again, through the pool and by a direct pread (which leaves
 * them to the pool); rewritten with it on, they are checked again
 * (corrupted reads are EIO). A persistent region's pages get their CRC
 * with the knob off too: corrupted reads of them are EIO once it is on.
 */
TEST_F_TIMEOUT(wr, checksum_off_skips_crc_of_unnamed_writes, 300)
{
	size_t len = 1 * MiB, pages = len / PAGE;
	long long u0, csum0, d0, r0;
	unsigned char *a, *buf;
	int fa, fp, eio;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	u0 = kvt_stat(0, "writeback_unchecked");
	a = kvt_map_filled(&fa, len, 40);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ((long long)pages, kvt_stat(0, "writeback_unchecked") - u0);

	/* Knob on: read back whole, nothing to check them against. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	csum0 = kvt_stat(0, "checksum_errors");
	d0 = kvt_stat(0, "direct_read_pages");
	r0 = kvt_stat(0, "direct_read_retries");
	ASSERT_EQ((ssize_t)len, pread(fa, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 40));
	/* Left to the pool at once, not read directly and failed first. */
	ASSERT_EQ(0, kvt_stat(0, "direct_read_pages") - d0);
	ASSERT_EQ(0, kvt_stat(0, "direct_read_retries") - r0);
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(a, len, 0, 40));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors") - csum0);

	/* Rewritten with the knob on: CRCs again, corruption is EIO. */
	kvt_fill(a, len, 0, 41);
	u0 = kvt_stat(0, "writeback_unchecked");
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, kvt_stat(0, "writeback_unchecked") - u0);
	eio = corrupted_preads(_metadata, fa, len, 41);
	TH_LOG("unnamed, rewritten with checksum 1: %d of %zu pages EIO", eio, pages);
	ASSERT_GT(eio, 0);
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	d0 = kvt_stat(0, "direct_read_pages");
	ASSERT_EQ((ssize_t)len, pread(fa, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 41));
	ASSERT_EQ((long long)pages, kvt_stat(0, "direct_read_pages") - d0);
	munmap(a, len);
	close(fa);

	/* A persistent region written with the knob off keeps its CRCs. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	fp = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fp, 0);
	ASSERT_EQ(0, kvt_bind_name(fp, "csum-off", len,
				   KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, 0600));
	kvt_fill(buf, len, 0, 42);
	u0 = kvt_stat(0, "writeback_unchecked");
	ASSERT_EQ((ssize_t)len, pwrite(fp, buf, len, 0));
	ASSERT_EQ(0, fsync(fp));
	ASSERT_EQ(0, kvt_stat(0, "writeback_unchecked") - u0);
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	eio = corrupted_preads(_metadata, fp, len, 42);
	TH_LOG("persistent, written with checksum 0: %d of %zu pages EIO", eio, pages);
	ASSERT_GT(eio, 0);
	ASSERT_EQ(0, posix_fadvise(fp, 0, 0, POSIX_FADV_DONTNEED));
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(fp, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 42));
	ASSERT_EQ(0, kvt_unlink_name(fp, "csum-off"));
	close(fp);
	munmap(buf, len);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/* One aio read of @len at @off of @fd into @buf: its result, or -errno. */
static long long aio_pread(int fd, void *buf, size_t len, off_t off)
{
	long long res;
	int ret = kvt_aio_preads(fd, buf, len, 1, off, &res);

	return ret ? ret : res;
}

/*
 * The same corruption under a direct read (a page-aligned pread into
 * page-aligned memory, read straight into it): the CRC32C checked on the
 * caller's buffer fails, the run is read again through the pool, which
 * fails it again: EIO, never the bytes as read. With the device reading
 * right again, the same pread gets every page directly.
 */
TEST_F_TIMEOUT(wr, direct_read_mismatch_is_eio, 300)
{
	size_t len = 1 * MiB;
	long long csum0, r0, d0, a0;
	unsigned char *a, *buf;
	int fa;

	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	a = kvt_map_filled(&fa, len, 31);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	csum0 = kvt_stat(0, "checksum_errors");
	r0 = kvt_stat(0, "direct_read_retries");
	ASSERT_EQ(0, flakey("5 corrupt_bio_byte 1 r 90 0"));
	ASSERT_EQ(-1, pread(fa, buf, len, 0));
	ASSERT_EQ(EIO, errno);
	TH_LOG("direct_read_retries +%lld, checksum_errors +%lld",
	       kvt_stat(0, "direct_read_retries") - r0,
	       kvt_stat(0, "checksum_errors") - csum0);
	ASSERT_GT(kvt_stat(0, "direct_read_retries") - r0, 0);
	ASSERT_GT(kvt_stat(0, "checksum_errors") - csum0, 0);
	ASSERT_EQ(0, kvt_stat(0, "io_errors"));
	/* Asynchronously (aio): the end work reads it through the pool: EIO. */
	a0 = kvt_stat(0, "direct_read_async");
	ASSERT_EQ(-EIO, aio_pread(fa, buf, 256 * KiB, 0));
	ASSERT_EQ(1, kvt_stat(0, "direct_read_async") - a0);

	ASSERT_EQ(0, linear());
	/* Whatever the pool read ahead of the failures goes too. */
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	d0 = kvt_stat(0, "direct_read_pages");
	ASSERT_EQ((ssize_t)len, pread(fa, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 31));
	ASSERT_EQ((long long)(len / PAGE), kvt_stat(0, "direct_read_pages") - d0);
	/* And asynchronously, every byte. */
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	memset(buf, 0, len);
	ASSERT_EQ((long long)(256 * KiB), aio_pread(fa, buf, 256 * KiB, 0));
	ASSERT_EQ(-1, kvt_check(buf, 256 * KiB, 0, 31));
	munmap(buf, len);
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/* A slow device: dm-delay adds DELAY_MS to every bio. */
#define DELAY_MS	100
#define INFLIGHT_KB	128
#define BATCH_KB	64

struct sampler {
	volatile int stop;
	long long max, samples, nonzero;
};

static void *sample_inflight(void *arg)
{
	struct sampler *s = arg;
	long long v;

	while (!s->stop) {
		v = kvt_stat(0, "inflight_bytes");
		if (v > s->max)
			s->max = v;
		s->nonzero += v > 0;
		s->samples++;
		usleep(2000);
	}
	return NULL;
}

/*
 * Background write-back meets a failing device: its writes fail, the pages
 * stay dirty with the bytes the process wrote, and it pauses. Once the
 * device works again it comes back by itself, with nothing dirtied,
 * charged or unpinned to wake it, and cleans down to its goal. 3 MiB of
 * the 4 MiB budget stays under watermark_high, so nothing else writes.
 */
TEST_F_TIMEOUT(wr, background_writeback_retries_after_errors, 300)
{
	size_t len = 3 * MiB, pages = len / PAGE;
	long long bg0, wbp0, errs0, n;
	struct kvtier_region_info ri;
	unsigned char *a;
	int fa;

	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	a = kvt_map_filled(&fa, len, 50);
	ASSERT_NE(NULL, a);
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	bg0 = kvt_stat(0, "writeback_background");
	wbp0 = kvt_stat(0, "writeback_pages");
	errs0 = kvt_stat(0, "io_errors");
	ASSERT_EQ(0, flakey("1 error_writes"));

	/* 25 % (256 pages): the worker wakes and tries to write 640 pages. */
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 25));
	ASSERT_GT(kvt_wait_stat(0, "io_errors", errs0, 1, 10), 0);
	/*
	 * It stopped at the error (the batch in flight beside it may fail
	 * too: a bio or two each) and pauses a second, instead of going on
	 * through its ten batches of 64 pages, each failing.
	 */
	usleep(300000);
	ASSERT_LE(kvt_stat(0, "io_errors") - errs0, 4);
	ASSERT_EQ(0, kvt_stat(0, "writeback_background") - bg0);
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(-1, kvt_check(a, len, 0, 50));
	ASSERT_EQ(0, kvt_pread_page(fa, len - PAGE, 50));
	ASSERT_EQ(0, kvt_region_info(fa, &ri));
	ASSERT_EQ(-EIO, ri.error);

	/*
	 * The device is back. The worker's pause has doubled at most twice
	 * (1, 2, 4 s) while the checks above ran: it is back within seconds.
	 */
	ASSERT_EQ(0, linear());
	n = kvt_wait_stat(0, "writeback_background", bg0, pages - 128, 30);
	TH_LOG("after the device came back: %lld pages cleaned by the worker, %lld I/O errors before",
	       n, kvt_stat(0, "io_errors") - errs0);
	ASSERT_EQ((long long)(pages - 128), n);
	usleep(300000);
	ASSERT_EQ(n, kvt_stat(0, "writeback_background") - bg0);
	ASSERT_EQ(128, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ((long long)len, kvt_tier_num(0, "resident"));

	/* The region keeps its error (sticky); the bytes are on the device. */
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_GE(kvt_stat(0, "writeback_pages") - wbp0, (long long)pages);
	ASSERT_EQ(-1, kvt_check(a, len, 0, 50));
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/*
 * A direct write (checksum off, an unnamed region, aligned) whose bios
 * fail loses no byte: the pool writes the pages again and holds them
 * dirty, the region's write-back error is sticky, and O_DIRECT returns it
 * at once. Over pages on the namespace and never written alike, and
 * through io_uring, where the completion writes them through the pool;
 * once the device is back, every byte reaches it.
 */
TEST_F_TIMEOUT(wr, direct_write_errors_keep_the_bytes, 300)
{
	size_t len = MiB, pages = len / PAGE;
	long long errs0, retries0, d0;
	unsigned char *a, *buf;
	int fa, fb, fc, fl;

	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	a = kvt_map_filled(&fa, len, 60);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	buf = aligned_alloc(PAGE, len);
	ASSERT_NE(NULL, buf);
	errs0 = kvt_stat(0, "io_errors");
	retries0 = kvt_stat(0, "direct_write_retries");
	d0 = kvt_stat(0, "direct_write_pages");

	/* Over written pages, a plain pwrite: it succeeds, the pages dirty. */
	ASSERT_EQ(0, flakey("1 error_writes"));
	kvt_fill(buf, len, 0, 61);
	ASSERT_EQ((ssize_t)len, pwrite(fa, buf, len, 0));
	TH_LOG("direct write over a failing device: %lld pages tried, %lld kept, %lld I/O errors",
	       kvt_stat(0, "direct_write_retries") - retries0,
	       kvt_stat(0, "direct_write_pages") - d0,
	       kvt_stat(0, "io_errors") - errs0);
	ASSERT_GT(kvt_stat(0, "io_errors"), errs0);
	ASSERT_GE(kvt_stat(0, "direct_write_retries") - retries0, (long long)pages);
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(-1, kvt_check(a, len, 0, 61));
	ASSERT_EQ(0, kvt_pread_page(fa, len - PAGE, 61));
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);

	/* Never written, O_DIRECT: the write-back's EIO at once. */
	fb = kvt_tier_open(0, O_RDWR | O_DIRECT);
	ASSERT_GE(fb, 0);
	{
		struct kvtier_region_create rc = { .size = len };

		ASSERT_EQ(0, ioctl(fb, KVTIER_IOC_REGION_CREATE, &rc));
	}
	kvt_fill(buf, len, 0, 62);
	ASSERT_EQ(-1, pwrite(fb, buf, len, 0));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_EQ(0, kvt_pread_page(fb, 0, 62));

	/*
	 * Through io_uring, asynchronous: the completion writes the pages
	 * through the pool, and the requests succeed.
	 */
	fc = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fc, 0);
	{
		struct kvtier_region_create rc = { .size = len };
		long long a0 = kvt_stat(0, "direct_write_async"), res[4];
		int i;

		ASSERT_EQ(0, ioctl(fc, KVTIER_IOC_REGION_CREATE, &rc));
		kvt_fill(buf, len, 0, 64);
		ASSERT_EQ(0, kvt_uring_pwrites(fc, buf, len / 4, 4, 0, res, NULL));
		for (i = 0; i < 4; i++)
			ASSERT_EQ((long long)(len / 4), res[i]);
		ASSERT_EQ(4, kvt_stat(0, "direct_write_async") - a0);
	}
	ASSERT_EQ(0, kvt_pread_page(fc, len - PAGE, 64));
	ASSERT_EQ(-1, fsync(fc));
	ASSERT_EQ(EIO, errno);

	/* The device is back: the pool's copies reach it, byte for byte. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ(-1, fsync(fa));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(fb, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(fc, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(-1, kvt_check(a, len, 0, 61));
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(fb, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 62));
	ASSERT_EQ((ssize_t)len, pread(fc, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 64));
	close(fc);

	/* And a direct write works again, on both. */
	fl = fcntl(fb, F_GETFL);
	ASSERT_EQ(0, fcntl(fb, F_SETFL, fl & ~O_DIRECT));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(buf, len, 0, 63);
	ASSERT_EQ((ssize_t)len, pwrite(fa, buf, len, 0));
	ASSERT_EQ((ssize_t)len, pwrite(fb, buf, len, 0));
	ASSERT_EQ((long long)(2 * pages), kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(-1, kvt_check(a, len, 0, 63));
	ASSERT_EQ(0, kvt_pread_page(fb, len - PAGE, 63));
	free(buf);
	munmap(a, len);
	close(fa);
	close(fb);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

TEST_F_TIMEOUT(wr, slow_device_bounded_inflight, 300)
{
	size_t len = 8 * MiB, off;
	struct sampler s = { 0 };
	pthread_t th;
	unsigned char *a;
	double t, slowest = 0, fastest = 1e9;
	long long wb0, wb;
	int fa, n = 0;

	if (kvt_dm_missing("delay"))
		SKIP(return, "no dm-delay target");
	ASSERT_EQ(0, kvt_knob(0, "max_inflight_kb", INFLIGHT_KB));
	ASSERT_EQ(0, kvt_knob(0, "writeback_batch_kb", BATCH_KB));
	/*
	 * Reclaim's and fsync's write-back only: the faults below must find
	 * the first half evicted, and a page the background worker held
	 * locked across a 100 ms write when reclaim scanned it was moved to
	 * the LRU's hot end and could stay (its own tests are in
	 * kvtier_region_test).
	 */
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	ASSERT_EQ(0, kvt_dm_table(DM_NAME, kvt_ns("KVTIER_NS1"), "delay %s 0 %d", kvt_ns("KVTIER_NS1"), DELAY_MS));
	ASSERT_EQ(0, pthread_create(&th, NULL, sample_inflight, &s));

	/* Twice the budget through the mapping: write-back under the delay. */
	wb0 = kvt_stat(0, "writeback_pages");
	a = kvt_map_filled(&fa, len, 40);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	/*
	 * Each page written once, though reclaim and fsync's range pass
	 * share the pages: a page kept dirty because a transient reference
	 * looked like GUP's was written twice (hundreds of pages, before).
	 */
	wb = kvt_stat(0, "writeback_pages") - wb0;
	TH_LOG("%lld pages written back for %zu", wb, len / PAGE);
	ASSERT_LE(wb, (long long)(len / PAGE + len / PAGE / 64));
	/* Faults of pages that were evicted wait for the slow reads. */
	for (off = 0; off < len / 2; off += 61 * PAGE, n++) {
		t = now_ms();
		ASSERT_EQ(-1, kvt_check(a + off, PAGE, off, 40));
		t = now_ms() - t;
		slowest = t > slowest ? t : slowest;
		fastest = t < fastest ? t : fastest;
	}
	s.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%d faults of evicted pages: %.0f to %.0f ms; inflight_bytes max %lld (%lld of %lld samples > 0), cap %d KiB + one %d KiB bio",
	       n, fastest, slowest, s.max, s.nonzero, s.samples, INFLIGHT_KB, BATCH_KB);
	ASSERT_GE(fastest, DELAY_MS * 0.9);
	ASSERT_GT(s.nonzero, 0);
	ASSERT_LE(s.max, (INFLIGHT_KB + BATCH_KB) * 1024LL);
	ASSERT_EQ(0, kvt_stat(0, "io_errors"));

	/* No delay: the whole region, right. */
	ASSERT_EQ(0, linear());
	ASSERT_EQ(-1, kvt_check(a, len, 0, 40));
	ASSERT_EQ(0, fsync(fa));
	munmap(a, len);
	close(fa);
	ASSERT_TRUE(kvt_state_is(0, "attached"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

TEST_HARNESS_MAIN
