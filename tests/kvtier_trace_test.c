// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier's tracepoints and the bpftrace tools that read them
 * (tools/bpftrace/): a workload that touches every event - a region one
 * and a half times the host budget is filled through a mapping (zero-fill
 * faults, budget stalls, write-back, evictions) and read back (major
 * faults, refaults), every byte checked - runs once per test while the
 * events are recorded, and what they say is compared with the tier's
 * counters (debugfs stats), which are bumped at the same places: the
 * tests fail if an event is missing, if one says something the counters
 * do not, or if the bytes did not round-trip.
 *
 *   events.fields     every event of events/kvtier/ with the fields the
 *                     admin guide documents
 *   events.trace      the tracefs ring buffer: counts and sums per event
 *                     equal the counters' deltas; kind printed in words
 *   bpftrace.*        each tool run by Debian's bpftrace around the
 *                     workload, its maps equal to the counters' deltas;
 *                     SKIP when bpftrace is not installed or cannot attach
 *
 * Needs debugfs and tracefs; KVTIER_KO and KVTIER_NS0 as every suite test.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define BUDGET_MB	8
#define REGION		(BUDGET_MB * MiB * 3 / 2)
#define SEED		0x77ace
/* A bpftrace that has not attached in this long (TCG: LLVM is slow) fails. */
#define ATTACH_S	180
/*
 * The workload takes seconds and bpftrace exits within a second of SIGINT.
 * Beyond these the test says which of them hung and where (their kernel
 * stacks), and ends both, instead of running into the harness's limit: a
 * test killed for that limit takes no teardown, and every later variant
 * then fails its setup on the module left loaded.
 */
#define WORKLOAD_S	120
#define EXIT_S		60

static const char *tracefs(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };
	static char path[64];
	unsigned int i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/kvtier", dirs[i]);
		if (kvt_exists(path))
			return dirs[i];
	}
	return NULL;
}

static int trace_write(const char *file, const char *val)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", tracefs(), file);
	return kvt_write(path, val);
}

/* The counters the events are compared with, before and after. */
static const char *const counters[] = {
	"faults_minor", "faults_zero_fill", "faults_major", "evictions_clean",
	"evictions_dirty", "writeback_pages", "writeback_bytes",
	"writeback_bios", "read_bytes", "read_bios", "budget_stalls",
	"refaults",
};
#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))

struct delta {
	long long v[NR_COUNTERS];
};

static void counters_read(struct delta *d)
{
	unsigned int i;

	for (i = 0; i < NR_COUNTERS; i++)
		d->v[i] = kvt_stat(0, counters[i]);
}

static long long delta_of(const struct delta *a, const struct delta *b,
			  const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_COUNTERS; i++)
		if (!strcmp(counters[i], name))
			return b->v[i] - a->v[i];
	return -1;
}

/*
 * Fill a fresh region of REGION bytes through a mapping, read it back and
 * check every word; the region's id in *@id. 0, or -1 if a byte was wrong.
 */
static int workload(unsigned long long *id)
{
	struct kvtier_region_info ri = { 0 };
	unsigned char *p;
	int fd, ret;

	p = kvt_map_filled(&fd, REGION, SEED);
	if (!p)
		return -1;
	ret = kvt_check(p, REGION, 0, SEED) == -1 ? 0 : -1;
	if (kvt_region_info(fd, &ri))
		ret = -1;
	*id = ri.id;
	munmap(p, REGION);
	close(fd);
	return ret;
}

/*
 * The tier the workload runs on: the background worker only starts at a
 * full pool (watermark_high 100), so the fill's charges find it full and
 * stall, every run; and no background write-back cleans pages ahead of
 * the stalls (it would stand aside only above watermark_high).
 */
static int tier_start(void)
{
	int fd = kvt_start("", BUDGET_MB);

	if (fd >= 0 && (kvt_knob(0, "watermark_high", 100) ||
			kvt_knob(0, "watermark_low", 99) ||
			kvt_knob(0, "dirty_background_pct", 0))) {
		close(fd);
		return -1;
	}
	return fd;
}

FIXTURE(events) {
	int fd;
};

FIXTURE_SETUP(events)
{
	const char *why = kvt_missing();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	self->fd = tier_start();
	ASSERT_GE(self->fd, 0);
	if (!tracefs())
		SKIP(return, "no tracefs with events/kvtier");
}

FIXTURE_TEARDOWN(events)
{
	if (tracefs()) {
		trace_write("events/kvtier/enable", "0");
		trace_write("buffer_size_kb", "1408");
	}
	if (self->fd >= 0)
		close(self->fd);
	if (kvt_loaded())
		EXPECT_EQ(0, kvt_unload());
}

/* Each event and the fields Documentation/admin-guide/kvtier.rst names. */
TEST_F(events, fields)
{
	static const struct {
		const char *event;
		const char *fields[6];
	} want[] = {
		{ "kvtier_fault", { "tier", "region", "offset", "kind", "latency_ns" } },
		{ "kvtier_evict", { "tier", "region", "offset", "dirty" } },
		{ "kvtier_writeback", { "tier", "pages", "bios", "status" } },
		{ "kvtier_read_done", { "tier", "sector", "bytes", "latency_ns", "status" } },
		{ "kvtier_write_done", { "tier", "sector", "bytes", "latency_ns", "status" } },
		{ "kvtier_budget_stall", { "tier", "wait_ns", "status" } },
		{ "kvtier_refault", { "tier", "region", "offset", "distance" } },
	};
	char path[160], buf[4096], pat[64], *line, *save;
	unsigned int i, j;
	int n;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/kvtier/%s/format", tracefs(),
			 want[i].event);
		ASSERT_EQ(0, kvt_read(path, buf, sizeof(buf))) TH_LOG("%s", path);
		for (j = 0, n = 0; j < 6 && want[i].fields[j]; j++) {
			snprintf(pat, sizeof(pat), " %s;", want[i].fields[j]);
			EXPECT_NE(NULL, strstr(buf, pat))
				TH_LOG("%s has no field %s", want[i].event, want[i].fields[j]);
			n++;
		}
		/* No undocumented field: every other "field:" is a common_ one. */
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strstr(line, "field:") && !strstr(line, "common_"))
				n--;
		EXPECT_EQ(0, n) TH_LOG("%s: fields beyond the documented ones", want[i].event);
	}
}

/* Value of "@key=" in @line, or -1 if absent. */
static long long field(const char *line, const char *key)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	return p ? strtoll(p + strlen(pat), NULL, 0) : -1;
}

/* The ring buffer's events, counted and summed as the counters are. */
TEST_F(events, trace)
{
	long long faults[3] = { 0 }, evicts = 0, wb_pages = 0, wb_batches = 0;
	long long wr_bios = 0, wr_bytes = 0, rd_bios = 0, rd_bytes = 0;
	long long stalls = 0, refaults = 0, foreign = 0, lost = -1;
	static const char *const kinds[3] = { " minor ", " zero ", " major " };
	struct delta a, b;
	unsigned long long id = 0;
	char path[128], line[512];
	unsigned int k;
	FILE *f;

	/* Whatever an earlier program left: tracing on, no filter, all kvtier. */
	ASSERT_EQ(0, trace_write("tracing_on", "1"));
	ASSERT_EQ(0, trace_write("buffer_size_kb", "16384"));
	ASSERT_EQ(0, trace_write("trace", ""));
	ASSERT_EQ(0, trace_write("set_event_pid", ""));
	ASSERT_EQ(0, trace_write("events/kvtier/filter", "0"));
	ASSERT_EQ(0, trace_write("events/kvtier/enable", "1"));
	counters_read(&a);
	ASSERT_EQ(0, workload(&id));
	counters_read(&b);
	ASSERT_EQ(0, trace_write("events/kvtier/enable", "0"));

	snprintf(path, sizeof(path), "%s/trace", tracefs());
	f = fopen(path, "re");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		long long e, w;

		if (sscanf(line, "# entries-in-buffer/entries-written: %lld/%lld", &e, &w) == 2)
			lost = w - e;
		if (line[0] == '#')
			continue;
		if (strstr(line, " kvtier_fault: ")) {
			for (k = 0; k < 3; k++)
				if (strstr(line, kinds[k]))
					faults[k]++;
			if (field(line, "region") != (long long)id)
				foreign++;
		} else if (strstr(line, " kvtier_evict: ")) {
			evicts++;
		} else if (strstr(line, " kvtier_writeback: ")) {
			wb_batches++;
			if (!field(line, "status"))
				wb_pages += field(line, "pages");
		} else if (strstr(line, " kvtier_write_done: ")) {
			wr_bios++;
			if (!field(line, "status"))
				wr_bytes += field(line, "bytes");
		} else if (strstr(line, " kvtier_read_done: ")) {
			rd_bios++;
			if (!field(line, "status"))
				rd_bytes += field(line, "bytes");
		} else if (strstr(line, " kvtier_budget_stall: ")) {
			stalls++;
			EXPECT_EQ(0, field(line, "status")) TH_LOG("%s", line);
		} else if (strstr(line, " kvtier_refault: ")) {
			refaults++;
			EXPECT_EQ((long long)id, field(line, "region")) TH_LOG("%s", line);
			EXPECT_LT(field(line, "distance"), BUDGET_MB * 256) TH_LOG("%s", line);
		}
	}
	fclose(f);
	EXPECT_EQ(0, lost) TH_LOG("the ring buffer lost events");
	TH_LOG("faults minor %lld zero %lld major %lld, evictions %lld, write-back batches %lld (%lld pages), write bios %lld, read bios %lld, stalls %lld, refaults %lld",
	       faults[0], faults[1], faults[2], evicts, wb_batches, wb_pages,
	       wr_bios, rd_bios, stalls, refaults);
	EXPECT_EQ(0, foreign);
	EXPECT_EQ(delta_of(&a, &b, "faults_minor"), faults[0]);
	EXPECT_EQ(delta_of(&a, &b, "faults_zero_fill"), faults[1]);
	EXPECT_EQ(delta_of(&a, &b, "faults_major"), faults[2]);
	EXPECT_EQ(delta_of(&a, &b, "evictions_clean") +
		  delta_of(&a, &b, "evictions_dirty"), evicts);
	EXPECT_EQ(delta_of(&a, &b, "writeback_pages"), wb_pages);
	EXPECT_EQ(delta_of(&a, &b, "writeback_bios"), wr_bios);
	EXPECT_EQ(delta_of(&a, &b, "writeback_bytes"), wr_bytes);
	EXPECT_EQ(delta_of(&a, &b, "read_bios"), rd_bios);
	EXPECT_EQ(delta_of(&a, &b, "read_bytes"), rd_bytes);
	EXPECT_EQ(delta_of(&a, &b, "budget_stalls"), stalls);
	EXPECT_EQ(delta_of(&a, &b, "refaults"), refaults);
	/* The workload reaches every event: a missing one is a defect. */
	EXPECT_LT(0, faults[1]);
	EXPECT_LT(0, faults[2]);
	EXPECT_LT(0, evicts);
	EXPECT_LT(0, wb_batches);
	EXPECT_LT(0, wr_bios);
	EXPECT_LT(0, rd_bios);
	EXPECT_LT(0, stalls);
	EXPECT_LT(0, refaults);
}

/* ---- bpftrace tools ------------------------------------------------------ */

FIXTURE(bpftrace) {
	int fd;
	char out[96];
};

/* One run of a tool: what its output must show, from the counters. */
FIXTURE_VARIANT(bpftrace) {
	const char *tool;
	/* Strings the output holds (histogram names, the header). */
	const char *shows[4];
	/* "@name: N" lines whose N equals the sum of these counters' deltas. */
	const char *sum_name;
	const char *sum_of[3];
};

FIXTURE_VARIANT_ADD(bpftrace, faultlat) {
	.tool = "kvtier-faultlat.bt",
	.shows = { "@zero_us:", "@major_us:", "|@@" },
	.sum_name = "@faults",
	.sum_of = { "faults_minor", "faults_zero_fill", "faults_major" },
};

FIXTURE_VARIANT_ADD(bpftrace, wbsize) {
	.tool = "kvtier-wbsize.bt",
	.shows = { "@batch_pages:", "@batch_bios:", "@write_bio_us:", "|@@" },
	.sum_name = "@write_bytes",
	.sum_of = { "writeback_bytes" },
};

FIXTURE_VARIANT_ADD(bpftrace, stalls) {
	.tool = "kvtier-stalls.bt",
	.shows = { "STALLS", "WAIT_MS", "REFAULTS", "@stall_us:" },
	/* The per-second lines are summed below. */
};

FIXTURE_VARIANT_ADD(bpftrace, topregions) {
	.tool = "kvtier-topregions.bt",
	.shows = { "Top regions by major faults" },
	/* "@major_faults[0, ID]: N", checked below. */
};

/*
 * What the admin guide tells Debian 12 users to export: bpftrace 0.17
 * parses a tracepoint's args with the kernel headers and looks for
 * include/linux/kconfig.h under /lib/modules/KVER/build, which Debian
 * splits into linux-headers-KVER (generated) and linux-headers-...-common
 * (the rest). Returns why the headers are missing, or NULL.
 */
static const char *bpftrace_headers(void)
{
	static char src[160], bld[160], why[640];
	struct utsname u;
	char *arch;

	if (uname(&u))
		return "uname failed";
	snprintf(bld, sizeof(bld), "/lib/modules/%s/build/include/linux/kconfig.h", u.release);
	if (kvt_exists(bld))
		return NULL;	/* an unsplit tree: bpftrace finds it */
	snprintf(bld, sizeof(bld), "/usr/src/linux-headers-%s", u.release);
	snprintf(src, sizeof(src), "%s", bld);
	arch = strrchr(src, '-');
	if (arch)
		snprintf(arch, sizeof(src) - (arch - src), "-common");
	snprintf(why, sizeof(why), "%s/include/linux/kconfig.h", src);
	if (!kvt_exists(bld) || !kvt_exists(why)) {
		snprintf(why, sizeof(why), "no kernel headers for bpftrace (%s, %s): apt-get install linux-headers-%s",
			 bld, src, u.release);
		return why;
	}
	setenv("BPFTRACE_KERNEL_SOURCE", src, 1);
	setenv("BPFTRACE_KERNEL_BUILD", bld, 1);
	return NULL;
}

FIXTURE_SETUP(bpftrace)
{
	const char *why = kvt_missing();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	if (system("command -v bpftrace >/dev/null"))
		SKIP(return, "bpftrace is not installed (tests/deps.sh installs it)");
	why = bpftrace_headers();
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	self->fd = tier_start();
	ASSERT_GE(self->fd, 0);
	snprintf(self->out, sizeof(self->out), "/tmp/kvtier-%s.out", variant->tool);
}

FIXTURE_TEARDOWN(bpftrace)
{
	if (self->fd >= 0)
		close(self->fd);
	if (kvt_loaded())
		EXPECT_EQ(0, kvt_unload());
}

/* Does @file hold @s? */
static bool file_has(const char *file, const char *s)
{
	static char buf[1 << 16];
	FILE *f = fopen(file, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, s);
}

/* The per-second lines ("HH:MM:SS STALLS WAIT_MS REFAULTS") kvtier-stalls.bt has printed. */
static int stall_lines(const char *file)
{
	char line[512], hms[16];
	long long st, ms, rf;
	int n = 0;
	FILE *f = fopen(file, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%15s %lld %lld %lld", hms, &st, &ms, &rf) == 4 &&
		    strchr(hms, ':'))
			n++;
	fclose(f);
	return n;
}

/*
 * bpftrace 0.17 prints BEGIN's line before it attaches the script's other
 * probes (BPFtrace::run() fires BEGIN, then attaches them one by one), so
 * that line alone does not say the tracepoints are live: a workload
 * started then runs while the kernel's text is patched for them, and its
 * first events are not seen. Each attached tracepoint or interval probe
 * is a perf event fd of bpftrace's, as is the output buffer of each online
 * CPU: attached when @pid holds that many.
 */
static int perf_fds_wanted(const char *tool)
{
	char line[256];
	int n = sysconf(_SC_NPROCESSORS_ONLN);
	FILE *f = fopen(tool, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "tracepoint:", 11) || !strncmp(line, "interval:", 9))
			n++;
	fclose(f);
	return n;
}

static int perf_fds(pid_t pid)
{
	char dir[64], path[PATH_MAX], target[64];
	struct dirent *d;
	int n = 0;
	ssize_t len;
	DIR *dp;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (!strcmp(target, "anon_inode:[perf_event]"))
			n++;
	}
	closedir(dp);
	return n;
}

/* What a task that did not finish is doing: its state and kernel stacks. */
static void task_dump(const char *who, pid_t pid)
{
	kvt_run("echo '# %s, pid %d:'; "
		"for t in /proc/%d/task/*; do "
		"echo \"#  thread ${t##*/}: $(cat $t/comm) $(grep State: $t/status) wchan $(cat $t/wchan)\"; "
		"sed 's/^/#    /' $t/stack; done", who, pid, pid);
}

/*
 * The harness's default limit is shorter than an attach on a slow TCG
 * host; this one is above the sum of the bounded waits below, so a hang
 * is reported by them, with stacks, and the teardown still runs.
 */
TEST_F_TIMEOUT(bpftrace, run, ATTACH_S + WORKLOAD_S + EXIT_S + 60)
{
	char tool[PATH_MAX], line[512], want[64];
	long long sum = 0, printed = -1, v;
	unsigned long long id = 0, rid;
	struct delta a, b;
	int status, wst, i, wpipe[2], fds;
	unsigned int t;
	pid_t pid, wl;
	FILE *f;

	ASSERT_EQ(0, pipe2(wpipe, O_CLOEXEC));
	snprintf(tool, sizeof(tool), "%s/tools/bpftrace/%s", kvt_repo_root(), variant->tool);
	ASSERT_EQ(0, access(tool, X_OK)) TH_LOG("%s is not executable", tool);
	unlink(self->out);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(self->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		/* As an operator runs it: the script itself (#!/usr/bin/env bpftrace). */
		execl(tool, tool, (char *)NULL);
		_exit(127);
	}
	/* Attached when the BEGIN line (or the stalls header) is out, and every probe. */
	fds = perf_fds_wanted(tool);
	ASSERT_LT(0, fds);
	for (t = 0; t < ATTACH_S * 10; t++) {
		if ((file_has(self->out, "Hit Ctrl-C") || file_has(self->out, "STALLS")) &&
		    perf_fds(pid) >= fds)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			kvt_run("sed 's/^/# /' %s", self->out);
			SKIP(return, "bpftrace exited before attaching (status %d; its output above)",
			     status);
		}
		usleep(100000);
	}
	if (t == ATTACH_S * 10) {
		int had = perf_fds(pid);

		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		kvt_run("sed 's/^/# /' %s", self->out);
		ASSERT_TRUE(false) TH_LOG("bpftrace did not attach in %d s (%d perf event fds of %d)",
					  ATTACH_S, had, fds);
	}
	TH_LOG("%s attached after %.1f s (%d perf event fds)", variant->tool, t / 10.0, fds);
	counters_read(&a);
	/* In a child, so that a hang is seen, and where, not just timed out. */
	wl = fork();
	if (wl < 0)
		kill(pid, SIGKILL);
	ASSERT_LE(0, wl);
	if (!wl) {
		unsigned long long wid = 0;
		int ret = workload(&wid);

		_exit(ret ? 1 : write(wpipe[1], &wid, sizeof(wid)) == sizeof(wid) ? 0 : 2);
	}
	if (kvt_reap(wl, WORKLOAD_S, &wst)) {
		task_dump("the workload", wl);
		task_dump("bpftrace", pid);
		kill(wl, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_EQ(wl, waitpid(wl, &wst, 0));
		ASSERT_TRUE(false) TH_LOG("the workload did not end in %d s", WORKLOAD_S);
	}
	if (!WIFEXITED(wst) || WEXITSTATUS(wst) ||
	    read(wpipe[0], &id, sizeof(id)) != sizeof(id)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ASSERT_TRUE(false) TH_LOG("the workload failed (status %d)", wst);
	}
	counters_read(&b);
	if (!strcmp(variant->tool, "kvtier-stalls.bt")) {
		/*
		 * Two more per-second lines: the second began after the
		 * workload ended, so the lines hold every stall without the
		 * END line (the part of a second before Ctrl-C). In one CI
		 * run on 6.1, interrupted within the first second, the only
		 * line read 0 stalls while the histogram held 16: either
		 * END's line was lost or it read @stalls before the events;
		 * the cause was not found (END's line does print in a guest
		 * with no events), so the sum must not depend on it.
		 */
		int n0 = stall_lines(self->out);

		for (t = 0; t < 100 && stall_lines(self->out) < n0 + 2; t++)
			usleep(100000);
		EXPECT_LE(n0 + 2, stall_lines(self->out))
			TH_LOG("no per-second line in 10 s");
	}
	kill(pid, SIGINT);
	if (kvt_reap(pid, EXIT_S, &status)) {
		task_dump("bpftrace after SIGINT", pid);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		kvt_run("sed 's/^/# /' %s | head -n 80", self->out);
		ASSERT_TRUE(false) TH_LOG("bpftrace did not exit in %d s of SIGINT", EXIT_S);
	}
	kvt_run("sed 's/^/# /' %s | head -n 80", self->out);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("status %d", status);

	for (i = 0; i < 4 && variant->shows[i]; i++) {
		const char *want_s = variant->shows[i];

		EXPECT_TRUE(file_has(self->out, want_s)) TH_LOG("no '%s' in the output", want_s);
	}
	f = fopen(self->out, "re");
	ASSERT_NE(NULL, f);
	if (variant->sum_name) {
		for (i = 0; i < 3 && variant->sum_of[i]; i++)
			sum += delta_of(&a, &b, variant->sum_of[i]);
		snprintf(want, sizeof(want), "%s: %%lld", variant->sum_name);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, want, &v) == 1)
				printed = v;
		EXPECT_EQ(sum, printed) TH_LOG("%s", variant->sum_name);
	} else if (!strcmp(variant->tool, "kvtier-stalls.bt")) {
		long long st, ms, rf, refaults = 0;
		char hms[16];

		printed = 0;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%15s %lld %lld %lld", hms, &st, &ms, &rf) == 4 &&
			    strchr(hms, ':')) {
				printed += st;
				refaults += rf;
			}
		}
		EXPECT_EQ(delta_of(&a, &b, "budget_stalls"), printed);
		EXPECT_EQ(delta_of(&a, &b, "refaults"), refaults);
		EXPECT_LT(0, printed);
	} else {
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "@major_faults[0, %llu]: %lld", &rid, &v) == 2 &&
			    rid == id)
				printed = v;
		}
		EXPECT_EQ(delta_of(&a, &b, "faults_major"), printed)
			TH_LOG("major faults of region %llu", id);
		EXPECT_LT(0, printed);
	}
	fclose(f);
	unlink(self->out);
}

TEST_HARNESS_MAIN
