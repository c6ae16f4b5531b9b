// SPDX-License-Identifier: GPL-2.0
/*
 * Inspection tests: debugfs stats, latency, io and regions files, the
 * refault signal, tracepoints, and the sticky first error and state.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/fs.h>
#include <linux/kvtier.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define DBG		"/sys/kernel/debug/kvtier/kvtier0/"
#define TRACEFS		"/sys/kernel/tracing/"

/*
 * Histogram line @name of debugfs file @file ("buckets N", then rows of
 * N counts and their sum): the total of the counts, the number of counts
 * in *@nbuckets, the row's sum in *@sum and, for the latency file, the
 * bounds the counts put on that sum in [*@lo, *@hi) nanoseconds (bucket
 * 0 is below 1 us, bucket i from 2^(i-1) to 2^i us, the last unbounded).
 */
static long long hist_read(const char *file, const char *name, int *nbuckets,
			   long long *sum, long long *lo, long long *hi)
{
	long long total = -1, v[64];
	char line[1024], *tok, *save;
	int buckets = 0, n, i;
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		tok = strtok_r(line, " \n", &save);
		if (tok && !strcmp(tok, "buckets"))
			buckets = atoi(strtok_r(NULL, " \n", &save));
		if (!tok || strcmp(tok, name))
			continue;
		for (n = 0; n < 64 && (tok = strtok_r(NULL, " \n", &save)); n++)
			v[n] = atoll(tok);
		if (n != buckets + 1)
			break;		/* not N counts and a sum */
		total = 0;
		*lo = *hi = 0;
		for (i = 0; i < buckets; i++) {
			total += v[i];
			*lo += i ? v[i] * (1000LL << (i - 1)) : 0;
			if (i < buckets - 1)
				*hi += v[i] * (1000LL << i);
			else if (v[i])
				*hi = LLONG_MAX;	/* the last bucket has no bound */
		}
		*nbuckets = buckets;
		*sum = v[buckets];
	}
	fclose(f);
	return total;
}

static long long hist_sum(const char *file, const char *name, int *nbuckets)
{
	long long sum, lo, hi;

	return hist_read(file, name, nbuckets, &sum, &lo, &hi);
}

static int file_contains(const char *file, const char *needle)
{
	char line[1024];
	int found = 0;
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

KVT_TIER_FIXTURE("num_tiers=2", 4, , ,
		 EXPECT_EQ(0, kvt_tier_num(0, "resident"));
		 kvt_tier_write(1, "backing_dev", "none");
		 EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none")));

/* Exact counters match what a scripted workload did. */
TEST_F_TIMEOUT(tier, counters_match_workload, 300)
{
	size_t len = 2 * MiB, pages = len / PAGE;
	unsigned char *p;
	int n;

	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* Writing every page of a fresh region: one zero-fill fault each. */
	kvt_fill(p, len, 0, 1);
	ASSERT_EQ((long long)pages, kvt_stat(0, "faults_zero_fill"));
	ASSERT_EQ(0, kvt_stat(0, "faults_major"));
	ASSERT_EQ((long long)pages, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ((long long)pages, kvt_stat(0, "writeback_pages"));
	ASSERT_EQ((long long)len, kvt_stat(0, "writeback_bytes"));
	ASSERT_EQ((long long)len, kvt_tier_num(0, "used"));
	ASSERT_EQ(1, kvt_stat(0, "flushes"));
	/* Drop it all and read it back: every page read exactly once. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ((long long)pages, kvt_stat(0, "evictions_clean"));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 1));
	ASSERT_EQ((long long)pages, kvt_stat(0, "read_pages"));
	ASSERT_EQ((long long)len, kvt_stat(0, "read_bytes"));
	ASSERT_EQ((long long)pages, kvt_stat(0, "readahead_pages") +
		  kvt_stat(0, "faults_major"));

	/* Every fault is in one latency histogram, every bio in io. */
	ASSERT_EQ(kvt_stat(0, "faults_minor"), hist_sum(DBG "latency", "fault_minor", &n));
	ASSERT_EQ(26, n);
	ASSERT_EQ(kvt_stat(0, "faults_major"), hist_sum(DBG "latency", "fault_major", &n));
	ASSERT_EQ(kvt_stat(0, "faults_zero_fill"), hist_sum(DBG "latency", "fault_zero", &n));
	ASSERT_EQ(kvt_stat(0, "read_bios"), hist_sum(DBG "latency", "read", &n));
	ASSERT_EQ(kvt_stat(0, "writeback_bios"), hist_sum(DBG "latency", "write", &n));
	ASSERT_EQ(kvt_stat(0, "read_bios"), hist_sum(DBG "io", "read", &n));
	ASSERT_EQ(9, n);
	ASSERT_EQ(kvt_stat(0, "writeback_bios"), hist_sum(DBG "io", "write", &n));
	/* Each row's sum: the pages of its bios, the time of its events. */
	{
		static const char *const lat[] = { "fault_major", "fault_zero", "read", "write" };
		long long sum, lo, hi;
		unsigned int i;

		ASSERT_EQ(kvt_stat(0, "read_bios"), hist_read(DBG "io", "read", &n, &sum, &lo, &hi));
		ASSERT_EQ(kvt_stat(0, "read_pages"), sum);
		ASSERT_EQ(kvt_stat(0, "writeback_bios"), hist_read(DBG "io", "write", &n, &sum, &lo, &hi));
		ASSERT_EQ(kvt_stat(0, "writeback_pages"), sum);
		for (i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
			ASSERT_LT(0, hist_read(DBG "latency", lat[i], &n, &sum, &lo, &hi));
			if (sum < lo || sum >= hi)
				TH_LOG("%s: sum %lld ns outside [%lld, %lld) of its buckets",
				       lat[i], sum, lo, hi);
			ASSERT_LE(lo, sum);
			ASSERT_GT(hi, sum);
		}
	}

	/* Writing 0 resets the latency histograms; anything else is refused. */
	ASSERT_EQ(-EINVAL, kvt_write(DBG "latency", "1"));
	ASSERT_EQ(-EINVAL, kvt_write(DBG "latency", "x"));
	ASSERT_NE(0, hist_sum(DBG "latency", "fault_zero", &n));
	ASSERT_EQ(0, kvt_write(DBG "latency", "0"));
	ASSERT_EQ(0, hist_sum(DBG "latency", "fault_zero", &n));
	{
		long long sum, lo, hi;

		ASSERT_EQ(0, hist_read(DBG "latency", "read", &n, &sum, &lo, &hi));
		ASSERT_EQ(0, sum);
	}
	munmap(p, len);
}

/*
 * Every commit of persistent regions is in one commit histogram, by what it
 * wrote: journal_commits of them in commit_journal, the other commits in
 * commit_checkpoint. Each page is written once, so no commit runs in the
 * background (only a region letting go of slots starts one).
 */
TEST_F_TIMEOUT(tier, commit_histograms, 300)
{
	const int n_sync = 4;
	unsigned char page[PAGE], back[PAGE];
	long long j0, c0, dj, dc, hj, hc, sum, lo, hi;
	int fd, i, n;

	ASSERT_EQ(0, kvt_write(DBG "latency", "0"));
	ASSERT_EQ(0, hist_sum(DBG "latency", "commit_journal", &n));
	ASSERT_EQ(26, n);
	ASSERT_EQ(0, hist_sum(DBG "latency", "commit_checkpoint", &n));
	j0 = kvt_stat(0, "journal_commits");
	c0 = kvt_stat(0, "commits");
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kvt_bind_name(fd, "inspect-commits", MiB,
				   KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, 0600));
	for (i = 0; i < n_sync; i++) {
		kvt_fill(page, PAGE, (unsigned long long)i * PAGE, 7);
		ASSERT_EQ(PAGE, pwrite(fd, page, PAGE, (off_t)i * PAGE));
		ASSERT_EQ(0, fsync(fd));
	}
	dj = kvt_stat(0, "journal_commits") - j0;
	dc = kvt_stat(0, "commits") - c0;
	hj = hist_read(DBG "latency", "commit_journal", &n, &sum, &lo, &hi);
	hc = hist_sum(DBG "latency", "commit_checkpoint", &n);
	TH_LOG("commits %lld (journal %lld); histograms: journal %lld (%lld ns), checkpoint %lld",
	       dc, dj, hj, sum, hc);
	/* The create and each fsync commit; a version-2 store journals them. */
	ASSERT_LE(1 + n_sync, dc);
	ASSERT_LT(0, dj);
	ASSERT_EQ(dj, hj);
	ASSERT_EQ(dc - dj, hc);
	ASSERT_LE(lo, sum);
	ASSERT_GT(hi, sum);
	/* And the bytes those commits recorded read back. */
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	for (i = 0; i < n_sync; i++) {
		kvt_fill(page, PAGE, (unsigned long long)i * PAGE, 7);
		ASSERT_EQ(PAGE, pread(fd, back, PAGE, (off_t)i * PAGE));
		ASSERT_EQ(0, memcmp(page, back, PAGE));
	}
	ASSERT_EQ(0, kvt_unlink_name(fd, "inspect-commits"));
	close(fd);
}

/* A region appears in debugfs regions with its owner and sizes, and goes. */
TEST_F_TIMEOUT(tier, regions_file, 300)
{
	size_t len = 8 * MiB;
	char line[256], name[16];
	unsigned long long id, size, res, dirty, ns, pinned, faults, refaults;
	unsigned int owner, idle;
	unsigned char *p;
	int found = 0;
	FILE *f;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 2);
	f = fopen(DBG "regions", "re");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	ASSERT_STREQ("kvtier-regions 1\n", line);
	ASSERT_NE(NULL, fgets(line, sizeof(line), f));
	while (fgets(line, sizeof(line), f)) {
		ASSERT_EQ(11, sscanf(line, "%llu %15s %u %llu %llu %llu %llu %llu %llu %llu %u",
				     &id, name, &owner, &size, &res, &dirty, &ns,
				     &pinned, &faults, &refaults, &idle));
		found++;
	}
	fclose(f);
	ASSERT_EQ(1, found);
	ASSERT_STREQ("-", name);
	ASSERT_EQ(getuid(), owner);
	ASSERT_EQ(len, size);
	ASSERT_LE(res, 4 * MiB);
	ASSERT_GT(res, 0);
	ASSERT_LE(dirty, res);
	ASSERT_GE(ns, len - 4 * MiB);
	ASSERT_GE(faults, len / PAGE);
	ASSERT_LT(idle, 60000);
	munmap(p, len);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, file_contains(DBG "regions", " - "));
}

/*
 * Refaults: a working set a little larger than the budget refaults on
 * every pass; raise the budget live and they stop.
 */
TEST_F_TIMEOUT(tier, refaults_stop_when_budget_fits, 300)
{
	size_t len = 6 * MiB;
	long long before;
	unsigned char *p;
	int pass;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 3);
	for (pass = 0; pass < 3; pass++)
		ASSERT_EQ(-1, kvt_check(p, len, 0, 3));
	TH_LOG("refaults at a 4 MiB budget: %lld", kvt_stat(0, "refaults"));
	ASSERT_GT(kvt_stat(0, "refaults"), (long long)(len / PAGE));

	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 3));	/* brings it all in */
	before = kvt_stat(0, "refaults");
	for (pass = 0; pass < 3; pass++)
		ASSERT_EQ(-1, kvt_check(p, len, 0, 3));
	ASSERT_EQ(before, kvt_stat(0, "refaults"));

	/*
	 * A stream much larger than the budget is not thrashing. The
	 * readahead window stays well under the budget: a 512 KiB window in
	 * a 1 MiB pool can lose pages to eviction before the reader reaches
	 * them when the host is slow, and reading those again is a refault.
	 */
	munmap(p, len);
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 128));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 1));
	close(self->fd);
	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
	len = 16 * MiB;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 4);
	before = kvt_stat(0, "refaults");
	ASSERT_EQ(-1, kvt_check(p, len, 0, 4));
	ASSERT_EQ(before, kvt_stat(0, "refaults"));
	munmap(p, len);
}

static int trace_write(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "%s", file);
	return kvt_write(path, val);
}

/* Enabling the events through tracefs records them during a fault storm. */
TEST_F_TIMEOUT(tier, tracepoints_record_a_storm, 300)
{
	static const char * const events[] = {
		"kvtier_fault: tier=0", " major ", " zero ", "kvtier_evict:",
		"kvtier_writeback:", "kvtier_read_done:",
	};
	size_t len = 8 * MiB, i;
	unsigned char *p;

	if (!kvt_exists(TRACEFS "events/kvtier"))
		SKIP(return, "tracefs not mounted or no kvtier events");
	ASSERT_EQ(0, trace_write("tracing_on", "0"));
	ASSERT_EQ(0, trace_write("trace", ""));
	ASSERT_EQ(0, trace_write("buffer_size_kb", "4096"));
	ASSERT_EQ(0, trace_write("events/kvtier/enable", "1"));
	ASSERT_EQ(0, trace_write("tracing_on", "1"));

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 5);
	ASSERT_EQ(-1, kvt_check(p, len, 0, 5));
	munmap(p, len);

	ASSERT_EQ(0, trace_write("tracing_on", "0"));
	ASSERT_EQ(0, trace_write("events/kvtier/enable", "0"));
	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		TH_LOG("looking for '%s'", events[i]);
		ASSERT_EQ(1, file_contains(TRACEFS "trace", events[i]));
	}
	ASSERT_EQ(0, trace_write("trace", ""));
	/* As found: tracing on (the kernel's default), the buffer cleared. */
	ASSERT_EQ(0, trace_write("tracing_on", "1"));
}

/*
 * A namespace whose reads fail (device-mapper error target swapped in):
 * the fault gets SIGBUS, pread EIO, the tier keeps the first error and
 * reports state "error"; the other tier is untouched; detach still works.
 */
TEST_F_TIMEOUT(tier, read_error_is_sticky, 300)
{
	const char *ns1 = kvt_ns("KVTIER_NS1");
	size_t len = 2 * MiB;
	const char *why = kvt_dm_missing("error");
	unsigned char *p;
	char buf[64];
	int fd1;

	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kvt_dm_linear("kvt-err", ns1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "/dev/mapper/kvt-err"));
	ASSERT_EQ(0, kvt_tier_read(1, "error", buf, sizeof(buf)));
	ASSERT_STREQ("0", buf);

	fd1 = kvt_tier_open(1, O_RDWR);
	ASSERT_GE(fd1, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd1, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 6);
	ASSERT_EQ(0, fsync(fd1));
	ASSERT_EQ(0, posix_fadvise(fd1, 0, 0, POSIX_FADV_DONTNEED));

	ASSERT_EQ(0, kvt_dm_table("kvt-err", ns1, "error"));

	ASSERT_EQ(1, kvt_touch_or_sigbus(p + PAGE));
	ASSERT_EQ(-1, pread(fd1, buf, 8, 3 * PAGE));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, kvt_tier_read(1, "state", buf, sizeof(buf)));
	ASSERT_STREQ("error", buf);
	ASSERT_EQ(0, kvt_tier_read(1, "error", buf, sizeof(buf)));
	ASSERT_STREQ("-5", buf);
	ASSERT_GT(kvt_stat(1, "io_errors"), 0);

	/* Tier 0 is unaffected. */
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("attached", buf);

	/* Reads work again once the device does: nothing stuck. */
	ASSERT_EQ(0, kvt_dm_table("kvt-err", ns1, "linear %s 0", ns1));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 6));
	/* The first error is kept until detach. */
	ASSERT_EQ(0, kvt_tier_read(1, "error", buf, sizeof(buf)));
	ASSERT_STREQ("-5", buf);

	munmap(p, len);
	close(fd1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_read(1, "state", buf, sizeof(buf)));
	ASSERT_STREQ("detached", buf);
	ASSERT_EQ(0, kvt_dm_remove("kvt-err"));
}

/*
 * Bytes changed on the namespace behind the tier's back are never handed
 * out: with checksum on, the fault gets SIGBUS and pread EIO, counted and
 * kept as the sticky error; another region's pages are untouched. With
 * checksum off, the changed bytes come back (the knob really decides).
 */
TEST_F_TIMEOUT(tier, checksum_catches_corruption, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	struct kvtier_disk_super sb;
	unsigned char *a, *b, *junk;
	char buf[64];
	int fb;

	ASSERT_EQ(1, kvt_tier_num(0, "checksum"));
	a = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, a);
	kvt_fill(a, MiB, 0, 7);
	ASSERT_EQ(0, fsync(self->fd));
	/* The first write-back of a fresh tier takes slots 0..255. */
	ASSERT_EQ((long long)MiB, kvt_tier_num(0, "used"));
	fb = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fb, 0);
	b = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fb, 0);
	ASSERT_NE(MAP_FAILED, b);
	kvt_fill(b, MiB, 0, 8);
	ASSERT_EQ(0, fsync(fb));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(fb, 0, 0, POSIX_FADV_DONTNEED));

	/*
	 * Overwrite a's slots through the block device (no exclusive claim):
	 * data slot s is block data_start + s of the namespace.
	 */
	ASSERT_EQ(0, kvt_super_read(ns0, &sb, NULL));
	ASSERT_EQ(0, posix_memalign((void **)&junk, 4096, MiB));
	memset(junk, 0xa5, MiB);
	ASSERT_EQ(0, kvt_dev_write(ns0, junk, MiB, kvt_slot_offset(&sb, 0)));

	ASSERT_EQ(1, kvt_touch_or_sigbus(a + 5 * PAGE));
	ASSERT_EQ(-1, pread(self->fd, buf, 8, 9 * PAGE));
	ASSERT_EQ(EIO, errno);
	ASSERT_GT(kvt_stat(0, "checksum_errors"), 0);
	ASSERT_EQ(0, kvt_tier_read(0, "error", buf, sizeof(buf)));
	ASSERT_STREQ("-74", buf);	/* EBADMSG */
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("error", buf);
	/* The other region reads back intact. */
	ASSERT_EQ(-1, kvt_check(b, MiB, 0, 8));

	/* Checksums off: the changed bytes are what the namespace holds. */
	ASSERT_EQ(0, kvt_tier_write(0, "checksum", "0"));
	ASSERT_EQ(0, memcmp(a + 5 * PAGE, junk, PAGE));
	ASSERT_EQ(0, kvt_tier_write(0, "checksum", "1"));
	free(junk);
	munmap(a, MiB);
	munmap(b, MiB);
	close(fb);
}

TEST_HARNESS_MAIN
