// SPDX-License-Identifier: GPL-2.0
/*
 * I/O errors at chosen sectors of the tier's namespace, injected below
 * the guest by QEMU's blkdebug driver on the emulated NVMe drive
 * (tests/vm/run.sh --blkdebug N:CONF; tests/vm/blkdebug-ioerr.conf).
 * Unlike the device-mapper cases of kvtier_ioerr_test.c, where the whole
 * device fails, only one sector fails here, every time it is read (or
 * written), and everything around it works:
 *
 * - read_error_sector: a 64 MiB region is written and dropped from the
 *   pool; the one page whose slot covers the bad read sector gives EIO to
 *   pread and SIGBUS to the faulting access, every time, never zeros or
 *   stale bytes; every other page reads right, also the ones whose
 *   readahead bio covered the bad sector (the page is read again alone);
 *   the error is counted, logged once (rate-limited) and kept in sysfs;
 *   another region works; the tier detaches.
 * - write_error_sector: a second 64 MiB region's write-back covers the bad
 *   write sector: fsync returns EIO, and again on the next fsync (sticky
 *   for that region: REGION_INFO error); the pages of the failed bio stay
 *   dirty in memory until a write-back to fresh slots succeeds; every
 *   byte reads back right, also after DONTNEED; the first region is not
 *   marked and syncs, a new region works; the tier detaches once the
 *   files are closed.
 *
 * The rig exports KVTIER_BLKDEBUG_CONF (the blkdebug config) and
 * KVTIER_BLKDEBUG_NVME (the drive's index N: KVTIER_NSN) into the guest;
 * without them the tests skip. The sectors come from the config's
 * [inject-error] sections (iotype "read" and "write"). The layout they
 * assume: a fresh format gives the first region's pages the first data
 * slots in order, so a 64 MiB region covers the 64 MiB after the metadata
 * and the next one the 64 MiB after that; the config puts the read sector
 * at 32 MiB and the write sector at 96 MiB, inside those for any metadata
 * area under 32 MiB (a 512 MiB namespace has about 4 MiB).
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define REG_LEN		(64 * MiB)
#define SMALL_LEN	(1 * MiB)

/* The bad read and write sectors of the blkdebug config; 0 or -1. */
static int bd_sectors(long long *rd, long long *wr)
{
	const char *conf = getenv("KVTIER_BLKDEBUG_CONF");
	char line[256], key[64], val[64], iotype[64] = "";
	long long sector = -1;
	FILE *f;

	*rd = *wr = -1;
	f = conf ? fopen(conf, "re") : NULL;
	if (!f)
		return -1;
	for (;;) {
		char *l = fgets(line, sizeof(line), f);

		/* A section ends at the next one or at the end of the file. */
		if (!l || line[0] == '[') {
			if (!strcmp(iotype, "read"))
				*rd = sector;
			else if (!strcmp(iotype, "write"))
				*wr = sector;
			iotype[0] = '\0';
			sector = -1;
			if (!l)
				break;
			continue;
		}
		if (sscanf(line, " %63[a-z_-] = \"%63[^\"]\"", key, val) != 2)
			continue;
		if (!strcmp(key, "iotype"))
			snprintf(iotype, sizeof(iotype), "%s", val);
		else if (!strcmp(key, "sector"))
			sector = strtoll(val, NULL, 0);
	}
	fclose(f);
	return *rd > 0 && *wr > 0 ? 0 : -1;
}

static const char *bd_ns(void)
{
	const char *idx = getenv("KVTIER_BLKDEBUG_NVME");
	char var[32];

	if (!idx)
		return NULL;
	snprintf(var, sizeof(var), "KVTIER_NS%s", idx);
	return kvt_ns(var);
}

/* A small region written, synced, dropped and read back: the tier works. */
static int small_roundtrip(unsigned long long seed)
{
	unsigned char buf[PAGE];
	unsigned long long off;
	int fd, ret = 0;

	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, KVTIER_IOC_REGION_CREATE,
		  &(struct kvtier_region_create){ .size = SMALL_LEN })) {
		ret = -errno;
		goto out;
	}
	for (off = 0; off < SMALL_LEN && !ret; off += PAGE) {
		kvt_fill(buf, PAGE, off, seed);
		if (pwrite(fd, buf, PAGE, off) != (ssize_t)PAGE)
			ret = -EIO;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (!ret)
		ret = -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (off = 0; off < SMALL_LEN && !ret; off += PAGE)
		ret = kvt_pread_page(fd, off, seed);
out:
	close(fd);
	return ret;
}

FIXTURE(bd) {
	long long rd, wr;
};

FIXTURE_SETUP(bd)
{
	const char *ns = bd_ns();

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!getenv("KVTIER_BLKDEBUG_CONF"))
		SKIP(return, "no blkdebug drive (tests/vm/run.sh --blkdebug; make check runs one)");
	ASSERT_EQ(0, bd_sectors(&self->rd, &self->wr));
	ASSERT_NE(NULL, ns);
	TH_LOG("%s: read error at sector %lld, write error at sector %lld",
	       ns, self->rd, self->wr);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", ns));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
	/* Readahead stays on (the default): a failed bio spans many pages. */
}

FIXTURE_TEARDOWN_PARENT(bd)
{
	if (!kvt_loaded())
		return;
	kvt_tier_write(0, "backing_dev", "none");
	EXPECT_TRUE(kvt_state_is(0, "detached"));
	EXPECT_EQ(0, kvt_stat(0, "resident_pages"));
	EXPECT_EQ(0, kvt_unload());
}

TEST_F_TIMEOUT(bd, read_error_sector, 300)
{
	long long errs0, bad = -1, off;
	int fa, r, eio = 0, lines, kfd;
	unsigned char *a;
	char buf[32];

	a = kvt_map_filled(&fa, REG_LEN, 1);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_stat(0, "io_errors"));
	errs0 = kvt_stat(0, "io_errors");
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);

	/* Every page through pread: one EIO, the rest right. */
	for (off = 0; off < (long long)REG_LEN; off += PAGE) {
		r = kvt_pread_page(fa, off, 1);
		ASSERT_NE(1, r);	/* never zero or stale bytes */
		ASSERT_NE(2, r);
		if (r) {
			ASSERT_EQ(-EIO, r);
			TH_LOG("EIO at offset %lld", off);
			if (bad < 0)
				bad = off;
			eio++;
		}
	}
	ASSERT_EQ(1, eio);
	/* Logged, rate-limited: not one line per failed bio. */
	lines = kvt_kmsg_scan(kfd, "kvtier0: read error");
	TH_LOG("pread pass: %lld failed bios, %d 'read error' lines",
	       kvt_stat(0, "io_errors") - errs0, lines);
	ASSERT_GE(lines, 1);
	ASSERT_LE(lines, 10 + 1);
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));

	/* The mapping: SIGBUS on that page, every time; its neighbours read. */
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + bad));
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + bad + 100));
	if (bad >= (long long)PAGE)
		ASSERT_EQ(-1, kvt_check(a + bad - PAGE, PAGE, bad - PAGE, 1));
	if (bad + PAGE < REG_LEN)
		ASSERT_EQ(-1, kvt_check(a + bad + PAGE, PAGE, bad + PAGE, 1));
	ASSERT_EQ(1, kvt_touch_or_sigbus(a + bad));
	ASSERT_EQ(-EIO, kvt_pread_page(fa, bad, 1));
	/* A whole pass of the mapping, skipping only that page. */
	ASSERT_EQ(0, posix_fadvise(fa, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(a, bad, 0, 1));
	ASSERT_EQ(-1, kvt_check(a + bad + PAGE, REG_LEN - bad - PAGE, bad + PAGE, 1));

	ASSERT_GT(kvt_stat(0, "io_errors"), errs0);
	ASSERT_TRUE(kvt_state_is(0, "error"));
	/* The block layer's status: EIO, or ENODATA for NVMe's medium error. */
	ASSERT_EQ(0, kvt_tier_read(0, "error", buf, sizeof(buf)));
	TH_LOG("tier error %s", buf);
	ASSERT_TRUE(!strcmp(buf, "-5") || !strcmp(buf, "-61"));
	lines += kvt_kmsg_scan(kfd, "kvtier0: read error");
	close(kfd);
	TH_LOG("in all: %lld failed bios, %d 'read error' lines",
	       kvt_stat(0, "io_errors") - errs0, lines);

	/* Other regions keep working. */
	ASSERT_EQ(0, small_roundtrip(2));
	munmap(a, REG_LEN);
	close(fa);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_TRUE(kvt_state_is(0, "detached"));
}

TEST_F_TIMEOUT(bd, write_error_sector, 300)
{
	struct kvtier_region_info ri;
	unsigned char *a, *b;
	int fa, fb, lines, kfd;

	a = kvt_map_filled(&fa, REG_LEN, 10);
	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, fsync(fa));
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	b = kvt_map_filled(&fb, REG_LEN, 11);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(-1, fsync(fb));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, kvt_region_info(fb, &ri));
	ASSERT_EQ(-EIO, ri.error);
	TH_LOG("after the failed fsync: %llu bytes dirty, %llu resident",
	       (unsigned long long)ri.dirty, (unsigned long long)ri.resident);
	/*
	 * The pages of the failed bio stayed dirty; the next write-back
	 * gives them fresh slots (the failed ones are freed), so the retry
	 * may well succeed. The error stays sticky either way.
	 */
	ASSERT_EQ(-1, fsync(fb));
	ASSERT_EQ(EIO, errno);
	ASSERT_TRUE(kvt_state_is(0, "error"));
	/* Dropped from memory (or kept, if still unwritten): the bytes stay. */
	posix_fadvise(fb, 0, 0, POSIX_FADV_DONTNEED);
	ASSERT_EQ(0, kvt_region_info(fb, &ri));
	TH_LOG("after a second fsync and DONTNEED: %llu bytes dirty, %llu resident",
	       (unsigned long long)ri.dirty, (unsigned long long)ri.resident);
	ASSERT_EQ(-1, kvt_check(b, REG_LEN, 0, 11));
	ASSERT_EQ(0, kvt_pread_page(fb, REG_LEN - PAGE, 11));
	lines = kvt_kmsg_scan(kfd, "kvtier0: write error");
	close(kfd);
	TH_LOG("%d 'write error' lines, io_errors %lld", lines, kvt_stat(0, "io_errors"));
	ASSERT_GE(lines, 1);
	ASSERT_LE(lines, 10 + 1);

	/* The first region is not marked and still syncs; a new one works. */
	ASSERT_EQ(0, kvt_region_info(fa, &ri));
	ASSERT_EQ(0, ri.error);
	kvt_fill(a, SMALL_LEN, 0, 12);
	ASSERT_EQ(0, fsync(fa));
	ASSERT_EQ(-1, kvt_check(a, SMALL_LEN, 0, 12));
	ASSERT_EQ(0, small_roundtrip(13));

	munmap(a, REG_LEN);
	munmap(b, REG_LEN);
	close(fa);
	close(fb);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_TRUE(kvt_state_is(0, "detached"));
}

TEST_HARNESS_MAIN
