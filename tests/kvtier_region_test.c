// SPDX-License-Identifier: GPL-2.0
/*
 * Data path tests: regions mapped from /dev/kvtier0 over a small host
 * budget, so pages are written back to and read from the namespace, and
 * every byte is checked on the way back.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <linux/loop.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define BUDGET_MB	4

static void dump_stats(struct __test_metadata *_metadata, int id)
{
	char path[128], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvtier/kvtier%d/stats", id);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		TH_LOG("kvtier%d %s", id, line);
	}
	fclose(f);
}

/* Every page, slot and pin went back with the last file; unload. */
static void check_empty_and_unload(struct __test_metadata *_metadata)
{
	if (!__test_passed(_metadata))
		dump_stats(_metadata, 0);
	if (!kvt_loaded())
		return;
	EXPECT_EQ(0, kvt_tier_num(0, "resident"));
	EXPECT_EQ(0, kvt_tier_num(0, "used"));
	EXPECT_EQ(0, kvt_tier_num(0, "pinned"));
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_unload());
}

/* A loaded module, tier 0 attached to KVTIER_NS0 with a 4 MiB budget. */
KVT_TIER_FIXTURE("num_tiers=2", BUDGET_MB, , ,
		 check_empty_and_unload(_metadata));

/* Integrity through the mapping at 1x, 2x and 8x the budget. */
FIXTURE(integrity) {
	int fd;
};

FIXTURE_VARIANT(integrity) {
	unsigned int times_budget;
};

FIXTURE_VARIANT_ADD(integrity, x1) { .times_budget = 1 };
FIXTURE_VARIANT_ADD(integrity, x2) { .times_budget = 2 };
FIXTURE_VARIANT_ADD(integrity, x8) { .times_budget = 8 };

FIXTURE_SETUP(integrity)
{
	const char *why = kvt_missing();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	self->fd = kvt_start("num_tiers=1", BUDGET_MB);
	ASSERT_GE(self->fd, 0);
}

FIXTURE_TEARDOWN_PARENT(integrity)
{
	check_empty_and_unload(_metadata);
}

TEST_F_TIMEOUT(integrity, mapping_round_trip, 300)
{
	size_t len = variant->times_budget * BUDGET_MB * MiB;
	size_t pages = len / PAGE, i;
	unsigned char *p;
	size_t *order;

	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);

	/* A fresh region reads as zero. */
	for (i = 0; i < len; i += PAGE)
		ASSERT_EQ(0, p[i]);
	kvt_fill(p, len, 0, 11);
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)(BUDGET_MB * MiB));

	/* Sequential read-back. */
	ASSERT_EQ(-1, kvt_check(p, len, 0, 11));
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)(BUDGET_MB * MiB));

	/* Random page order. */
	order = malloc(pages * sizeof(*order));
	ASSERT_NE(NULL, order);
	for (i = 0; i < pages; i++)
		order[i] = i;
	srand(7);
	for (i = pages - 1; i > 0; i--) {
		size_t j = (size_t)rand() % (i + 1), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < pages; i++)
		ASSERT_EQ(-1, kvt_check(p + order[i] * PAGE, PAGE,
					order[i] * PAGE, 11));
	free(order);

	if (variant->times_budget > 1) {
		/* The bytes really went through the namespace. */
		EXPECT_GT(kvt_stat(0, "writeback_pages"), 0);
		EXPECT_GT(kvt_stat(0, "faults_major"), 0);
		EXPECT_GT(kvt_stat(0, "read_pages"), 0);
	}
	ASSERT_EQ(0, munmap(p, len));
}

TEST_F_TIMEOUT(integrity, pread_pwrite_round_trip, 300)
{
	size_t len = variant->times_budget * BUDGET_MB * MiB;
	struct kvtier_region_create rc = { .size = len };
	size_t chunk = 3 * PAGE + 8, off;
	unsigned char *buf, *map;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = malloc(chunk);
	ASSERT_NE(NULL, buf);
	/* Chunks that straddle pages: offsets are 8-byte aligned, not page. */
	for (off = 0; off < len; off += chunk) {
		size_t n = off + chunk > len ? len - off : chunk;

		kvt_fill(buf, n, off, 23);
		ASSERT_EQ((ssize_t)n, pwrite(self->fd, buf, n, off));
	}
	for (off = 0; off < len; off += chunk) {
		size_t n = off + chunk > len ? len - off : chunk;

		memset(buf, 0, chunk);
		ASSERT_EQ((ssize_t)n, pread(self->fd, buf, n, off));
		ASSERT_EQ(-1, kvt_check(buf, n, off, 23));
	}
	/* The mapping sees what pwrite wrote, and pread what it writes. */
	map = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(-1, kvt_check(map, len, 0, 23));
	kvt_fill(map + PAGE, PAGE, PAGE, 24);
	ASSERT_EQ((ssize_t)PAGE, pread(self->fd, buf, PAGE, PAGE));
	ASSERT_EQ(-1, kvt_check(buf, PAGE, PAGE, 24));
	/* At the end: EOF for reads, EFBIG for writes. */
	ASSERT_EQ(0, pread(self->fd, buf, 1, len));
	ASSERT_EQ(-1, pwrite(self->fd, buf, 1, len));
	ASSERT_EQ(EFBIG, errno);
	munmap(map, len);
	free(buf);
}

/* 4 processes x 8 threads write disjoint stripes and read overlapping ones. */
struct storm {
	unsigned char *p;
	size_t len;
	unsigned int id, nr;
	int bad;
};

static void *storm_thread(void *arg)
{
	struct storm *s = arg;
	size_t pages = s->len / PAGE, i;

	for (i = s->id; i < pages; i += s->nr)
		kvt_fill(s->p + i * PAGE, PAGE, i * PAGE, 31);
	/* Touch everybody's pages while they are being written. */
	for (i = (s->id * 97) % pages; i < pages; i += 7)
		(void)*(volatile unsigned char *)(s->p + i * PAGE);
	return NULL;
}

static void *verify_thread(void *arg)
{
	struct storm *s = arg;

	s->bad = kvt_check(s->p, s->len, 0, 31) != -1;
	return NULL;
}

static int storm_process(unsigned char *p, size_t len, unsigned int proc,
			 void *(*fn)(void *))
{
	struct storm st[8];
	pthread_t th[8];
	int t, bad = 0;

	for (t = 0; t < 8; t++) {
		st[t] = (struct storm){ .p = p, .len = len,
					.id = proc * 8 + t, .nr = 32 };
		if (pthread_create(&th[t], NULL, fn, &st[t]))
			return 1;
	}
	for (t = 0; t < 8; t++) {
		pthread_join(th[t], NULL);
		bad |= st[t].bad;
	}
	return bad;
}

static int run_processes(unsigned char *p, size_t len, void *(*fn)(void *))
{
	pid_t pids[4];
	int i, status, bad = 0;

	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(storm_process(p, len, i, fn));
	}
	for (i = 0; i < 4; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i] ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	}
	return bad;
}

TEST_F_TIMEOUT(tier, concurrent_storm, 300)
{
	size_t len = 4 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, run_processes(p, len, storm_thread));
	ASSERT_EQ(0, run_processes(p, len, verify_thread));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 31));
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)(BUDGET_MB * MiB));
	munmap(p, len);
}

/* Sampled while a child writes 4x the budget: never above the budget. */
TEST_F_TIMEOUT(tier, budget_is_a_ceiling, 300)
{
	size_t len = 4 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long max = 0, r;
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		kvt_fill(p, len, 0, 41);
		_exit(kvt_check(p, len, 0, 41) != -1);
	}
	while (waitpid(pid, &status, WNOHANG) == 0) {
		r = kvt_tier_num(0, "resident");
		if (r > max)
			max = r;
	}
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	TH_LOG("max resident sampled: %lld bytes", max);
	ASSERT_GT(max, 0);
	ASSERT_LE(max, (long long)(BUDGET_MB * MiB));

	/* Lowering the budget live evicts down to it; nothing is lost. */
	ASSERT_EQ(-1, kvt_check(p, BUDGET_MB * MiB, 0, 41));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 1));
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)MiB);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 41));
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)MiB);
	munmap(p, len);
}

/* Pages read back and not written again are dropped without write I/O. */
TEST_F_TIMEOUT(tier, clean_pages_evict_without_io, 300)
{
	size_t len = 2 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long wb, clean;

	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 51);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	wb = kvt_stat(0, "writeback_pages");
	clean = kvt_stat(0, "evictions_clean");
	ASSERT_GE(wb, (long long)(len / PAGE));

	/* Two full read passes at 2x the budget: everything is evicted. */
	ASSERT_EQ(-1, kvt_check(p, len, 0, 51));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 51));
	ASSERT_EQ(wb, kvt_stat(0, "writeback_pages"));
	ASSERT_GT(kvt_stat(0, "evictions_clean"), clean);
	ASSERT_EQ(0, kvt_stat(0, "evictions_dirty") -
		  kvt_stat(0, "evictions_dirty"));

	/* DONTNEED drops the rest, still without writing. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(wb, kvt_stat(0, "writeback_pages"));
	/* WILLNEED brings pages back asynchronously. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, MiB, POSIX_FADV_WILLNEED));
	for (int i = 0; i < 500 && kvt_stat(0, "prefetch_pages") < 256; i++)
		usleep(10000);
	ASSERT_GE(kvt_stat(0, "prefetch_pages"), 256);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 51));

	/* madvise(MADV_WILLNEED) on the mapping reaches the same prefetch. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	clean = kvt_stat(0, "prefetch_pages");
	ASSERT_EQ(0, madvise(p + MiB, MiB, MADV_WILLNEED));
	for (int i = 0; i < 500 && kvt_stat(0, "prefetch_pages") < clean + 256; i++)
		usleep(10000);
	ASSERT_GE(kvt_stat(0, "prefetch_pages"), clean + 256);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 51));
	munmap(p, len);
}

/* Pages of @fd: pattern @seed (by offset) in [@off, @off + @len)? */
static int region_has(int fd, size_t off, size_t len, unsigned long long base,
		      unsigned long long seed)
{
	unsigned char *buf = malloc(len);
	int ok;

	if (!buf)
		return 0;
	ok = pread(fd, buf, len, off) == (ssize_t)len &&
	     kvt_check(buf, len, base, seed) == -1;
	free(buf);
	return ok;
}

/*
 * pwrite of whole pages over pages that are only on the namespace does not
 * read them back (read_pages does not move); a partial page still merges
 * with the bytes on the namespace. A source that faults part way is a
 * short write (EFAULT for nothing at all), with the rest untouched: zero
 * on a page never written, the old bytes on one that was.
 */
TEST_F_TIMEOUT(tier, pwrite_whole_pages_are_not_read_back, 300)
{
	size_t len = 2 * MiB;
	struct kvtier_region_create rc = { .size = len };
	unsigned char *buf, *two;
	long long reads;
	size_t off;
	int fd2;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	kvt_fill(buf, len, 0, 61);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));

	/* The first MiB whole, in 64 KiB writes: nothing is read. */
	reads = kvt_stat(0, "read_pages");
	for (off = 0; off < MiB; off += 64 * 1024) {
		kvt_fill(buf, 64 * 1024, off, 62);
		ASSERT_EQ(64 * 1024, pwrite(self->fd, buf, 64 * 1024, off));
	}
	ASSERT_EQ(reads, kvt_stat(0, "read_pages"));
	/* 200 bytes inside an evicted page: that page is read back. */
	kvt_fill(buf, 200, MiB + 104, 63);
	ASSERT_EQ(200, pwrite(self->fd, buf, 200, MiB + 104));
	ASSERT_LT(reads, kvt_stat(0, "read_pages"));

	/* Through the namespace again, then every byte. */
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, MiB, 0, 62));
	ASSERT_TRUE(region_has(self->fd, MiB, 104, MiB, 61));
	ASSERT_TRUE(region_has(self->fd, MiB + 104, 200, MiB + 104, 63));
	ASSERT_TRUE(region_has(self->fd, MiB + 304, MiB - 304, MiB + 304, 61));

	/* A source whose second half is not mapped. */
	two = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, two);
	ASSERT_EQ(0, munmap(two + PAGE, PAGE));
	kvt_fill(two + PAGE / 2, PAGE / 2, 3 * PAGE, 64);
	/* Over an evicted page: its first half new, the rest as it was. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(PAGE / 2, pwrite(self->fd, two + PAGE / 2, PAGE, 3 * PAGE));
	/* Nothing readable at all: EFAULT, nothing written. */
	ASSERT_EQ(-1, pwrite(self->fd, two + PAGE, PAGE, 4 * PAGE));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 3 * PAGE, PAGE / 2, 3 * PAGE, 64));
	ASSERT_TRUE(region_has(self->fd, 3 * PAGE + PAGE / 2, PAGE / 2,
			       3 * PAGE + PAGE / 2, 62));
	ASSERT_TRUE(region_has(self->fd, 4 * PAGE, PAGE, 4 * PAGE, 62));

	/* Over a page never written: the first half new, the rest zero. */
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, ioctl(fd2, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(PAGE / 2, pwrite(fd2, two + PAGE / 2, PAGE, 3 * PAGE));
	ASSERT_EQ((ssize_t)PAGE, pread(fd2, buf, PAGE, 3 * PAGE));
	ASSERT_EQ(-1, kvt_check(buf, PAGE / 2, 3 * PAGE, 64));
	for (off = PAGE / 2; off < PAGE; off++)
		ASSERT_EQ(0, buf[off]);
	/* Whole pages over pages never written read back as written. */
	kvt_fill(buf, len, 0, 65);
	ASSERT_EQ((ssize_t)len, pwrite(fd2, buf, len, 0));
	ASSERT_EQ(0, fsync(fd2));
	ASSERT_EQ(0, posix_fadvise(fd2, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(fd2, 0, len, 0, 65));
	close(fd2);
	munmap(two, PAGE);
	free(buf);
}

/*
 * Create a region of @size bytes on @fd (of tier 0) and write it whole by
 * pwrite, in pieces of @len bytes, with pattern @seed (by offset), then
 * fsync. Returns the @len-byte buffer it wrote from (the caller frees it).
 * Background write-back is off meanwhile: beside reclaim it may take
 * part of a run of pages, so that the run lands in interleaved slots, and
 * the read tests that use this count the bios that read a run back (one
 * failed at 34 bios for 512 pages against its bound of 32 that way).
 */
static unsigned char *region_written(struct __test_metadata *_metadata,
				     int fd, size_t size, size_t len,
				     unsigned long long seed)
{
	long long bg = kvt_tier_num(0, "dirty_background_pct");
	struct kvtier_region_create rc = { .size = size };
	unsigned char *buf;
	size_t off;

	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	for (off = 0; off < size; off += len) {
		kvt_fill(buf, len, off, seed);
		ASSERT_EQ((ssize_t)len, pwrite(fd, buf, len, off));
	}
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", bg));
	return buf;
}

/*
 * A pread of pages that are only on the namespace reads them ahead of the
 * copy in large bios, as far as the request goes, even with fault
 * readahead off (readahead_kb=0, one page per bio for faults): 512 pages
 * take a few bios, not 512. A request that ends early reads no further.
 */
TEST_F_TIMEOUT(tier, pread_reads_its_request_ahead, 300)
{
	size_t len = 2 * MiB;
	long long bios, pages;
	unsigned char *buf = region_written(_metadata, self->fd, 2 * len,
					    len, 66);

	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));

	bios = kvt_stat(0, "read_bios");
	pages = kvt_stat(0, "read_pages");
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 66));
	bios = kvt_stat(0, "read_bios") - bios;
	pages = kvt_stat(0, "read_pages") - pages;
	TH_LOG("pread of %zu pages: %lld pages read in %lld bios", len / PAGE,
	       pages, bios);
	/* Every page came from the namespace, none past the request. */
	ASSERT_GE(pages, (long long)(len / PAGE));
	ASSERT_LE(pages, (long long)(len / PAGE) + 16);
	ASSERT_LE(bios, (long long)(len / PAGE) / 16);
	/* The second half was not asked for: still not resident. */
	ASSERT_LE(kvt_tier_num(0, "resident"), (long long)len + 16 * PAGE);

	/* Short requests (two pages each) still read every byte right. */
	for (size_t off = len; off < 2 * len; off += 2 * PAGE) {
		ASSERT_EQ((ssize_t)(2 * PAGE), pread(self->fd, buf, 2 * PAGE, off));
		ASSERT_EQ(-1, kvt_check(buf, 2 * PAGE, off, 66));
	}
	free(buf);
}

/* An anonymous mapping of @len bytes (page-aligned), or NULL. */
static unsigned char *aligned_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Whether @len bytes at @p are all zero. */
static int all_zero(const unsigned char *p, size_t len)
{
	while (len--)
		if (*p++)
			return 0;
	return 1;
}

/*
 * A pread at a page-aligned offset into page-aligned memory reads the
 * pages that are only on the namespace straight into the buffer (direct
 * reads): none enters the pool, the bios are large, and the bytes are
 * right with checksum on and off. In the same request resident pages are
 * copied and never-written pages read as zeros; a request past the end
 * stops there. An unaligned buffer or offset goes through the pool; a
 * buffer unmapped part way reads up to the hole.
 */
TEST_F_TIMEOUT(tier, pread_direct_into_aligned_buffer, 300)
{
	size_t len = 4 * MiB, size = 5 * MiB;
	struct kvtier_region_create rc = { .size = size };
	long long d0, b0, r0;
	unsigned char *buf;
	int crc;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = aligned_buf(8 * MiB);
	ASSERT_NE(NULL, buf);
	kvt_fill(buf, len, 0, 68);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	ASSERT_EQ(0, fsync(self->fd));

	for (crc = 1; crc >= 0; crc--) {
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, kvt_tier_num(0, "resident"));
		d0 = kvt_stat(0, "direct_read_pages");
		b0 = kvt_stat(0, "read_bios");
		r0 = kvt_stat(0, "direct_read_retries");
		memset(buf, 0xa5, 8 * MiB);
		/* 8 MiB asked of a 5 MiB region: 4 written, 1 never. */
		ASSERT_EQ((ssize_t)size, pread(self->fd, buf, 8 * MiB, 0));
		ASSERT_EQ(-1, kvt_check(buf, len, 0, 68));
		ASSERT_TRUE(all_zero(buf + len, size - len));
		ASSERT_EQ(0xa5, buf[size]);
		TH_LOG("checksum %d: %lld pages read directly in %lld bios",
		       crc, kvt_stat(0, "direct_read_pages") - d0,
		       kvt_stat(0, "read_bios") - b0);
		ASSERT_EQ((long long)(len / PAGE), kvt_stat(0, "direct_read_pages") - d0);
		/*
		 * Large bios, not a page each: runs of consecutive slots, as
		 * write-back gave them. A write as large as the budget
		 * is written back by the writer's stalls and by the background
		 * worker at once, in batches of an eighth of the budget, so
		 * the runs are interleaved: 4 to 10 bios seen, not 1024.
		 */
		ASSERT_LE(kvt_stat(0, "read_bios") - b0, 32);
		ASSERT_EQ(r0, kvt_stat(0, "direct_read_retries"));
		ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	}

	/* 64 KiB made resident through the pool, then the whole again. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((ssize_t)(64 * KiB), pread(self->fd, buf + 8, 64 * KiB, MiB));
	ASSERT_EQ(-1, kvt_check(buf + 8, 64 * KiB, MiB, 68));
	ASSERT_GE(kvt_tier_num(0, "resident"), (long long)(64 * KiB));
	d0 = kvt_stat(0, "direct_read_pages");
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 68));
	ASSERT_LE(kvt_stat(0, "direct_read_pages") - d0,
		  (long long)((len - 64 * KiB) / PAGE));
	ASSERT_GT(kvt_stat(0, "direct_read_pages") - d0, 0);

	/* Unaligned buffer, unaligned offset: the pool, the same bytes. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	d0 = kvt_stat(0, "direct_read_pages");
	ASSERT_EQ((ssize_t)MiB, pread(self->fd, buf + 512, MiB, 0));
	ASSERT_EQ(-1, kvt_check(buf + 512, MiB, 0, 68));
	ASSERT_EQ((ssize_t)MiB, pread(self->fd, buf, MiB, MiB + 512));
	ASSERT_EQ(-1, kvt_check(buf, MiB, MiB + 512, 68));
	ASSERT_EQ(d0, kvt_stat(0, "direct_read_pages"));

	/* A buffer whose second MiB is gone: one MiB read, then the hole. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, munmap(buf + MiB, MiB));
	memset(buf, 0, MiB);
	ASSERT_EQ((ssize_t)MiB, pread(self->fd, buf, 2 * MiB, 2 * MiB));
	ASSERT_EQ(-1, kvt_check(buf, MiB, 2 * MiB, 68));
	ASSERT_EQ(-1, pread(self->fd, buf + MiB, MiB, 0));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(0, munmap(buf, 8 * MiB));

	/* Nothing was lost on the way: every byte on the namespace. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 68));
	free(buf);
}

/*
 * @dst, a mapping of the region of @fd2, holds pattern @seed of its
 * offsets, and the region keeps it through write-back (read back into
 * @src). Unmaps @dst and closes @fd2.
 */
static void mapping_kept(struct __test_metadata *_metadata, int fd2,
			 unsigned char *dst, unsigned char *src, size_t len,
			 unsigned long long seed)
{
	ASSERT_EQ(-1, kvt_check(dst, len, 0, seed));
	ASSERT_EQ(0, fsync(fd2));
	ASSERT_EQ(0, posix_fadvise(fd2, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((ssize_t)len, pread(fd2, src, len, 0));
	ASSERT_EQ(-1, kvt_check(src, len, 0, seed));
	munmap(dst, len);
	close(fd2);
}

/*
 * A direct read into a mapping of another region of the same tier (the
 * buffer is pinned, faulting those pages in through the pool) and into a
 * mapping of the very pages being read (pinning faults them in; the check
 * after the pin sends those still resident to the pool, and any evicted
 * meanwhile are read into the pinned pages): the bytes land, and the
 * destination region keeps them through write-back.
 */
TEST_F_TIMEOUT(tier, pread_direct_into_kvtier_mapping, 300)
{
	size_t len = 2 * MiB;
	unsigned char *src = region_written(_metadata, self->fd, len, len, 69);
	struct kvtier_region_create rc = { .size = len };
	long long d0;
	unsigned char *dst;
	int fd2;

	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, ioctl(fd2, KVTIER_IOC_REGION_CREATE, &rc));
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, dst);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	d0 = kvt_stat(0, "direct_read_pages");
	ASSERT_EQ((ssize_t)len, pread(self->fd, dst, len, 0));
	ASSERT_GT(kvt_stat(0, "direct_read_pages") - d0, 0);
	mapping_kept(_metadata, fd2, dst, src, len, 69);

	/* Into its own mapping: each page over itself. */
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, dst);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((ssize_t)len, pread(self->fd, dst, len, 0));
	ASSERT_EQ(-1, kvt_check(dst, len, 0, 69));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(dst, len, 0, 69));
	munmap(dst, len);
	free(src);
}

/* ------------------------------------------------------------------ */
/* asynchronous reads: io_uring and aio, many in flight from one thread */

#define AQ_DEPTH	64
#define AQ_BLOCK	(256 * KiB)	/* a quarter of the 4 MiB budget at most */

/*
 * How many of @n reads (@write: writes) of AQ_BLOCK from 0 through @how
 * (1: aio) moved AQ_BLOCK, or -errno; io_uring's io-wq workers in
 * *@workers.
 */
static int aq_rw_n(int write, int how, int fd, unsigned char *buf,
		   unsigned int n, int *workers)
{
	long long res[AQ_DEPTH];
	int good = 0, ret;
	unsigned int i;

	*workers = 0;
	if (write)
		ret = how ? kvt_aio_pwrites(fd, buf, AQ_BLOCK, n, 0, res) :
			    kvt_uring_pwrites(fd, buf, AQ_BLOCK, n, 0, res, workers);
	else
		ret = how ? kvt_aio_preads(fd, buf, AQ_BLOCK, n, 0, res) :
			    kvt_uring_preads(fd, buf, AQ_BLOCK, n, 0, res, workers);
	if (ret)
		return ret;
	for (i = 0; i < n; i++)
		good += res[i] == (long long)AQ_BLOCK;
	return good;
}

static int aq_read_n(int how, int fd, unsigned char *buf, unsigned int n,
		     int *workers)
{
	return aq_rw_n(0, how, fd, buf, n, workers);
}

static int aq_read(int how, int fd, unsigned char *buf, int *workers)
{
	return aq_read_n(how, fd, buf, AQ_DEPTH, workers);
}

/*
 * io_uring and aio at a queue depth of 64 (256 KiB each, page-aligned
 * buffers) read a region's evicted pages straight into the buffers, every
 * request completed asynchronously (direct_read_async: the submitting
 * thread does not wait for each), with checksum on and off; every byte
 * right. io_uring issues them inline (the file is FMODE_NOWAIT, and the
 * direct read starts without waiting), so it makes no io-wq worker. With
 * some pages resident the requests cannot be served without waiting:
 * io-wq serves them, synchronously, still right. Resident pages alone are
 * copied inline.
 */
TEST_F_TIMEOUT(tier, pread_async_qd64, 300)
{
	size_t len = AQ_DEPTH * AQ_BLOCK, chunk = BUDGET_MB * MiB / 2, off;
	struct kvtier_region_create rc = { .size = len };
	long long a0, d0;
	unsigned char *buf;
	int crc, ret, how, workers;

	buf = aligned_buf(len);
	ASSERT_NE(NULL, buf);
	/*
	 * Written half a budget at a time, each half by fsync alone: with
	 * budget stalls, the writer's reclaim and the background one take
	 * pages off the LRU in turns, and a request may then span more runs
	 * of slots than one direct read takes (it goes to io-wq, right but
	 * not what this test is about). Room in flight for all 64 and more:
	 * at the default (16 MiB, their sum) a bio of the setup still
	 * counted would do the same.
	 */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	for (off = 0; off < len; off += chunk) {
		kvt_fill(buf, chunk, off, 70);
		ASSERT_EQ((ssize_t)chunk, pwrite(self->fd, buf, chunk, off));
		ASSERT_EQ(0, fsync(self->fd));
		ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	}
	ASSERT_EQ(0, kvt_knob(0, "max_inflight_kb", 4 * len / KiB));
	for (crc = 1; crc >= 0; crc--) {
		ASSERT_EQ(0, kvt_knob(0, "checksum", crc));
		for (how = 0; how < 2; how++) {
			ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
			ASSERT_EQ(0, kvt_tier_num(0, "resident"));
			memset(buf, 0, len);
			a0 = kvt_stat(0, "direct_read_async");
			d0 = kvt_stat(0, "direct_read_pages");
			ret = aq_read(how, self->fd, buf, &workers);
			TH_LOG("checksum %d, %s: %d of %d reads whole; %lld asynchronous, %lld pages direct, %d io-wq workers",
			       crc, how ? "aio" : "io_uring", ret, AQ_DEPTH,
			       kvt_stat(0, "direct_read_async") - a0,
			       kvt_stat(0, "direct_read_pages") - d0, workers);
			ASSERT_EQ(AQ_DEPTH, ret);
			ASSERT_EQ(0, workers);
			ASSERT_EQ(-1, kvt_check(buf, len, 0, 70));
			ASSERT_EQ(AQ_DEPTH, kvt_stat(0, "direct_read_async") - a0);
			ASSERT_EQ((long long)(len / PAGE), kvt_stat(0, "direct_read_pages") - d0);
		}
	}

	a0 = kvt_stat(0, "direct_read_async");
	/*
	 * 1 MiB resident (a quarter of the budget): copied inline. Before the
	 * case below: io-wq keeps a task's last worker until the task exits.
	 */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((ssize_t)MiB, pread(self->fd, buf + 1, MiB, 0));
	ASSERT_LE((long long)MiB, kvt_tier_num(0, "resident"));
	memset(buf, 0, len);
	ASSERT_EQ((int)(MiB / AQ_BLOCK), aq_read_n(0, self->fd, buf, MiB / AQ_BLOCK, &workers));
	ASSERT_EQ(-1, kvt_check(buf, MiB, 0, 70));
	ASSERT_EQ(0, workers);

	/* One page of each block resident: served synchronously, still right. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	for (size_t off = 0; off < len; off += AQ_BLOCK)
		ASSERT_EQ(0, kvt_pread_page(self->fd, off + PAGE, 70));
	memset(buf, 0, len);
	ASSERT_EQ(AQ_DEPTH, aq_read(0, self->fd, buf, &workers));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 70));
	ASSERT_EQ(a0, kvt_stat(0, "direct_read_async"));
	TH_LOG("one page of each read resident: %d io-wq workers", workers);
	ASSERT_LT(0, workers);
	munmap(buf, len);
}

/* @n writes of AQ_BLOCK from @buf through io_uring (@how 0) or aio (1). */
static int aq_write_n(int how, int fd, unsigned char *buf, unsigned int n,
		      int *workers)
{
	return aq_rw_n(1, how, fd, buf, n, workers);
}

/*
 * With the checksum off, io_uring and aio at a queue depth of 64 (256 KiB
 * each, page-aligned buffers) write a region's pages straight from the
 * buffers, every request completed asynchronously (direct_write_async),
 * io_uring's inline and without an io-wq worker: over never-written pages,
 * then over their copies (moved, the old slots freed), then with O_DIRECT.
 * With a page of each block resident, or the checksum on, the requests go
 * to io-wq and are served synchronously. Every byte reads back right.
 */
TEST_F_TIMEOUT(tier, pwrite_async_qd64, 300)
{
	size_t len = AQ_DEPTH * AQ_BLOCK, off;
	struct kvtier_region_create rc = { .size = len };
	long long a0, d0, used = 0;
	unsigned char *buf;
	int round, how, workers, fl;

	buf = aligned_buf(len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(0, kvt_knob(0, "max_inflight_kb", 4 * len / KiB));
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	for (round = 0; round < 3; round++) {
		how = round == 1;
		if (round == 2) {
			fl = fcntl(self->fd, F_GETFL);
			ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fl | O_DIRECT));
		}
		kvt_fill(buf, len, 0, 180 + round);
		a0 = kvt_stat(0, "direct_write_async");
		d0 = kvt_stat(0, "direct_write_pages");
		ASSERT_EQ(AQ_DEPTH, aq_write_n(how, self->fd, buf, AQ_DEPTH,
					       &workers));
		TH_LOG("%s: %lld asynchronous, %lld pages direct, %d io-wq workers, %lld MiB used",
		       how ? "aio" : "io_uring",
		       kvt_stat(0, "direct_write_async") - a0,
		       kvt_stat(0, "direct_write_pages") - d0, workers,
		       kvt_tier_num(0, "used") / (long long)MiB);
		ASSERT_EQ(AQ_DEPTH, kvt_stat(0, "direct_write_async") - a0);
		ASSERT_EQ((long long)(len / PAGE),
			  kvt_stat(0, "direct_write_pages") - d0);
		ASSERT_EQ(0, workers);
		ASSERT_EQ(0, kvt_tier_num(0, "resident"));
		ASSERT_TRUE(region_has(self->fd, 0, len, 0, 180 + round));
		ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
		/* Moved, not doubled: each old slot went back. */
		if (round)
			ASSERT_EQ(used, kvt_tier_num(0, "used"));
		used = kvt_tier_num(0, "used");
	}
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fl));

	/* A page of each block resident: io-wq, right all the same. */
	for (off = 0; off < len; off += AQ_BLOCK)
		ASSERT_EQ(0, kvt_pread_page(self->fd, off + PAGE, 182));
	a0 = kvt_stat(0, "direct_write_async");
	kvt_fill(buf, len, 0, 183);
	ASSERT_EQ(AQ_DEPTH, aq_write_n(0, self->fd, buf, AQ_DEPTH, &workers));
	ASSERT_EQ(a0, kvt_stat(0, "direct_write_async"));
	TH_LOG("one page of each write resident: %d io-wq workers", workers);
	ASSERT_LT(0, workers);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 183));

	/* The checksum on: through the pool, from io-wq. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	kvt_fill(buf, len, 0, 184);
	ASSERT_EQ(AQ_DEPTH, aq_write_n(1, self->fd, buf, AQ_DEPTH, &workers));
	ASSERT_EQ(a0, kvt_stat(0, "direct_write_async"));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 184));
	munmap(buf, len);
}

/*
 * io_uring reads started inline (IOCB_NOWAIT) into a mapping of another
 * region whose pages are only on the namespace, with max_inflight_kb at
 * its least: pinning the buffer faults those pages in, and each fault's
 * read waits for in-flight room. A direct read takes its own room only
 * after the pin, so nothing waits for itself (a form that took it first
 * hung here, in D state). Bytes right in the buffer, and kept by the
 * destination region through write-back.
 */
TEST_F_TIMEOUT(tier, uring_read_into_evicted_mapping, 300)
{
	size_t len = MiB;
	unsigned char *src = region_written(_metadata, self->fd, len, len, 72);
	struct kvtier_region_create rc = { .size = len };
	unsigned char *dst;
	long long a0;
	int fd2, workers;

	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, ioctl(fd2, KVTIER_IOC_REGION_CREATE, &rc));
	kvt_fill(src, len, 0, 73);
	ASSERT_EQ((ssize_t)len, pwrite(fd2, src, len, 0));
	ASSERT_EQ(0, fsync(fd2));
	dst = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, dst);
	ASSERT_EQ(0, kvt_knob(0, "max_inflight_kb", 4));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(fd2, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	a0 = kvt_stat(0, "direct_read_async");
	ASSERT_EQ((int)(len / AQ_BLOCK),
		  aq_read_n(0, self->fd, dst, len / AQ_BLOCK, &workers));
	TH_LOG("%lld of %zu reads asynchronous, %d io-wq workers",
	       kvt_stat(0, "direct_read_async") - a0, len / AQ_BLOCK, workers);
	ASSERT_EQ((long long)(len / AQ_BLOCK), kvt_stat(0, "direct_read_async") - a0);
	mapping_kept(_metadata, fd2, dst, src, len, 72);
	free(src);
}

/*
 * preadv2 and pwritev2 with RWF_NOWAIT: a read of holes and resident
 * pages is served whole; one that would wait for I/O (a page only on the
 * namespace, direct or not) is EAGAIN, without moving anything; a write
 * is always EAGAIN and changes nothing (it may wait for a page lock or a
 * charge).
 */
TEST_F(tier, rwf_nowait)
{
	size_t len = 256 * KiB;
	struct kvtier_region_create rc = { .size = 4 * len };
	unsigned char *w = malloc(2 * len);
	unsigned char *buf = aligned_buf(len + PAGE);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, w);
	/* The first half written, the second a hole. */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	kvt_fill(w, 2 * len, 0, 71);
	ASSERT_EQ((ssize_t)(2 * len), pwrite(self->fd, w, 2 * len, 0));
	ASSERT_EQ(0, fsync(self->fd));
	/* Resident: whole, right, even into an unaligned buffer. */
	ASSERT_EQ((ssize_t)len, preadv2(self->fd, &iov, 1, 0, RWF_NOWAIT));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 71));
	iov.iov_base = buf + 1;
	ASSERT_EQ((ssize_t)len, preadv2(self->fd, &iov, 1, len, RWF_NOWAIT));
	ASSERT_EQ(-1, kvt_check(buf + 1, len, len, 71));

	/* Evicted, only on the namespace: EAGAIN, aligned (direct) or not. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	iov.iov_base = buf;
	errno = 0;
	ASSERT_EQ(-1, preadv2(self->fd, &iov, 1, 0, RWF_NOWAIT));
	ASSERT_EQ(EAGAIN, errno);
	iov.iov_base = buf + 1;
	errno = 0;
	ASSERT_EQ(-1, preadv2(self->fd, &iov, 1, 0, RWF_NOWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	/*
	 * The first page resident, the others on the namespace (no readahead
	 * brings them in): still nothing.
	 */
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
	ASSERT_EQ((ssize_t)PAGE, pread(self->fd, buf + 1, PAGE, 0));
	ASSERT_EQ((long long)PAGE, kvt_tier_num(0, "resident"));
	iov.iov_base = buf;
	errno = 0;
	ASSERT_EQ(-1, preadv2(self->fd, &iov, 1, 0, RWF_NOWAIT));
	ASSERT_EQ(EAGAIN, errno);

	/* A write never goes inline: EAGAIN, and the bytes are the old ones. */
	memset(buf, 0xa5, len);
	errno = 0;
	ASSERT_EQ(-1, pwritev2(self->fd, &iov, 1, 0, RWF_NOWAIT));
	ASSERT_EQ(EAGAIN, errno);
	ASSERT_EQ((ssize_t)(2 * len), pread(self->fd, w, 2 * len, 0));
	ASSERT_EQ(-1, kvt_check(w, 2 * len, 0, 71));

	/* Past the written part: holes read as zero, inline. */
	iov.iov_base = buf;
	memset(buf, 0xa5, len);
	ASSERT_EQ((ssize_t)len, preadv2(self->fd, &iov, 1, 2 * len, RWF_NOWAIT));
	for (size_t i = 0; i < len; i++)
		ASSERT_EQ(0, buf[i]);
	munmap(buf, len + PAGE);
	free(w);
}

/*
 * Bring [0, @len) of @fd back by WILLNEED alone (no reader), and wait
 * until the prefetch read it and, with @crc_on, until the verify-ahead
 * work checked every page of its multi-page bios. Returns the pages it
 * verified ahead.
 */
static long long prefetch_and_settle(struct __test_metadata *_metadata,
				     int fd, size_t len, int crc_on)
{
	long long v0 = kvt_stat(0, "read_verified_ahead");
	long long p0 = kvt_stat(0, "read_pages");
	long long b0 = kvt_stat(0, "read_bios");
	long long want = (long long)(len / PAGE), v = 0;
	int i;

	ASSERT_EQ(0, posix_fadvise(fd, 0, len, POSIX_FADV_WILLNEED));
	for (i = 0; i < 500 && kvt_stat(0, "read_pages") - p0 < want; i++)
		usleep(10000);
	ASSERT_GE(kvt_stat(0, "read_pages") - p0, want);
	/* Every page of a bio of two or more is checked ahead. */
	want = (kvt_stat(0, "read_pages") - p0) - (kvt_stat(0, "read_bios") - b0);
	for (i = 0; i < 500; i++) {
		v = kvt_stat(0, "read_verified_ahead") - v0;
		if (!crc_on || v >= want)
			break;
		usleep(10000);
	}
	TH_LOG("checksum %d: %lld pages read in %lld bios, %lld verified ahead",
	       crc_on, kvt_stat(0, "read_pages") - p0,
	       kvt_stat(0, "read_bios") - b0, v);
	if (crc_on)
		ASSERT_GE(v, want);
	return v;
}

/*
 * With checksum on, a read bio's CRCs are checked by a work on another
 * CPU as soon as it completes, before any reader asks (the pages of a
 * WILLNEED prefetch, which nobody waits for, are all checked there);
 * bytes are right after, and nothing is checked twice or counted as a
 * mismatch. With checksum off nothing is checked.
 */
TEST_F_TIMEOUT(tier, read_crcs_verified_ahead, 300)
{
	size_t len = 2 * MiB;
	long long csum0 = kvt_stat(0, "checksum_errors");
	unsigned char *buf = region_written(_metadata, self->fd, len, len, 67);

	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_GT(prefetch_and_settle(_metadata, self->fd, len, 1), 0);
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 67));
	ASSERT_EQ(csum0, kvt_stat(0, "checksum_errors"));

	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, prefetch_and_settle(_metadata, self->fd, len, 0));
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 67));
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	free(buf);
}

/*
 * fsync's write-back batches have their CRCs computed on more than one
 * CPU (a helper on kvtier_wq takes part of each batch of 128 pages or
 * more); what they recorded verifies: every page reads back right, with
 * checksum on, and no mismatch is counted. A helper may find its part
 * taken already (a busy machine): a few rounds are allowed for one to
 * have helped.
 */
TEST_F_TIMEOUT(tier, writeback_crcs_spread_over_cpus, 300)
{
	size_t len = 2 * MiB;
	struct kvtier_region_create rc = { .size = len };
	long long csum0 = kvt_stat(0, "checksum_errors");
	long long h0 = kvt_stat(0, "writeback_crc_helped"), helped = 0;
	unsigned char *buf;
	int round;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "one CPU: write-back computes every CRC itself");
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	for (round = 0; round < 5 && !helped; round++) {
		kvt_fill(buf, len, 0, 70 + round);
		ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
		ASSERT_EQ(0, fsync(self->fd));
		helped = kvt_stat(0, "writeback_crc_helped") - h0;
	}
	TH_LOG("%d round(s) of %zu pages: %lld CRCs computed by helpers",
	       round, len / PAGE, helped);
	ASSERT_GT(helped, 0);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	memset(buf, 0, len);
	ASSERT_EQ((ssize_t)len, pread(self->fd, buf, len, 0));
	ASSERT_EQ(-1, kvt_check(buf, len, 0, 70 + round - 1));
	ASSERT_EQ(csum0, kvt_stat(0, "checksum_errors"));
	free(buf);
}

/*
 * pwrite from a mapping of the same region: of other pages, of the very
 * page written, resident or evicted (the copy faults the source in while
 * the destination is being written; nothing deadlocks or mixes).
 */
TEST_F_TIMEOUT(tier, pwrite_from_own_mapping, 300)
{
	size_t len = 2 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	int round;

	ASSERT_NE(MAP_FAILED, p);
	for (round = 0; round < 2; round++) {
		kvt_fill(p, len, 0, 71);
		if (round) {
			/* Everything only on the namespace. */
			ASSERT_EQ(0, fsync(self->fd));
			ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0,
						   POSIX_FADV_DONTNEED));
			ASSERT_EQ(0, kvt_tier_num(0, "resident"));
		}
		/* Pages 0..3 onto 8..11, and page 2 onto itself. */
		ASSERT_EQ(4 * PAGE, pwrite(self->fd, p, 4 * PAGE, 8 * PAGE));
		ASSERT_EQ((ssize_t)PAGE, pwrite(self->fd, p + 2 * PAGE, PAGE,
						2 * PAGE));
		/* Pages 16..23 onto 40..48, 8 bytes off the page boundary. */
		ASSERT_EQ(8 * PAGE, pwrite(self->fd, p + 16 * PAGE, 8 * PAGE,
					   40 * PAGE + 8));
		ASSERT_EQ(-1, kvt_check(p, 8 * PAGE, 0, 71));
		ASSERT_EQ(-1, kvt_check(p + 8 * PAGE, 4 * PAGE, 0, 71));
		ASSERT_EQ(-1, kvt_check(p + 12 * PAGE, 28 * PAGE + 8, 12 * PAGE, 71));
		ASSERT_EQ(-1, kvt_check(p + 40 * PAGE + 8, 8 * PAGE, 16 * PAGE, 71));
		ASSERT_EQ(-1, kvt_check(p + 48 * PAGE + 8, len - 48 * PAGE - 8,
					48 * PAGE + 8, 71));
	}
	/* And back from the namespace. */
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(p + 8 * PAGE, 4 * PAGE, 0, 71));
	ASSERT_EQ(-1, kvt_check(p + 40 * PAGE + 8, 8 * PAGE, 16 * PAGE, 71));
	munmap(p, len);
}

/* A dirty page is written back by fsync and DONTNEED, then reads back. */
TEST_F_TIMEOUT(tier, fsync_and_dontneed_write_back, 300)
{
	size_t len = BUDGET_MB * MiB / 2;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long wb;

	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 61);
	wb = kvt_stat(0, "writeback_pages");
	ASSERT_EQ(0, msync(p, len, MS_SYNC));
	ASSERT_EQ(wb + (long long)(len / PAGE), kvt_stat(0, "writeback_pages"));
	ASSERT_GT(kvt_stat(0, "flushes"), 0);
	/* Written again after the write-back: dirty again (page_mkwrite). */
	kvt_fill(p, PAGE, 0, 62);
	ASSERT_EQ(1, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(-1, kvt_check(p, PAGE, 0, 62));
	ASSERT_EQ(-1, kvt_check(p + PAGE, len - PAGE, PAGE, 61));
	munmap(p, len);
}

/* kill -9 in the middle of a fault storm: every page and slot returns. */
TEST_F_TIMEOUT(tier, kill_mid_storm, 300)
{
	size_t len = 4 * BUDGET_MB * MiB;
	int round, status;

	for (round = 0; round < 3; round++) {
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (pid == 0) {
			int fd = kvt_tier_open(0, O_RDWR);
			unsigned char *p = kvt_map_region(fd, len, PROT_READ | PROT_WRITE);

			if (p == MAP_FAILED)
				_exit(1);
			for (;;)
				kvt_fill(p, len, 0, 71);
		}
		while (kvt_stat(0, "writeback_pages") < 100 * (round + 1))
			usleep(1000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(0, kvt_tier_num(0, "resident"));
		ASSERT_EQ(0, kvt_tier_num(0, "used"));
	}
}

/* fork shares the mapping; mremap moves it; partial munmap; mprotect. */
TEST_F_TIMEOUT(tier, shared_mapping_semantics, 300)
{
	size_t len = 2 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE), *q;
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len / 2, 0, 81);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (kvt_check(p, len / 2, 0, 81) != -1)
			_exit(1);
		kvt_fill(p + len / 2, len / 2, len / 2, 82);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(-1, kvt_check(p + len / 2, len / 2, len / 2, 82));

	/* Growing is refused (fixed-size region); moving keeps the bytes. */
	ASSERT_EQ(MAP_FAILED, mremap(p, len, 2 * len, MREMAP_MAYMOVE));
	q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(-1, kvt_check(q, len / 2, 0, 81));

	/* Unmapping a middle page leaves the rest working. */
	ASSERT_EQ(0, munmap(q + PAGE, PAGE));
	ASSERT_EQ(-1, kvt_check(q + 2 * PAGE, len / 2 - 2 * PAGE, 2 * PAGE, 81));

	/* Read-only, then writable again. */
	ASSERT_EQ(0, mprotect(q, PAGE, PROT_READ));
	ASSERT_EQ(-1, kvt_check(q, PAGE, 0, 81));
	ASSERT_EQ(0, mprotect(q, PAGE, PROT_READ | PROT_WRITE));
	kvt_fill(q, PAGE, 0, 83);
	ASSERT_EQ(-1, kvt_check(q, PAGE, 0, 83));
	munmap(q, PAGE);
	munmap(q + 2 * PAGE, len - 2 * PAGE);
}

TEST_F_TIMEOUT(tier, mmap_errors, 300)
{
	unsigned char *p;
	int fd2;

	/* MAP_PRIVATE is refused. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ, MAP_PRIVATE, self->fd, 0));
	ASSERT_EQ(EINVAL, errno);
	/* A first mapping at a non-zero offset is refused. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ, MAP_SHARED, self->fd, MiB));
	ASSERT_EQ(EINVAL, errno);
	/* Larger than the namespace. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, 1ULL << 40, PROT_READ, MAP_SHARED | MAP_NORESERVE,
				   self->fd, 0));
	ASSERT_EQ(ENOSPC, errno);

	p = kvt_map_region(self->fd, MiB, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	/* Beyond the region's size. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, self->fd, 0));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ, MAP_SHARED, self->fd, MiB));
	ASSERT_EQ(EINVAL, errno);
	/* Inside it is fine: a second view of the same bytes. */
	p[PAGE] = 0x5a;
	{
		unsigned char *v = mmap(NULL, PAGE, PROT_READ, MAP_SHARED,
					self->fd, PAGE);

		ASSERT_NE(MAP_FAILED, v);
		ASSERT_EQ(0x5a, v[0]);
		munmap(v, PAGE);
	}
	/* A mapping keeps the namespace attached even with the fd closed. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0x5a, p[PAGE]);
	munmap(p, MiB);

	/* Without a namespace: ENODEV. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd2, 0));
	ASSERT_EQ(ENODEV, errno);
	close(fd2);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
}

TEST_F_TIMEOUT(tier, ioctl_fadvise_rw_errors, 300)
{
	struct kvtier_region_create rc = { .size = MiB };
	char buf[16];

	/* No region yet. */
	ASSERT_EQ(-1, pread(self->fd, buf, 1, 0));
	ASSERT_EQ(ENXIO, errno);
	ASSERT_EQ(-1, pwrite(self->fd, buf, 1, 0));
	ASSERT_EQ(ENXIO, errno);
	ASSERT_EQ(ENXIO, posix_fadvise(self->fd, 0, 0, POSIX_FADV_WILLNEED));

	rc.flags = 1;
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(EINVAL, errno);
	rc.flags = 0;
	rc.size = 0;
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(EINVAL, errno);
	rc.size = 1ULL << 40;
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(ENOSPC, errno);
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, (void *)8));
	ASSERT_EQ(EFAULT, errno);
	rc.size = MiB;
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(EEXIST, errno);

	/* fadvise ranges and advice. */
	ASSERT_EQ(EINVAL, posix_fadvise(self->fd, MiB, 1, POSIX_FADV_WILLNEED));
	ASSERT_EQ(EINVAL, posix_fadvise(self->fd, 0, -1, POSIX_FADV_DONTNEED));
	ASSERT_EQ(EINVAL, posix_fadvise(self->fd, -4096, 1, POSIX_FADV_DONTNEED));
	ASSERT_EQ(EINVAL, posix_fadvise(self->fd, 0, 1, 99));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 2 * MiB, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_SEQUENTIAL));

	/* Nothing above disturbed the region. */
	ASSERT_EQ(5, pwrite(self->fd, "hello", 5, 100));
	ASSERT_EQ(5, pread(self->fd, buf, 5, 100));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
}

static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* Write @len bytes of pattern @seed page by page; bytes done before SIGBUS. */
static size_t fill_until_sigbus(unsigned char *p, size_t len,
				unsigned long long seed)
{
	static volatile size_t done;

	done = 0;
	signal(SIGBUS, on_sigbus);
	if (!sigsetjmp(sigbus_jmp, 1)) {
		for (; done < len; done += PAGE)
			kvt_fill(p + done, PAGE, done, seed);
	}
	signal(SIGBUS, SIG_DFL);
	return done;
}

/*
 * A full namespace: the fault that needs a slot gets SIGBUS and it is
 * counted; the data already on the namespace is intact.
 */
TEST_F_TIMEOUT(tier, full_namespace, 300)
{
	size_t len = 6 * MiB, done = 0;
	char dev[32];
	unsigned char *a, *b;
	int lfd, fa, fb;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach("/tmp/kvtier-small.img", 8 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_knob(1, "host_budget_mb", 1));
	fa = kvt_tier_open(1, O_RDWR);
	fb = kvt_tier_open(1, O_RDWR);
	ASSERT_GE(fa, 0);
	ASSERT_GE(fb, 0);
	a = kvt_map_region(fa, len, PROT_READ | PROT_WRITE);
	b = kvt_map_region(fb, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, a);
	ASSERT_NE(MAP_FAILED, b);

	kvt_fill(a, len, 0, 91);
	ASSERT_EQ(0, fsync(fa));

	done = fill_until_sigbus(b, len, 92);
	TH_LOG("SIGBUS after %zu bytes of the second region", done);
	ASSERT_LT(done, len);
	ASSERT_GT(done, 0);
	ASSERT_GT(kvt_stat(1, "nospace_errors"), 0);
	/*
	 * The pool is now full of b's dirty pages that have nowhere to go;
	 * freeing b gives the space back, and a's bytes are intact.
	 */
	munmap(b, len);
	close(fb);
	ASSERT_EQ(-1, kvt_check(a, len, 0, 91));
	munmap(a, len);
	close(fa);
	ASSERT_EQ(0, kvt_tier_num(1, "used"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	unlink("/tmp/kvtier-small.img");
}

/*
 * A sequential pass over evicted data costs few faults and few bios:
 * readahead reads following slots in the same bio, fault-around maps
 * resident neighbours.
 */
TEST_F_TIMEOUT(tier, sequential_pass_batches, 300)
{
	size_t len = 4 * BUDGET_MB * MiB, pass = 2 * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long faults, bios, pages, holes;

	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 101);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));

	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor");
	bios = kvt_stat(0, "read_bios");
	pages = kvt_stat(0, "read_pages");
	ASSERT_EQ(-1, kvt_check(p, pass, 0, 101));
	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor") - faults;
	bios = kvt_stat(0, "read_bios") - bios;
	pages = kvt_stat(0, "read_pages") - pages;
	TH_LOG("%zu pages: %lld faults, %lld read bios, %lld pages read",
	       pass / PAGE, faults, bios, pages);
	ASSERT_GE(pages, (long long)(pass / PAGE));
	ASSERT_LE(faults * 4, (long long)(pass / PAGE));
	ASSERT_LE(bios * 8, pages);
	ASSERT_GT(kvt_stat(0, "readahead_pages"), 0);
	ASSERT_GT(kvt_stat(0, "fault_around_pages"), 0);

	/*
	 * The same pages, all resident, through a new mapping: each fault
	 * maps its whole 64-page window, so 512 pages take 8 faults (the
	 * bound leaves room for a neighbour another task held locked for an
	 * instant; 16-page windows took 32).
	 */
	ASSERT_EQ(0, munmap(p, len));
	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor");
	ASSERT_EQ(-1, kvt_check(p, pass, 0, 101));
	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor") - faults;
	TH_LOG("%zu resident pages through a new mapping: %lld faults",
	       pass / PAGE, faults);
	ASSERT_LE(faults, (long long)(pass / PAGE) / 32);

	/*
	 * Holes in a mapped window (MADV_DONTNEED drops only the PTEs): one
	 * fault maps every hole, each run of them up to the next page still
	 * mapped (where vm_insert_pages() stops) and on after it. Of pages
	 * 64..127, the 43 with i % 3 != 0 are holes; the first is the fault.
	 */
	holes = 0;
	for (size_t i = 64; i < 128; i++) {
		if (i % 3) {
			ASSERT_EQ(0, madvise(p + i * PAGE, PAGE, MADV_DONTNEED));
			holes++;
		}
	}
	ASSERT_EQ(43, holes);
	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor");
	pages = kvt_stat(0, "fault_around_pages");
	ASSERT_EQ(-1, kvt_check(p + 64 * PAGE, 64 * PAGE, 64 * PAGE, 101));
	faults = kvt_stat(0, "faults_major") + kvt_stat(0, "faults_minor") - faults;
	pages = kvt_stat(0, "fault_around_pages") - pages;
	TH_LOG("%lld holes in a mapped window: %lld faults, %lld mapped around",
	       holes, faults, pages);
	/* Room for a neighbour another task held locked for an instant. */
	ASSERT_LE(faults, 2);
	ASSERT_EQ(holes, faults + pages);

	/* Misses that do not continue a run read a few pages, not a window. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	pages = kvt_stat(0, "read_pages");
	for (int i = 0; i < 32; i++) {
		size_t pg = (size_t)(i * 37 % 32) * 64 + 8;	/* 256 KiB apart */

		ASSERT_EQ(-1, kvt_check(p + pg * PAGE, 8, pg * PAGE, 101));
	}
	pages = kvt_stat(0, "read_pages") - pages;
	TH_LOG("32 scattered misses read %lld pages", pages);
	ASSERT_LE(pages, 32 * 4);

	/* readahead_kb=0: one page per major fault. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
	bios = kvt_stat(0, "read_bios");
	pages = kvt_stat(0, "read_pages");
	ASSERT_EQ(-1, kvt_check(p, 64 * PAGE, 0, 101));
	ASSERT_EQ(kvt_stat(0, "read_bios") - bios, kvt_stat(0, "read_pages") - pages);
	munmap(p, len);
}

/*
 * Global memory reclaim (drop_caches runs every shrinker) takes clean tier
 * pages back down to the floor; the data stays intact.
 */
TEST_F_TIMEOUT(tier, shrinker_gives_back_clean_pages, 300)
{
	size_t len = 16 * MiB;
	unsigned char *p;
	long long before;
	int fd;

	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 32));
	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 111);
	ASSERT_EQ(0, fsync(self->fd));
	before = kvt_tier_num(0, "resident");
	ASSERT_EQ((long long)len, before);

	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, write(fd, "2", 1));
	close(fd);
	TH_LOG("resident %lld -> %lld bytes", before, kvt_tier_num(0, "resident"));
	ASSERT_GT(kvt_stat(0, "shrinker_frees"), 0);
	/* Down to the floor, an eighth of the budget, and no lower. */
	ASSERT_LE(kvt_tier_num(0, "resident"), 32 * (long long)MiB / 8);
	ASSERT_GE(kvt_tier_num(0, "resident"), 32 * (long long)MiB / 8 - 64 * (long long)PAGE);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 111));

	/* Dirty pages: the worker writes them back, down to the floor too. */
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 32));
	kvt_fill(p, len, 0, 112);
	ASSERT_GT(kvt_stat(0, "dirty_pages"), 32 * 256 / 8);
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, write(fd, "2", 1));
	close(fd);
	for (int i = 0; i < 500 && kvt_tier_num(0, "resident") > 32 * (long long)MiB / 8; i++)
		usleep(10000);
	ASSERT_LE(kvt_tier_num(0, "resident"), 32 * (long long)MiB / 8);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 112));
	munmap(p, len);
}

/* Pinned pages stay resident through thrashing; unpinned they go. */
TEST_F_TIMEOUT(tier, pin_keeps_pages_resident, 300)
{
	size_t len = 4 * BUDGET_MB * MiB;
	struct kvtier_pin pin = { .offset = MiB, .length = MiB };
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long major;

	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 121);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ((long long)MiB, kvt_tier_num(0, "pinned"));
	/* Pinning again is idempotent. */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ((long long)MiB, kvt_tier_num(0, "pinned"));

	/* Thrash the rest twice over: the pinned MiB never leaves. */
	ASSERT_EQ(-1, kvt_check(p + 2 * MiB, len - 2 * MiB, 2 * MiB, 121));
	ASSERT_EQ(-1, kvt_check(p, MiB, 0, 121));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((long long)MiB, kvt_tier_num(0, "resident"));
	major = kvt_stat(0, "faults_major") + kvt_stat(0, "readahead_pages");
	ASSERT_EQ(-1, kvt_check(p + MiB, MiB, MiB, 121));
	ASSERT_EQ(major, kvt_stat(0, "faults_major") + kvt_stat(0, "readahead_pages"));

	/* Errors change nothing. */
	pin.offset = 100;
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ(EINVAL, errno);
	pin = (struct kvtier_pin){ .offset = len - PAGE, .length = 2 * PAGE };
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ(EINVAL, errno);
	pin = (struct kvtier_pin){ .offset = 0, .length = 0 };
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ(EINVAL, errno);
	pin = (struct kvtier_pin){ .offset = 0, .length = PAGE, .flags = 1 };
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ(EINVAL, errno);
	/* Over the limit (half of the 4 MiB pool): ENOSPC, nothing pinned. */
	pin = (struct kvtier_pin){ .offset = 2 * MiB, .length = 2 * MiB };
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ(ENOSPC, errno);
	ASSERT_EQ((long long)MiB, kvt_tier_num(0, "pinned"));
	/* And the pool cannot shrink below twice what is pinned. */
	ASSERT_EQ(-EBUSY, kvt_knob(0, "host_budget_mb", 1));
	ASSERT_EQ(BUDGET_MB, kvt_tier_num(0, "host_budget_mb"));
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_PIN, (void *)8));
	ASSERT_EQ(EFAULT, errno);

	/* Unpinned, the pages are evictable again. */
	pin = (struct kvtier_pin){ .offset = MiB, .length = MiB };
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_UNPIN, &pin));
	ASSERT_EQ(0, kvt_tier_num(0, "pinned"));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 121));

	/* A pin on a fresh fd without a region: ENXIO. */
	{
		int fd2 = kvt_tier_open(0, O_RDWR);

		ASSERT_EQ(-1, ioctl(fd2, KVTIER_IOC_PIN, &pin));
		ASSERT_EQ(ENXIO, errno);
		close(fd2);
	}
	/* Pinned pages are released with their region (teardown checks). */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	munmap(p, len);
}

/*
 * A SCHED_FIFO thread that spins on one CPU until told to stop, or for 2 s
 * at most (a failed assertion must not leave it starving the teardown).
 */
struct hog {
	pthread_t th;
	int cpu;
	int started;		/* 1: spinning on @cpu; -1: could not pin */
	const int *stop;
};

static void *hog_spin(void *arg)
{
	struct hog *h = arg;
	long long t0 = kvt_now_ms();
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set)) {
		__atomic_store_n(&h->started, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	__atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(h->stop, __ATOMIC_ACQUIRE) &&
	       kvt_now_ms() - t0 < 2000)
		;
	return NULL;
}

/*
 * FADV_DONTNEED drops pages read back while the verify-ahead work (a
 * kworker) cannot run: the work holds no page while it waits for a CPU.
 * This thread runs at SCHED_FIFO 2 and a spinner at SCHED_FIFO 1 holds
 * every CPU this thread may use and leaves, so no kworker runs between
 * the read-back and the drop - as long as that takes less than what the
 * kernel lets RT tasks have before it gives normal ones 50 ms (0.95 s of
 * each second: the RT throttle; on 6.12 the deferred fair server). A
 * window over 0.9 s proves nothing: SKIP. (The drop unmapped each page
 * alone before 2026-12-07: a TLB shootdown of the spinners' CPU per page
 * took the window past 0.9 s on a loaded host.) Over NVMe over Fabrics the
 * reads themselves need kworkers: SKIP. A work that held its bio's pages
 * (b47a0e4 and before) kept them resident here.
 */
TEST_F_TIMEOUT(tier, dontneed_drops_pages_awaiting_verify, 120)
{
	size_t len = 2 * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	struct sched_param sp = { .sched_priority = 2 };
	int ncpu = 0, stop = 0, i;
	struct hog hogs[CPU_SETSIZE];
	long long resident, reads, t0, t1, t2, window;
	pthread_attr_t attr;
	cpu_set_t cpus;

	ASSERT_NE(MAP_FAILED, p);
	if (getenv("KVTIER_FABRICS") && *getenv("KVTIER_FABRICS"))
		SKIP(return, "the reads need kworkers over NVMe over Fabrics");
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	kvt_fill(p, len, 0, 131);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(cpus), &cpus));

	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		SKIP(return, "no SCHED_FIFO: %s", strerror(errno));
	sp.sched_priority = 1;
	ASSERT_EQ(0, pthread_attr_init(&attr));
	ASSERT_EQ(0, pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED));
	ASSERT_EQ(0, pthread_attr_setschedpolicy(&attr, SCHED_FIFO));
	ASSERT_EQ(0, pthread_attr_setschedparam(&attr, &sp));
	t0 = kvt_now_ms();
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &cpus))
			continue;
		hogs[ncpu] = (struct hog){ .cpu = i, .stop = &stop };
		ASSERT_EQ(0, pthread_create(&hogs[ncpu].th, &attr, hog_spin,
					    &hogs[ncpu]));
		ncpu++;
	}
	for (i = 0; i < ncpu; i++) {
		while (!__atomic_load_n(&hogs[i].started, __ATOMIC_ACQUIRE))
			usleep(1000);
	}

	t1 = kvt_now_ms();
	reads = kvt_stat(0, "read_bios");
	/* A byte a page: a fault each, the bytes are checked after. */
	for (i = 0; i < (int)(len / PAGE); i++)
		(void)((volatile unsigned char *)p)[i * PAGE];
	reads = kvt_stat(0, "read_bios") - reads;
	t2 = kvt_now_ms();
	if (!posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED))
		resident = kvt_tier_num(0, "resident");
	else
		resident = -errno;
	window = kvt_now_ms() - t0;

	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < ncpu; i++)
		pthread_join(hogs[i].th, NULL);
	sp.sched_priority = 0;
	ASSERT_EQ(0, sched_setscheduler(0, SCHED_OTHER, &sp));
	TH_LOG("%d spinners for %lld ms (start %lld, read %lld, drop %lld); %lld read bios; %lld bytes resident after DONTNEED",
	       ncpu, window, t1 - t0, t2 - t1, window - (t2 - t0), reads,
	       resident);
	for (i = 0; i < ncpu; i++)
		ASSERT_EQ(1, hogs[i].started);
	ASSERT_LT(reads, (long long)(len / PAGE));	/* bios of several pages */
	if (window > 900)
		SKIP(return, "the window took %lld ms: kworkers may have run", window);
	ASSERT_EQ(0, resident);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 131));
	ASSERT_EQ(0, munmap(p, len));
}

/*
 * Dirty pinned pages are written back by fsync, not by the background
 * workers: reclaim writes back only to free memory and never frees a
 * pinned page (userspace-api: KVTIER_IOC_PIN), and background write-back
 * passes pinned pages over.
 */
TEST_F_TIMEOUT(tier, pinned_dirty_pages_wait_for_fsync, 300)
{
	size_t len = 4 * BUDGET_MB * MiB;
	struct kvtier_pin pin = { .offset = 0, .length = MiB };
	struct kvtier_region_info ri;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	kvt_fill(p, MiB, 0, 131);
	/* Thrash the rest: the background worker and budget stalls run. */
	kvt_fill(p + MiB, len - MiB, MiB, 132);
	ASSERT_EQ(-1, kvt_check(p + MiB, len - MiB, MiB, 132));
	ASSERT_GT(kvt_stat(0, "writeback_pages"), 0);
	ASSERT_EQ(0, kvt_region_info(self->fd, &ri));
	ASSERT_GE(ri.dirty, (unsigned long long)MiB);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, kvt_region_info(self->fd, &ri));
	ASSERT_EQ(0, ri.dirty);
	/* Unpinned and dropped, the pinned bytes come back from the namespace. */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_UNPIN, &pin));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(-1, kvt_check(p, MiB, 0, 131));
	munmap(p, len);
}

/* @len bytes of pattern @seed (offsets from @base) written at @off. */
static ssize_t pwrite_flags(int fd, size_t off, size_t len,
			    unsigned long long base, unsigned long long seed,
			    int flags)
{
	unsigned char *buf = malloc(len + PAGE);
	struct iovec iov;
	ssize_t ret;

	if (!buf)
		return -1;
	/* Page-aligned when @off is: as an O_DIRECT caller's buffer. */
	iov.iov_base = buf + off % PAGE;
	iov.iov_len = len;
	kvt_fill(iov.iov_base, len, base, seed);
	ret = pwritev2(fd, &iov, 1, off, flags);
	free(buf);
	return ret;
}

/*
 * O_DIRECT writes through: the file opens (and fcntl sets the flag), and
 * a pwrite returns with its pages written to the namespace and gone from
 * the pool, whole or partial pages, over never-written, resident-dirty and
 * mapped pages; a pinned page is written and stays. RWF_DSYNC (O_DSYNC)
 * returns with the pages written and the pages resident, and for a
 * persistent region after a commit. The bytes read back through pread
 * and the mapping.
 */
TEST_F_TIMEOUT(tier, odirect_and_dsync_writes_write_through, 300)
{
	size_t len = 2 * MiB;
	struct kvtier_region_create rc = { .size = len };
	struct kvtier_pin pin = { .offset = MiB, .length = PAGE };
	long long wb0, commits0;
	unsigned char *p;
	int fd, pfd, fl;

	fd = kvt_tier_open(0, O_RDWR | O_DIRECT);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_CREATE, &rc));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);

	/* Whole pages, never written: written, not resident. */
	wb0 = kvt_stat(0, "writeback_pages");
	ASSERT_EQ((ssize_t)MiB, pwrite_flags(fd, 0, MiB, 0, 161, 0));
	ASSERT_EQ(MiB / PAGE, kvt_stat(0, "writeback_pages") - wb0);
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_TRUE(region_has(fd, 0, MiB, 0, 161));

	/*
	 * Over pages dirtied through the mapping (and one pinned), partly:
	 * the mapping sees the new bytes; the pinned page stays, clean.
	 */
	kvt_fill(p + MiB, MiB, MiB, 162);
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_PIN, &pin));
	ASSERT_EQ((long long)(MiB / PAGE), kvt_stat(0, "dirty_pages"));
	ASSERT_EQ((ssize_t)(3 * PAGE + 96),
		  pwrite_flags(fd, MiB + 48, 3 * PAGE + 96, MiB + 48, 163, 0));
	ASSERT_EQ((long long)(MiB / PAGE - 4), kvt_stat(0, "dirty_pages"));
	/* The first MiB, read back through the pool; 4 pages gone, 1 pinned. */
	ASSERT_EQ((long long)(2 * MiB - 4 * PAGE + PAGE),
		  kvt_tier_num(0, "resident"));
	ASSERT_EQ(-1, kvt_check(p + MiB, 48, MiB, 162));
	ASSERT_EQ(-1, kvt_check(p + MiB + 48, 3 * PAGE + 96, MiB + 48, 163));
	ASSERT_EQ(-1, kvt_check(p + MiB + 3 * PAGE + 144, MiB - 3 * PAGE - 144,
				MiB + 3 * PAGE + 144, 162));
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_UNPIN, &pin));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(fd, MiB + 48, 3 * PAGE + 96, MiB + 48, 163));
	ASSERT_TRUE(region_has(fd, MiB + 3 * PAGE + 144, MiB - 3 * PAGE - 144,
			       MiB + 3 * PAGE + 144, 162));
	ASSERT_TRUE(region_has(fd, 0, MiB, 0, 161));

	/* fcntl takes O_DIRECT off and on; off, a pwrite stays dirty. */
	fl = fcntl(fd, F_GETFL);
	ASSERT_TRUE(fl & O_DIRECT);
	ASSERT_EQ(0, fcntl(fd, F_SETFL, fl & ~O_DIRECT));
	ASSERT_EQ((ssize_t)PAGE, pwrite_flags(fd, 0, PAGE, 0, 164, 0));
	ASSERT_EQ(1, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, fcntl(fd, F_SETFL, fl));
	ASSERT_EQ((ssize_t)PAGE, pwrite_flags(fd, PAGE, PAGE, PAGE, 164, 0));
	ASSERT_EQ(1, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, fcntl(fd, F_SETFL, fl & ~O_DIRECT));

	/* RWF_DSYNC: written, and resident still. */
	wb0 = kvt_stat(0, "writeback_pages");
	ASSERT_EQ((ssize_t)(4 * PAGE),
		  pwrite_flags(fd, 8 * PAGE, 4 * PAGE, 8 * PAGE, 165, RWF_DSYNC));
	ASSERT_EQ(4, kvt_stat(0, "writeback_pages") - wb0);
	ASSERT_EQ(1, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(-1, kvt_check(p + 8 * PAGE, 4 * PAGE, 8 * PAGE, 165));
	ASSERT_EQ(-1, kvt_check(p, PAGE, 0, 164));
	munmap(p, len);
	close(fd);

	/* A persistent region: O_DSYNC commits before the write returns. */
	pfd = kvt_tier_open(0, O_RDWR | O_DSYNC);
	ASSERT_GE(pfd, 0);
	ASSERT_EQ(0, kvt_bind_name(pfd, "dsync", MiB,
				   KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT,
				   0600));
	commits0 = kvt_stat(0, "commits");
	ASSERT_EQ((ssize_t)(2 * PAGE),
		  pwrite_flags(pfd, 0, 2 * PAGE, 0, 166, 0));
	ASSERT_GT(kvt_stat(0, "commits"), commits0);
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_TRUE(region_has(pfd, 0, 2 * PAGE, 0, 166));
	ASSERT_EQ(0, kvt_unlink_name(pfd, "dsync"));
	close(pfd);
	/* Its slots go back after a commit of their own (teardown checks). */
	for (int i = 0; i < 1000 && kvt_tier_num(0, "used"); i++)
		usleep(10000);
}

/*
 * With the checksum off, a pwrite of whole pages of an unnamed region at
 * a page-aligned offset from page-aligned memory writes the pages that
 * are not in the pool straight from the buffer (direct writes), to fresh
 * slots: a page only on the namespace leaves its old slot, which goes
 * back; none enters the pool or stays dirty. Resident pages in the same request are
 * copied into the pool as before. The checksum on, a persistent region,
 * an unaligned buffer or offset: the pool. A page written directly over
 * one that had a CRC reads back right with the checksum on again (it has
 * none now). The bytes read back through pread, the mapping and, after
 * DONTNEED, from the namespace.
 */
TEST_F_TIMEOUT(tier, pwrite_direct_without_checksum, 300)
{
	size_t len = 4 * MiB, size = 8 * MiB;
	struct kvtier_region_create rc = { .size = size };
	long long d0, wb0, used, pages = len / PAGE;
	unsigned char *buf, *p;
	int pfd;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	buf = aligned_buf(len);
	ASSERT_NE(NULL, buf);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);

	/* The checksum on: through the pool, dirty. */
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(buf, MiB, 6 * MiB, 170);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, buf, MiB, 6 * MiB));
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_GT(kvt_stat(0, "dirty_pages"), 0);
	ASSERT_EQ(0, fsync(self->fd));

	/* Off: 4 MiB never written go to fresh slots, in large bios. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	wb0 = kvt_stat(0, "writeback_bios");
	kvt_fill(buf, len, 0, 171);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	ASSERT_EQ(pages, kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(0, kvt_stat(0, "direct_write_retries"));
	ASSERT_LE(kvt_stat(0, "writeback_bios") - wb0, 32);
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 171));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 171));

	/* Over pages only on the namespace: moved, the old slots freed. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	used = kvt_tier_num(0, "used");
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(buf, 2 * MiB, MiB, 172);
	ASSERT_EQ((ssize_t)(2 * MiB), pwrite(self->fd, buf, 2 * MiB, MiB));
	ASSERT_EQ((long long)(2 * MiB / PAGE),
		  kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(used, kvt_tier_num(0, "used"));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_TRUE(region_has(self->fd, 0, MiB, 0, 171));
	ASSERT_TRUE(region_has(self->fd, MiB, 2 * MiB, MiB, 172));
	ASSERT_TRUE(region_has(self->fd, 3 * MiB, MiB, 3 * MiB, 171));

	/*
	 * Over the 6th MiB, written with a CRC: the new copies have none, so
	 * the checksum on again reads the new bytes, not EIO.
	 */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	kvt_fill(buf, 64 * KiB, 6 * MiB + 64 * KiB, 173);
	ASSERT_EQ((ssize_t)(64 * KiB),
		  pwrite(self->fd, buf, 64 * KiB, 6 * MiB + 64 * KiB));
	ASSERT_EQ(0, kvt_knob(0, "checksum", 1));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 6 * MiB, 64 * KiB, 6 * MiB, 170));
	ASSERT_TRUE(region_has(self->fd, 6 * MiB + 64 * KiB, 64 * KiB,
			       6 * MiB + 64 * KiB, 173));
	ASSERT_TRUE(region_has(self->fd, 6 * MiB + 128 * KiB, MiB - 128 * KiB,
			       6 * MiB + 128 * KiB, 170));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));

	/*
	 * A request over resident pages, clean and dirtied through the
	 * mapping: those 16 are copied into the pool (the mapping sees the
	 * bytes), the rest written directly.
	 */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((ssize_t)(32 * KiB), pread(self->fd, buf + 8, 32 * KiB, MiB));
	ASSERT_EQ(-1, kvt_check(buf + 8, 32 * KiB, MiB, 172));
	kvt_fill(buf + 8, 32 * KiB, 2 * MiB, 174);
	ASSERT_EQ((ssize_t)(32 * KiB), pwrite(self->fd, buf + 8, 32 * KiB, 2 * MiB));
	ASSERT_EQ(16 * PAGE, kvt_tier_num(0, "resident"));
	ASSERT_EQ(8, kvt_stat(0, "dirty_pages"));
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(buf, len, 0, 175);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	ASSERT_EQ(pages - 16, kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 175));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 175));

	/* Unaligned buffer or offset: the pool. */
	d0 = kvt_stat(0, "direct_write_pages");
	kvt_fill(buf + 8, MiB, 0, 176);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, buf + 8, MiB, 0));
	kvt_fill(buf, MiB, 512, 176);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, buf, MiB, 512));
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_TRUE(region_has(self->fd, 0, MiB + 512, 0, 176));

	/* Past the end: what fits; a buffer that ends early: up to its end. */
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	kvt_fill(buf, 2 * MiB, 7 * MiB, 177);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, buf, 2 * MiB, 7 * MiB));
	ASSERT_TRUE(region_has(self->fd, 7 * MiB, MiB, 7 * MiB, 177));
	ASSERT_EQ(0, munmap(buf + 3 * MiB, MiB));
	kvt_fill(buf + 2 * MiB, MiB, 4 * MiB, 178);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, buf + 2 * MiB, 2 * MiB, 4 * MiB));
	ASSERT_EQ(-1, pwrite(self->fd, buf + 3 * MiB, MiB, 5 * MiB));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_TRUE(region_has(self->fd, 4 * MiB, MiB, 4 * MiB, 178));
	ASSERT_EQ(0, kvt_stat(0, "direct_write_retries"));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	ASSERT_EQ(0, munmap(buf, 3 * MiB));

	/* From a mapping of this tier (another region): the same bytes. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	pfd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(pfd, 0);
	ASSERT_EQ(0, ioctl(pfd, KVTIER_IOC_REGION_CREATE, &rc));
	d0 = kvt_stat(0, "direct_write_pages");
	ASSERT_EQ((ssize_t)MiB, pwrite(pfd, p, MiB, 0));
	ASSERT_EQ((long long)(MiB / PAGE), kvt_stat(0, "direct_write_pages") - d0);
	ASSERT_TRUE(region_has(pfd, 0, MiB, 0, 176));
	close(pfd);
	used = kvt_tier_num(0, "used");

	/* A persistent region keeps every CRC: the pool. */
	pfd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(pfd, 0);
	ASSERT_EQ(0, kvt_bind_name(pfd, "nodirect", MiB,
				   KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT,
				   0600));
	buf = aligned_buf(MiB);
	ASSERT_NE(NULL, buf);
	kvt_fill(buf, MiB, 0, 179);
	d0 = kvt_stat(0, "direct_write_pages");
	ASSERT_EQ((ssize_t)MiB, pwrite(pfd, buf, MiB, 0));
	ASSERT_EQ(d0, kvt_stat(0, "direct_write_pages"));
	ASSERT_EQ(0, fsync(pfd));
	ASSERT_EQ(0, posix_fadvise(pfd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(pfd, 0, MiB, 0, 179));
	ASSERT_EQ(0, kvt_unlink_name(pfd, "nodirect"));
	close(pfd);
	munmap(buf, MiB);
	munmap(p, size);
	/* Its slots go back after a commit of their own (teardown checks). */
	for (int i = 0; i < 1000 && kvt_tier_num(0, "used") > used; i++)
		usleep(10000);
}

/* kvt_wait_stat() of writeback_background, 10 s at most. */
static long long wait_background(long long from, long long want)
{
	return kvt_wait_stat(0, "writeback_background", from, want, 10);
}

/*
 * Background write-back: past dirty_background_pct of the budget (pinned
 * pages not counted), the worker writes dirty pages back without evicting
 * them, down to half of it, and leaves pinned pages dirty until they are
 * unpinned; 0 turns it off.
 * 3 MiB of 4 stays under watermark_high, so nothing else writes. The bytes
 * read back through the pool and, after a DONTNEED, from the namespace.
 */
TEST_F_TIMEOUT(tier, background_writeback_cleans_dirty_pages, 300)
{
	size_t len = 3 * MiB, pages = len / PAGE, pinned = MiB / PAGE;
	struct kvtier_region_create rc = { .size = len };
	struct kvtier_pin pin = { .offset = 0, .length = MiB };
	long long wb0, ev0, wbp0, n;
	unsigned char *buf;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_PIN, &pin));
	buf = malloc(len);
	ASSERT_NE(NULL, buf);
	wb0 = kvt_stat(0, "writeback_background");
	wbp0 = kvt_stat(0, "writeback_pages");
	ev0 = kvt_stat(0, "evictions_clean") + kvt_stat(0, "evictions_dirty");
	kvt_fill(buf, len, 0, 141);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));

	/* Off: 75 % of the budget dirty, and nothing written. */
	usleep(300000);
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(wb0, kvt_stat(0, "writeback_background"));
	ASSERT_EQ(wbp0, kvt_stat(0, "writeback_pages"));

	/*
	 * 25 % (256 pages): 512 unpinned dirty pages are over it, and the
	 * write of the knob wakes the worker, which writes down to 128.
	 */
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 25));
	n = wait_background(wb0, pages - pinned - 128);
	ASSERT_EQ((long long)(pages - pinned - 128), n);
	usleep(300000);
	ASSERT_EQ(n, kvt_stat(0, "writeback_background") - wb0);
	ASSERT_EQ((long long)(pinned + 128), kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(n, kvt_stat(0, "writeback_pages") - wbp0);
	/* Written, not evicted. */
	ASSERT_EQ((long long)len, kvt_tier_num(0, "resident"));
	ASSERT_EQ(ev0, kvt_stat(0, "evictions_clean") +
		  kvt_stat(0, "evictions_dirty"));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 141));

	/*
	 * Unpinned, the 256 pinned pages count again (384 dirty, over 256):
	 * the unpin wakes the worker, which writes down to 128 again.
	 */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_UNPIN, &pin));
	n = wait_background(wb0, pages - 128);
	ASSERT_EQ((long long)(pages - 128), n);
	usleep(300000);
	ASSERT_EQ(n, kvt_stat(0, "writeback_background") - wb0);
	ASSERT_EQ(128, kvt_stat(0, "dirty_pages"));

	/* fsync writes only what is left; then back from the namespace. */
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ((long long)pages, kvt_stat(0, "writeback_pages") - wbp0);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 141));
	free(buf);
}

/*
 * Background write-back picks from the tier's list of regions with dirty
 * pages: a region the worker found clean leaves the list, and its next
 * dirty page puts it back. A is written and fsynced (clean, still
 * listed); B's dirty pages wake the worker, whose pick finds A clean and
 * drops it; A dirtied again is cleaned too. 2 x 1.5 MiB of the 4 MiB
 * budget stays under watermark_high, so nothing else writes.
 */
TEST_F_TIMEOUT(tier, background_writeback_finds_regions_dirtied_again, 300)
{
	size_t len = 3 * MiB / 2, pages = len / PAGE;
	struct kvtier_region_create rc = { .size = len };
	struct kvtier_region_info ri;
	long long wb0, n;
	unsigned char *buf = malloc(len);
	int fb;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	fb = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fb, 0);
	ASSERT_EQ(0, ioctl(fb, KVTIER_IOC_REGION_CREATE, &rc));
	kvt_fill(buf, len, 0, 151);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	ASSERT_EQ(0, fsync(self->fd));

	/*
	 * 25 % (256 pages): B's 384 are over it; cleaned down to 128. All
	 * but its last page are dirtied first with the worker off: woken
	 * half-way, it would clean down to 128 while the rest came in, and
	 * stop under 256.
	 */
	wb0 = kvt_stat(0, "writeback_background");
	kvt_fill(buf, len, 0, 152);
	ASSERT_EQ((ssize_t)(len - PAGE), pwrite(fb, buf, len - PAGE, 0));
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 25));
	ASSERT_EQ((ssize_t)PAGE, pwrite(fb, buf + len - PAGE, PAGE, len - PAGE));
	n = wait_background(wb0, pages - 128);
	ASSERT_EQ((long long)(pages - 128), n);

	/* A again: 128 + 384 dirty, cleaned down to 128, A's pages too. */
	wb0 = kvt_stat(0, "writeback_background");
	kvt_fill(buf, len, 0, 153);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	n = wait_background(wb0, pages);
	ASSERT_EQ((long long)pages, n);
	ASSERT_EQ(0, kvt_region_info(self->fd, &ri));
	TH_LOG("A dirty %llu bytes after the second round", ri.dirty);
	ASSERT_LT(ri.dirty, (unsigned long long)len);
	ASSERT_EQ(128, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ((long long)(2 * len), kvt_tier_num(0, "resident"));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 153));
	ASSERT_TRUE(region_has(fb, 0, len, 0, 152));
	close(fb);
	free(buf);
}

/*
 * Background write-back leaves the namespace's last 1/64 free: with less
 * than its pages and that reserve free it writes nothing and pauses. Room
 * freed later (another region closed) brings it back by itself, with
 * nothing dirtied, charged or unpinned to wake it, and it cleans down to
 * its goal. The filler is written with O_DIRECT (written through, so it
 * leaves nothing dirty in the pool).
 */
TEST_F_TIMEOUT(tier, background_writeback_waits_for_room, 300)
{
	size_t len = 3 * MiB, pages = len / PAGE, chunk = 4 * MiB, off;
	long long total = kvt_stat(0, "slots_total"), bg0, n;
	struct kvtier_region_create rc = { .size = len };
	struct kvtier_region_create xc = { 0 };
	unsigned char *buf;
	int xfd;

	ASSERT_GT(total, 8192);
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 0));
	/* The filler: all but 1536 slots (6 MiB), less than 640 + total/64. */
	xc.size = (unsigned long long)(total - 1536) * PAGE;
	xfd = kvt_tier_open(0, O_RDWR | O_DIRECT);
	ASSERT_GE(xfd, 0);
	ASSERT_EQ(0, ioctl(xfd, KVTIER_IOC_REGION_CREATE, &xc));
	buf = aligned_alloc(PAGE, chunk);
	ASSERT_NE(NULL, buf);
	for (off = 0; off < xc.size; off += chunk) {
		size_t n = xc.size - off < chunk ? xc.size - off : chunk;

		kvt_fill(buf, n, off, 171);
		ASSERT_EQ((ssize_t)n, pwrite(xfd, buf, n, off));
	}
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(total - 1536, kvt_stat(0, "slots_used"));

	/* 3 MiB dirty; at 25 % the worker would write 640 pages. */
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	kvt_fill(buf, len, 0, 172);
	ASSERT_EQ((ssize_t)len, pwrite(self->fd, buf, len, 0));
	bg0 = kvt_stat(0, "writeback_background");
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 25));
	usleep(1000000);
	ASSERT_EQ(0, kvt_stat(0, "writeback_background") - bg0);
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, kvt_stat(0, "nospace_errors"));

	/*
	 * The filler goes. Its last MiB first, read back into the aligned
	 * buffer: direct reads, which take nothing into the pool (a pool
	 * read would fill the budget, and reclaim would write back some of
	 * the dirty pages the worker is waiting to write).
	 */
	ASSERT_EQ((ssize_t)MiB, pread(xfd, buf, MiB, xc.size - MiB));
	ASSERT_EQ(-1, kvt_check(buf, MiB, xc.size - MiB, 171));
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ((long long)len, kvt_tier_num(0, "resident"));
	close(xfd);
	for (int i = 0; i < 1000 && kvt_stat(0, "slots_used") >= total - 1536; i++)
		usleep(10000);
	ASSERT_LT(kvt_stat(0, "slots_used"), total - 1536);
	n = wait_background(bg0, pages - 128);
	ASSERT_EQ((long long)(pages - 128), n);
	ASSERT_EQ(128, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_TRUE(region_has(self->fd, 0, len, 0, 172));
	free(buf);
}

/*
 * Background write-back and reclaim share a fill of twice the budget
 * through the mapping (the worker cleans the oldest dirty pages while the
 * pool is under watermark_high, reclaim writes what it evicts above it),
 * then fsync: each page is written once (at most 1/64 more: a page
 * dirtied again after the worker took it), and every byte reads back.
 */
TEST_F_TIMEOUT(tier, background_writeback_with_reclaim_writes_once, 300)
{
	size_t len = 2 * BUDGET_MB * MiB;
	unsigned char *p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	long long wb0, bg0, wb;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(50, kvt_tier_num(0, "dirty_background_pct"));
	wb0 = kvt_stat(0, "writeback_pages");
	bg0 = kvt_stat(0, "writeback_background");
	kvt_fill(p, len, 0, 151);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, kvt_stat(0, "dirty_pages"));
	wb = kvt_stat(0, "writeback_pages") - wb0;
	TH_LOG("%lld pages written back for %zu, %lld by the background worker",
	       wb, len / PAGE, kvt_stat(0, "writeback_background") - bg0);
	ASSERT_GE(wb, (long long)(len / PAGE));
	ASSERT_LE(wb, (long long)(len / PAGE + len / PAGE / 64));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 151));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 151));
	munmap(p, len);
}

/* MemFree in KiB, from /proc/meminfo, after dropping clean caches. */
static long long mem_free_kb(void)
{
	char key[64];
	long long v;
	FILE *f;
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			v = 0;
		close(fd);
	}
	f = fopen("/proc/meminfo", "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld kB", key, &v) == 2) {
		if (!strcmp(key, "MemFree:")) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	return -1;
}

/* crc_bytes of the only region in debugfs "regions". */
static long long only_region_crc_bytes(void)
{
	return kvt_region_column(0, "crc_bytes");
}

/*
 * A region's kernel memory follows what it holds, not its size: CRCs are
 * kept in 256-byte chunks of 62 pages, made as pages are written back, so
 * 64 fresh regions of nearly the namespace's size cost almost nothing (a
 * dense CRC array was 4 bytes per page of each, at creation).
 */
TEST_F_TIMEOUT(tier, crcs_follow_what_is_written, 300)
{
	size_t len = 448 * MiB;
	unsigned char buf[PAGE];
	long long before, after;
	int fds[64], i, fd;

	before = mem_free_kb();
	for (i = 0; i < 64; i++) {
		struct kvtier_region_create rc = { .size = len };

		fds[i] = kvt_tier_open(0, O_RDWR);
		ASSERT_GE(fds[i], 0);
		ASSERT_EQ(0, ioctl(fds[i], KVTIER_IOC_REGION_CREATE, &rc));
	}
	after = mem_free_kb();
	TH_LOG("64 regions of %zu MiB: MemFree %lld -> %lld KiB", len / MiB,
	       before, after);
	/* 28 MiB of CRC arrays before; a few KiB per region now. */
	ASSERT_LT(before - after, 8 * 1024);
	for (i = 0; i < 64; i++)
		close(fds[i]);

	/* One region: CRC room appears with what is written back. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	{
		struct kvtier_region_create rc = { .size = len };

		ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_CREATE, &rc));
	}
	ASSERT_EQ(0, only_region_crc_bytes());
	kvt_fill(buf, PAGE, 0, 141);
	ASSERT_EQ((ssize_t)PAGE, pwrite(fd, buf, PAGE, 0));
	kvt_fill(buf, PAGE, 256 * MiB, 141);
	ASSERT_EQ((ssize_t)PAGE, pwrite(fd, buf, PAGE, 256 * MiB));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(2 * 256, only_region_crc_bytes());
	/* 1 MiB dense from 0: 256 pages, chunks 0-4 (0 was there). */
	{
		unsigned char *p = kvt_map_region(fd, MiB, PROT_READ | PROT_WRITE);

		ASSERT_NE(MAP_FAILED, p);
		kvt_fill(p, MiB, 0, 142);
		ASSERT_EQ(0, fsync(fd));
		ASSERT_EQ(6 * 256, only_region_crc_bytes());
		/* The CRCs check what comes back. */
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(-1, kvt_check(p, MiB, 0, 142));
		munmap(p, MiB);
	}
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, kvt_pread_page(fd, 256 * MiB, 141));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	close(fd);
}

/*
 * Evicted pages go back to the kernel: after 128 MiB went through a 4 MiB
 * pool twice (some 64000 evictions), free memory is back where it was once
 * the region is gone, give or take 96 MiB (freed pages can sit in the
 * allocator's per-CPU lists, which MemFree does not count; up to 72 MiB was
 * seen). A lost page reference per eviction keeps some 250 MiB (126 MiB
 * was seen with half this size).
 */
TEST_F_TIMEOUT(tier, evicted_pages_are_freed, 300)
{
	size_t len = 128 * MiB;
	long long before, after;
	unsigned char *p;

	before = mem_free_kb();
	ASSERT_GT(before, 0);
	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 131);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 131));
	ASSERT_GT(kvt_stat(0, "evictions_dirty") + kvt_stat(0, "evictions_clean"),
		  (long long)(len / PAGE));
	munmap(p, len);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	after = mem_free_kb();
	TH_LOG("MemFree before %lld kB, after %lld kB", before, after);
	ASSERT_GT(after, before - 96 * 1024);
}

/*
 * Pages eviction frees are kept as spares and reused for the next pages
 * read in (no second zeroing by the allocator): a pass at 2x the budget
 * reuses them, every byte reads back right; a fresh region's zero-fill
 * faults, served from spares that held those bytes, read as zero; the
 * shrinker and detach give them back (the fixture's teardown checks the
 * tier holds nothing).
 */
TEST_F_TIMEOUT(tier, evicted_pages_are_reused, 300)
{
	size_t len = 2 * BUDGET_MB * MiB, zlen = MiB, off;
	long long r0 = kvt_stat(0, "pages_reused"), r1, t0;
	unsigned char *p, *z;
	int zfd, bad = 0;

	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 77);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 77));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 77));
	r1 = kvt_stat(0, "pages_reused");
	TH_LOG("two passes at 2x the budget: %lld pages reused", r1 - r0);
	ASSERT_GT(r1, r0);

	/* A fresh region in another file: zero-fill from those spares. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	zfd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(zfd, 0);
	z = kvt_map_region(zfd, zlen, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, z);
	r1 = kvt_stat(0, "pages_reused");
	for (off = 0; off < zlen; off++)
		bad += z[off] != 0;
	TH_LOG("zero-fill of %zu pages: %lld from spares, %d bytes not zero",
	       zlen / PAGE, kvt_stat(0, "pages_reused") - r1, bad);
	ASSERT_GT(kvt_stat(0, "pages_reused"), r1);
	ASSERT_EQ(0, bad);
	munmap(z, zlen);
	close(zfd);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 77));

	/*
	 * The shrinker takes the spares, and for a second after it asked
	 * none is kept: evictions right after it free their pages.
	 */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_GT(kvt_stat(0, "spare_pages"), 0);
	zfd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	ASSERT_GE(zfd, 0);
	t0 = kvt_now_ms();
	ASSERT_EQ(1, write(zfd, "2", 1));
	close(zfd);
	ASSERT_EQ(0, kvt_stat(0, "spare_pages"));
	ASSERT_EQ(-1, kvt_check(p, 2 * MiB, 0, 77));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	TH_LOG("after the shrinker: %lld spares, %lld ms later",
	       kvt_stat(0, "spare_pages"), kvt_now_ms() - t0);
	if (kvt_now_ms() - t0 < 900)
		ASSERT_EQ(0, kvt_stat(0, "spare_pages"));
	munmap(p, len);
}

/*
 * The 64 MiB region of extents_hold_runs_of_evicted_pages, out of the pool:
 * its 256 groups are extents, so the kernel holds far fewer than the 256
 * leaf nodes a per-page map takes more than at @n0 (-1: not measured),
 * and the gauge's page maps stay small too (per page: 262 nodes).
 */
static void check_extents(struct __test_metadata *_metadata, const char *when,
			  long long n0)
{
	long long n1 = kvt_xa_nodes_settled();

	TH_LOG("%s: %lld xarray nodes more (a leaf per 64 pages: 256), page maps %lld bytes",
	       when, n1 - n0, kvt_meta_col(0, 2));
	if (n0 >= 0)
		ASSERT_LT(n1 - n0, 64);
	ASSERT_LT(kvt_meta_col(0, 2), 24 * 576);
}

/*
 * A region whose pages are on the namespace in runs costs its CRCs, not a
 * map per page (kmod/mapext.c): 64 MiB written in order, a MiB at a time
 * written back (fsync: consecutive slots) and evicted, is 256 groups of 64
 * pages in consecutive slots, each one xarray entry instead of a 576-byte
 * leaf node. The kernel's count of xarray nodes grows by far fewer than
 * the 256 leaves a per-page map takes, and so does the metadata gauge's
 * page maps. Pages read back, and pages rewritten here and there (a
 * volatile region's page keeps its slot), split their extents: every
 * byte reads back, and evicted again the groups are extents again. A
 * direct write (checksum off, aligned) splits the extents it lands in and
 * makes new ones of its run. (Written through the mapping under budget
 * pressure instead, write-back batches of the stall and the background
 * worker interleave their slots, and some groups stay per page.)
 */
TEST_F_TIMEOUT(tier, extents_hold_runs_of_evicted_pages, 300)
{
	size_t len = 64 * MiB, off;
	struct kvtier_region_create rc = { .size = len };
	long long n0, dw;
	unsigned char *p, *chunk, buf[PAGE];
	unsigned int i;

	/* -1 without /proc/slabinfo: the gauge's checks only. */
	n0 = kvt_xa_nodes_settled();
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(0, posix_memalign((void **)&chunk, PAGE, MiB));
	for (off = 0; off < len; off += MiB) {
		kvt_fill(chunk, MiB, off, 157);
		ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, chunk, MiB, off));
		ASSERT_EQ(0, fsync(self->fd));
		ASSERT_EQ(0, posix_fadvise(self->fd, off, MiB, POSIX_FADV_DONTNEED));
	}
	p = kvt_map_region(self->fd, len, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
	check_extents(_metadata, "64 MiB evicted", n0);

	/* Read back: split as pages come in; every byte right. */
	ASSERT_EQ(-1, kvt_check(p, len, 0, 157));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));

	/* One page in every 16 rewritten, through the mapping and pwrite. */
	for (i = 0, off = 5 * PAGE; off < len; off += 16 * PAGE, i++) {
		memset(buf, 0xa0 + (i & 15), sizeof(buf));
		if (i & 1) {
			ASSERT_EQ((ssize_t)PAGE, pwrite(self->fd, buf, PAGE, off));
		} else {
			memcpy(p + off, buf, PAGE);
		}
	}
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	check_extents(_metadata, "rewritten and evicted again", n0);

	/* A direct write over four groups: new slots, extents again. */
	ASSERT_EQ(0, kvt_knob(0, "checksum", 0));
	dw = kvt_stat(0, "direct_write_pages");
	kvt_fill(chunk, MiB, 8 * MiB, 158);
	ASSERT_EQ((ssize_t)MiB, pwrite(self->fd, chunk, MiB, 8 * MiB));
	TH_LOG("direct write: %lld pages, page maps %lld bytes",
	       kvt_stat(0, "direct_write_pages") - dw, kvt_meta_col(0, 2));
	ASSERT_EQ((long long)(MiB / PAGE), kvt_stat(0, "direct_write_pages") - dw);
	ASSERT_LT(kvt_meta_col(0, 2), 24 * 576);

	for (i = 0, off = 0; off < len; off += PAGE) {
		ASSERT_EQ((ssize_t)PAGE, pread(self->fd, buf, PAGE, off));
		if (off >= 8 * MiB && off < 9 * MiB) {
			ASSERT_EQ(-1, kvt_check(buf, PAGE, off, 158));
		} else if ((off / PAGE) % 16 == 5) {
			ASSERT_EQ(0xa0 + (i & 15), buf[0]);
			ASSERT_EQ(buf[0], buf[PAGE - 1]);
		} else {
			ASSERT_EQ(-1, kvt_check(buf, PAGE, off, 157));
		}
		i += (off / PAGE) % 16 == 5;
	}
	ASSERT_EQ(-1, kvt_check(p + 8 * MiB, MiB, 8 * MiB, 158));
	free(chunk);
	munmap(p, len);
}

TEST_F_TIMEOUT(tier, knob_errors, 300)
{
	static const struct { const char *knob, *val; } bad[] = {
		{ "host_budget_mb", "0" }, { "host_budget_mb", "-1" },
		{ "host_budget_mb", "99999999" }, { "host_budget_mb", "x" },
		{ "watermark_high", "101" }, { "watermark_high", "0" },
		{ "watermark_low", "100" }, { "watermark_low", "95" },
		{ "readahead_kb", "6" }, { "readahead_kb", "2048" },
		{ "writeback_batch_kb", "0" }, { "writeback_batch_kb", "5" },
		{ "max_inflight_kb", "0" }, { "discard", "maybe" },
		{ "discard", "2" }, { "checksum", "2" }, { "checksum", "on" },
		{ "pin_budget_mb", "-1" }, { "pin_budget_mb", "99999999" },
		{ "dirty_background_pct", "100" },
		{ "dirty_background_pct", "-1" },
		{ "dirty_background_pct", "half" },
	};
	char before[64], after[64];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(0, kvt_tier_read(0, bad[i].knob, before, sizeof(before)));
		TH_LOG("%s=%s", bad[i].knob, bad[i].val);
		ASSERT_EQ(-EINVAL, kvt_tier_write(0, bad[i].knob, bad[i].val));
		ASSERT_EQ(0, kvt_tier_read(0, bad[i].knob, after, sizeof(after)));
		ASSERT_STREQ(before, after);
	}
	/* Defaults and good values. */
	ASSERT_EQ(90, kvt_tier_num(0, "watermark_high"));
	ASSERT_EQ(75, kvt_tier_num(0, "watermark_low"));
	ASSERT_EQ(512, kvt_tier_num(0, "readahead_kb"));
	ASSERT_EQ(50, kvt_tier_num(0, "dirty_background_pct"));
	ASSERT_EQ(0, kvt_knob(0, "watermark_low", 50));
	ASSERT_EQ(0, kvt_knob(0, "watermark_high", 60));
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));
	ASSERT_EQ(0, kvt_tier_write(0, "discard", "0"));
	ASSERT_EQ(0, kvt_tier_num(0, "discard"));
}

TEST_HARNESS_MAIN
