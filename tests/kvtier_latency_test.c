// SPDX-License-Identifier: GPL-2.0
/*
 * Latency injected below a tier shows in what kvtierctl stat reports: the
 * tier is attached to a device-mapper delay target over KVTIER_NS1, a
 * region four times the host budget is read over and over (every access
 * a major fault: readahead is off), and `kvtierctl stat --json` samples
 * the fault latency percentiles while it runs, once with no delay and
 * once with DELAY_MS added to every read. With the delay, every sample's
 * p99 and p50 must reach DELAY_MS and the p99 be CLEAR_FACTOR times the
 * median p99 without it (stat reports the upper bound of a power-of-two
 * histogram bucket, so "reach" is at bucket resolution), and the major
 * fault histogram of that phase must hold nothing faster than the delay
 * allows. Every page read is checked against the pattern written, during
 * both phases and once more at the end: the bytes survive the table swaps.
 *
 * Needs dmsetup, the dm-delay target and debugfs; skips (with the reason)
 * without them. kvtierctl is <repo>/tools/kvtierctl, found as
 * kvtierctl_test.c finds it: <repo> is three levels above this binary
 * (<repo>/build/tests/).
 */
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define DM_NAME		"kvt-lat"
#define DM_DEV		"/dev/mapper/" DM_NAME
#define BUDGET_MB	4
#define REGION		(4 * BUDGET_MB * MiB)
#define SEED		0x1a7e
/*
 * Under TCG on a busy 2-core host the no-delay p99 of one second's faults
 * reaches 16-64 ms (a preempted vCPU), so the delay must sit well above
 * that for a log2 histogram to tell them apart by CLEAR_FACTOR. (50 ms or
 * more also keeps 6.8+ dm-delay on its timer: below 50 ms it serves delays
 * from a kthread that polls while bios wait, taking a vCPU.)
 */
#define DELAY_MS	500
#define DELAY_STR	"500"
#define DELAY_US	(DELAY_MS * 1000.0)
/* "Clearly above": at least two histogram buckets (4x) over the baseline. */
#define CLEAR_FACTOR	4.0
#define SAMPLES		3
#define PHASE_SECS	120	/* a phase that takes longer has hung */
#define LAT_BUCKETS	26


static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Number @key of a kvtierctl stat --json line in *@v; 0 if absent or null. */
static int json_num(const char *line, const char *key, double *v)
{
	char pat[64];
	const char *p;
	char *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	*v = strtod(p, &end);
	return end != p;
}

/* The fault_major line of tier 0's debugfs latency histograms, in @c. */
static int major_hist(unsigned long long *c)
{
	char line[1024], *p, *end;
	int i, ret = -1;
	FILE *f;

	f = fopen("/sys/kernel/debug/kvtier/kvtier0/latency", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "fault_major ", 12))
			continue;
		p = line + 12;
		for (i = 0; i < LAT_BUCKETS; i++, p = end) {
			c[i] = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		ret = i == LAT_BUCKETS ? 0 : -1;
		break;
	}
	fclose(f);
	return ret;
}

/* What one phase saw. */
struct phase {
	int samples;		/* stat lines with faults in them */
	int p99s;		/* of them, lines with a p99 */
	double p99_min, p99_max, p50_min, p50_max, major_min;
	double p99[SAMPLES];	/* each line's p99, in order */
	double secs;		/* how long it took */
	long long majors;	/* faults_major during the phase */
	long long bad;		/* pages that did not read back as written */
	unsigned long long hist[LAT_BUCKETS];	/* fault_major growth */
	char out[4096];		/* kvtierctl's output */
};

FIXTURE(lat) {
	const char *ns1;
	unsigned long long sectors;
	bool dm_created;
	int fd;
	unsigned char *map;
	FILE *ctl;
};

FIXTURE_SETUP(lat)
{
	char path[PATH_MAX + 32];
	unsigned long long bytes;
	const char *why;
	int fd;

	/* Nothing to undo yet: a failed setup gets no teardown. */
	self->fd = -1;
	self->map = NULL;
	self->ctl = NULL;
	self->dm_created = false;
	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	self->ns1 = kvt_ns("KVTIER_NS1");
	if (!self->ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	ASSERT_NE(NULL, kvt_repo_root());
	snprintf(path, sizeof(path), "%s/tools/kvtierctl", kvt_repo_root());
	if (access(path, X_OK))
		SKIP(return, "tools/kvtierctl not built (make tools)");
	why = kvt_dm_missing("delay");
	if (why)
		SKIP(return, "%s", why);
	if (!kvt_exists("/sys/kernel/debug"))
		SKIP(return, "debugfs not available");
	fd = open(self->ns1, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, BLKGETSIZE64, &bytes));
	close(fd);
	self->sectors = bytes / 512;
	ASSERT_GT(self->sectors, 0);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_FALSE(kvt_exists(DM_DEV));
}

FIXTURE_TEARDOWN(lat)
{
	if (self->ctl)
		pclose(self->ctl);
	if (self->map)
		munmap(self->map, REGION);
	if (self->fd >= 0)
		close(self->fd);
	if (kvt_loaded()) {
		EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
		EXPECT_EQ(0, kvt_unload());
	}
	if (self->dm_created)
		EXPECT_EQ(0, kvt_dm_remove(DM_NAME));
}

/* Read delay @ms on every read of the dm device (writes: none). */
static const char *delay_table(const char *ns, unsigned long long sectors,
			       int ms, char *buf, size_t len)
{
	snprintf(buf, len, "0 %llu delay %s 0 %d %s 0 0", sectors, ns, ms, ns);
	return buf;
}

static int set_delay(const char *ns, unsigned long long sectors, int ms)
{
	char t[256];

	delay_table(ns, sectors, ms, t, sizeof(t));
	/* Resuming a device with a loaded table suspends it, swaps, resumes. */
	return kvt_run("dmsetup load " DM_NAME " --table '%s' && dmsetup resume " DM_NAME, t);
}

/*
 * Read the region page by page, round and round, checking every page,
 * while `kvtierctl stat --json -i 1 -c SAMPLES 0` runs; collect its lines.
 * Returns kvtierctl's exit status, or -1.
 */
static int phase_run(FIXTURE_DATA(lat) *self, struct phase *ph)
{
	unsigned long long h0[LAT_BUCKETS], h1[LAT_BUCKETS];
	size_t n = 0, page = 0, pages = REGION / PAGE;
	struct pollfd pfd = { .events = POLLIN };
	double start = now_s(), deadline = start + PHASE_SECS, v;
	long long m0 = kvt_stat(0, "faults_major");
	char cmd[PATH_MAX * 2 + 128], *line, *save = NULL;
	ssize_t r;
	int st, i;

	memset(ph, 0, sizeof(*ph));
	ph->p99_min = 1e300;
	ph->p50_min = 1e300;
	ph->major_min = 1e300;
	if (major_hist(h0))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "LD_LIBRARY_PATH=%s/lib exec %s/tools/kvtierctl stat --json -i 1 -c %d 0",
		 kvt_repo_root(), kvt_repo_root(), SAMPLES);
	self->ctl = popen(cmd, "r");
	if (!self->ctl)
		return -1;
	pfd.fd = fileno(self->ctl);
	for (;;) {
		if (kvt_check(self->map + page * PAGE, PAGE, page * PAGE, SEED) != -1)
			ph->bad++;
		page = (page + 1) % pages;
		if (poll(&pfd, 1, 0) > 0) {
			r = read(pfd.fd, ph->out + n, sizeof(ph->out) - 1 - n);
			if (r <= 0)
				break;	/* EOF: kvtierctl is done */
			n += r;
		}
		if (now_s() > deadline)
			break;
	}
	ph->out[n] = '\0';
	st = pclose(self->ctl);
	self->ctl = NULL;
	ph->secs = now_s() - start;
	ph->majors = kvt_stat(0, "faults_major") - m0;
	if (major_hist(h1))
		return -1;
	for (i = 0; i < LAT_BUCKETS; i++)
		ph->hist[i] = h1[i] - h0[i];

	for (line = strtok_r(ph->out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!json_num(line, "faults_per_s", &v) || v <= 0)
			continue;
		ph->samples++;
		if (json_num(line, "major_pct", &v) && v < ph->major_min)
			ph->major_min = v;
		if (!json_num(line, "fault_p99_us", &v))
			continue;
		if (ph->p99s < SAMPLES)
			ph->p99[ph->p99s] = v;
		ph->p99s++;
		if (v < ph->p99_min)
			ph->p99_min = v;
		if (v > ph->p99_max)
			ph->p99_max = v;
		if (!json_num(line, "fault_p50_us", &v))
			continue;
		if (v < ph->p50_min)
			ph->p50_min = v;
		if (v > ph->p50_max)
			ph->p50_max = v;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void phase_log(struct __test_metadata *_metadata, const char *name,
		      const struct phase *ph)
{
	char hist[512];
	size_t n = 0;
	int i;

	for (i = 0; i < LAT_BUCKETS; i++)
		if (ph->hist[i])
			n += snprintf(hist + n, sizeof(hist) - n, " <%.0fus:%llu",
				      (double)(1ULL << i), ph->hist[i]);
	hist[n] = '\0';
	TH_LOG("%s: %.1f s, %d samples, p99 %.0f..%.0f us, p50 %.0f..%.0f us, major%% min %.1f, "
	       "%lld major faults, %lld bad pages; fault_major histogram:%s",
	       name, ph->secs, ph->samples, ph->p99_min, ph->p99_max, ph->p50_min, ph->p50_max,
	       ph->major_min, ph->majors, ph->bad, hist);
}

/* The median of the phase's p99s: one sample caught in a host hiccup is not the run. */
static double p99_median(const struct phase *ph)
{
	double v[SAMPLES], x;
	int n = ph->p99s < SAMPLES ? ph->p99s : SAMPLES, i, j;

	memcpy(v, ph->p99, sizeof(v));
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return n ? v[n / 2] : 0;
}

TEST_F_TIMEOUT(lat, delay_moves_p99, 600)
{
	struct phase *base, *slow;
	double t0 = now_s(), t1;
	char t[256];
	int i;

	base = calloc(2, sizeof(*base));
	ASSERT_NE(NULL, base);
	slow = base + 1;

	/* A delay target with no delay yet, formatted and attached as tier 0. */
	ASSERT_EQ(0, kvt_run("dmsetup create " DM_NAME " --table '%s'",
			 delay_table(self->ns1, self->sectors, 0, t, sizeof(t))));
	self->dm_created = true;
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	if (!kvt_exists("/sys/kernel/debug/kvtier/kvtier0/latency")) {
		free(base);
		SKIP(return, "no debugfs latency histograms");
	}
	ASSERT_EQ(0, kvt_tier_write(0, "format", DM_DEV));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", BUDGET_MB));
	/* Every miss reads its page alone: every fault of the scan is major. */
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 0));

	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
	self->map = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	kvt_fill(self->map, REGION, 0, SEED);
	/* All clean: no write-back in the measured phases. */
	ASSERT_EQ(0, fsync(self->fd));
	t1 = now_s();
	TH_LOG("set up and filled in %.1f s", t1 - t0);

	ASSERT_EQ(0, phase_run(self, base));
	phase_log(_metadata, "no delay", base);
	t1 = now_s();
	ASSERT_EQ(0, set_delay(self->ns1, self->sectors, DELAY_MS));
	TH_LOG("delay set in %.1f s", now_s() - t1);
	ASSERT_EQ(0, phase_run(self, slow));
	phase_log(_metadata, "read delay " DELAY_STR " ms", slow);
	t1 = now_s();
	ASSERT_EQ(0, set_delay(self->ns1, self->sectors, 0));
	TH_LOG("delay removed in %.1f s", now_s() - t1);

	/* The workload really faulted from the namespace, and read right. */
	EXPECT_EQ(0, base->bad);
	EXPECT_EQ(0, slow->bad);
	ASSERT_GT(base->samples, 0);
	ASSERT_GT(slow->samples, 0);
	ASSERT_EQ(base->samples, base->p99s);
	ASSERT_EQ(slow->samples, slow->p99s);
	EXPECT_GE(base->major_min, 90.0);
	EXPECT_GE(slow->major_min, 90.0);
	EXPECT_GT(base->majors, 0);
	EXPECT_GT(slow->majors, 0);

	/* The p99 kvtierctl reports moved by at least the delay, and clearly. */
	EXPECT_GE(slow->p99_min, DELAY_US);
	TH_LOG("p99: no delay, median of the samples %.0f us; delayed, lowest %.0f us",
	       p99_median(base), slow->p99_min);
	EXPECT_GE(slow->p99_min, CLEAR_FACTOR * p99_median(base));
	/* Not just the tail: the median too, which the baseline is far below. */
	EXPECT_GE(slow->p50_min, DELAY_US);
	EXPECT_LT(base->p50_max, DELAY_US);
	/*
	 * Every major fault of the delayed phase waited for a delayed read:
	 * none in a bucket that ends below 3/4 of the delay (the timer can
	 * fire a jiffy early, never a quarter of the delay early).
	 */
	for (i = 0; i < LAT_BUCKETS && (double)(1ULL << i) <= DELAY_US * 3 / 4; i++)
		EXPECT_EQ(0, slow->hist[i]) TH_LOG("bucket %d", i);

	/* Bytes round-trip: the whole region, read back at full readahead. */
	ASSERT_EQ(0, kvt_knob(0, "readahead_kb", 512));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	t1 = now_s();
	ASSERT_EQ(-1, kvt_check(self->map, REGION, 0, SEED));
	ASSERT_EQ(0, kvt_tier_num(0, "error"));
	TH_LOG("region checked in %.1f s; %.1f s in all", now_s() - t1, now_s() - t0);
	free(base);
}

TEST_HARNESS_MAIN
