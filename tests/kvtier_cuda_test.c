// SPDX-License-Identifier: GPL-2.0
/*
 * libkvtier-cuda against the module, in the VM, on the CUDA test double:
 * placed allocations are registered (debugfs gpu_ranges lists them) and
 * freeing or exiting unregisters them; in hmm mode the memory behind the
 * returned device pointer is a tier mapping whose bytes round-trip through
 * eviction to the namespace; auto picks hmm where the device reports
 * pageable memory access; cuMemGetInfo counts the tier; thread and fork
 * storms leave nothing behind.
 *
 * Each case re-executes the helper $(BUILD)/cuda-double/kvt_cuda_app with
 * LD_PRELOAD=<repo>/cuda/libkvtier-cuda.so (or $KVTIER_CUDA_SHIM) and
 * LD_LIBRARY_PATH at the double. Runs as root (tests/run-suite.sh).
 */
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define RANGES	"/sys/kernel/debug/kvtier/kvtier0/gpu_ranges"
/* The double's device 0: UUID bytes "kvt-double-gpu-0", as %pUb prints them. */
#define DOUBLE_GPU "GPU-6b76742d-646f-7562-6c65-2d6770752d30"

static char dbl[PATH_MAX], shim[PATH_MAX];

/* Why the shim cannot be tested here, or NULL. Sets dbl and shim. */
static const char *cuda_missing(void)
{
	static char why[2 * PATH_MAX];
	char app[PATH_MAX + 32];
	ssize_t n;

	n = readlink("/proc/self/exe", dbl, sizeof(dbl) - 32);
	if (n <= 0)
		return "no /proc/self/exe";
	dbl[n] = '\0';
	*strrchr(dbl, '/') = '\0';
	strcat(dbl, "/../cuda-double");
	if (getenv("KVTIER_CUDA_SHIM"))
		snprintf(shim, sizeof(shim), "%s", getenv("KVTIER_CUDA_SHIM"));
	else if (kvt_repo_root())
		snprintf(shim, sizeof(shim), "%s/cuda/libkvtier-cuda.so", kvt_repo_root());
	snprintf(app, sizeof(app), "%s/kvt_cuda_app", dbl);
	if (!kvt_exists(app)) {
		snprintf(why, sizeof(why), "no CUDA double helper %s (no CUDA headers at build time?)", app);
		return why;
	}
	if (!kvt_exists(shim)) {
		snprintf(why, sizeof(why), "no shim %s (no CUDA headers at build time?)", shim);
		return why;
	}
	return NULL;
}

/* A running helper: its stdin, its stdout, stderr in a file. */
struct app {
	pid_t pid;
	int waiting;		/* it printed "ready" and waits for go() */
	FILE *in, *out;
	char errpath[64];
	char text[16384];	/* stdout so far */
};

static int spawn(struct app *a, const char *const *env, const char *cmd)
{
	int pi[2], po[2], i, n = 0, efd;
	char *argv[64], *words = strdup(cmd), *save = NULL, *w;
	char app[PATH_MAX + 32], ldp[PATH_MAX + 32], pre[PATH_MAX + 32];

	memset(a, 0, sizeof(*a));
	snprintf(app, sizeof(app), "%s/kvt_cuda_app", dbl);
	argv[n++] = app;
	for (w = strtok_r(words, " ", &save); w && n < 63; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	snprintf(a->errpath, sizeof(a->errpath), "/tmp/kvtier-cuda-%d.err", (int)getpid());
	efd = open(a->errpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (efd < 0 || pipe2(pi, O_CLOEXEC) || pipe2(po, O_CLOEXEC))
		return -1;
	a->pid = fork();
	if (!a->pid) {
		dup2(pi[0], 0);
		dup2(po[1], 1);
		dup2(efd, 2);
		snprintf(ldp, sizeof(ldp), "LD_LIBRARY_PATH=%s", dbl);
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", shim);
		putenv(ldp);
		putenv(pre);
		for (i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		execv(app, argv);
		_exit(127);
	}
	close(pi[0]);
	close(po[1]);
	close(efd);
	free(words);
	a->in = fdopen(pi[1], "w");
	a->out = fdopen(po[0], "r");
	return a->pid > 0 && a->in && a->out ? 0 : -1;
}

/* Read the helper's output up to "ready" (1) or its end (0). */
static int ready(struct app *a)
{
	char line[512];

	while (fgets(line, sizeof(line), a->out)) {
		if (!strcmp(line, "ready\n")) {
			a->waiting = 1;
			return 1;
		}
		strncat(a->text, line, sizeof(a->text) - strlen(a->text) - 1);
	}
	return 0;
}

/* The helper's stderr so far, into the test's log (for failures). */
static const char *errors(struct app *a)
{
	static char buf[4096];
	int fd = open(a->errpath, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return buf;
}

static void go(struct app *a)
{
	fputs("go\n", a->in);
	fflush(a->in);
	a->waiting = 0;
}

/* Wait for the helper; its exit status (or 128 + signal). */
static int finish(struct app *a, char *err, size_t len)
{
	int st, fd;
	ssize_t n;

	if (a->waiting)
		go(a);
	while (ready(a))
		go(a);
	fclose(a->in);
	fclose(a->out);
	waitpid(a->pid, &st, 0);
	fd = open(a->errpath, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, err, len - 1) : 0;
	err[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(a->errpath);
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (st)
		fprintf(stderr, "# helper exited %d\n# stdout: %s\n# stderr: %s\n", st,
			a->text, err);
	return st;
}

/* Integer after "key=" in @s, or -999. */
static long long val(const char *s, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s=", key);
	for (p = strstr(s, k); p; p = strstr(p + 1, k))
		if (p == s || p[-1] == ' ' || p[-1] == '\n')
			return strtoll(p + strlen(k), NULL, 0);
	return -999;
}

/*
 * The gpu_ranges row whose va is @va: each column's value by header name
 * into @cols (names in @names, NCOLS of them). Returns rows listed (>= 0),
 * with *@found set, or -1 if the file is not in the documented format.
 */
#define NCOLS 8
static const char *const names[NCOLS] = { "id", "pid", "va", "length", "mode",
					  "gpu", "tenant", "region" };

static int range_row(unsigned long long va, char cols[NCOLS][64], int *found)
{
	char line[512], hdr[512], *tok, *save;
	int idx[16], nh = 0, rows = 0, i, c;
	FILE *f = fopen(RANGES, "re");

	*found = 0;
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || strcmp(line, "kvtier-gpu 1\n") ||
	    !fgets(hdr, sizeof(hdr), f)) {
		fclose(f);
		return -1;
	}
	for (tok = strtok_r(hdr, " \n", &save); tok && nh < 16;
	     tok = strtok_r(NULL, " \n", &save), nh++) {
		idx[nh] = -1;
		for (c = 0; c < NCOLS; c++)
			if (!strcmp(tok, names[c]))
				idx[nh] = c;
	}
	while (fgets(line, sizeof(line), f)) {
		char vals[NCOLS][64] = { { 0 } };

		rows++;
		for (i = 0, tok = strtok_r(line, " \n", &save); tok && i < nh;
		     tok = strtok_r(NULL, " \n", &save), i++)
			if (idx[i] >= 0)
				snprintf(vals[idx[i]], 64, "%s", tok);
		if (strtoull(vals[2], NULL, 16) == va) {
			memcpy(cols, vals, sizeof(vals));
			*found = 1;
		}
	}
	fclose(f);
	return rows;
}

static int ranges_listed(void)
{
	char cols[NCOLS][64];
	int found;

	return range_row(0, cols, &found);
}

KVT_TIER_FIXTURE("", 4,
		 why = cuda_missing(); if (why) SKIP(return, "%s", why), , );

/*
 * hmm: a 32 MiB allocation through cuMemAlloc_v2 is a mapping of the tier
 * (not the driver's memory), registered with the GPU's UUID and tenant;
 * its bytes go through eviction to the namespace (4 MiB host budget) and
 * come back; freeing it unregisters it and frees the region.
 */
TEST_F_TIMEOUT(tier, hmm_round_trip_and_registration, 600)
{
	const char *env[] = { "KVTIER_MODE=hmm", "KVTIER_TIER=/dev/kvtier0",
			      "KVTIER_TENANT=tenant-a", "KVTIER_MIN_BYTES=16M",
			      "KVT_DOUBLE_PAGEABLE=1", NULL };
	long long ev0 = kvt_stat(0, "evictions_dirty") + kvt_stat(0, "evictions_clean");
	long long wb0 = kvt_stat(0, "writeback_bytes");
	long long rd0 = kvt_stat(0, "read_bytes");
	char cols[NCOLS][64], err[8192], pid[16];
	unsigned long long ptr;
	struct app a;
	int found;

	ASSERT_GE(wb0, 0);
	ASSERT_GE(rd0, 0);
	ASSERT_EQ(0, spawn(&a, env, "init alloc 0 direct 32M fill 0 11 wait "
			   "check 0 11 free 0 wait calls cuMemAlloc_v2 cuMemFree_v2"));
	ASSERT_TRUE(ready(&a));
	TH_LOG("helper: %s%s", a.text, errors(&a));
	ptr = strtoull(strstr(a.text, "ptr=") + 4, NULL, 16);
	ASSERT_NE(0ULL, ptr);
	ASSERT_EQ(0, val(a.text, "kind"));	/* not the double's memory */

	ASSERT_EQ(1, range_row(ptr, cols, &found));
	ASSERT_TRUE(found);
	snprintf(pid, sizeof(pid), "%d", (int)a.pid);
	ASSERT_STREQ(pid, cols[1]);
	ASSERT_EQ(32 * MiB, strtoull(cols[3], NULL, 0));
	ASSERT_STREQ("hmm", cols[4]);
	ASSERT_STREQ(DOUBLE_GPU, cols[5]);
	ASSERT_STREQ("tenant-a", cols[6]);
	ASSERT_STRNE("-", cols[7]);
	/*
	 * 32 MiB written through a 4 MiB pool: most of it went to the
	 * namespace, written by reclaim's evictions or ahead of them by
	 * background write-back (evicted clean then).
	 */
	ASSERT_GT(kvt_stat(0, "evictions_dirty") + kvt_stat(0, "evictions_clean"), ev0);
	ASSERT_GE(kvt_stat(0, "writeback_bytes") - wb0, (long long)(24 * MiB));
	ASSERT_GT(kvt_tier_num(0, "used"), (long long)(24 * MiB));

	go(&a);		/* read it all back, then free */
	ASSERT_TRUE(ready(&a));
	ASSERT_NE(NULL, strstr(a.text, "0 checked 33554432 bytes"));
	/* The evicted part was read back from the namespace. */
	ASSERT_GE(kvt_stat(0, "read_bytes") - rd0, (long long)(24 * MiB));
	ASSERT_EQ(0, ranges_listed());
	ASSERT_EQ(0, kvt_tier_num(0, "used"));
	go(&a);
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_EQ(0, val(a.text, "cuMemAlloc_v2"));
	ASSERT_EQ(0, val(a.text, "cuMemFree_v2"));
	ASSERT_EQ(0, val(a.text, "bad_frees"));
	ASSERT_NE(NULL, strstr(err, "mode hmm (KVTIER_MODE=hmm)"));
}

/*
 * Why hmm is out on the double's device 0 without pageable access, in the
 * guest: the kernel's own configuration where /boot has it (Debian's lack
 * CONFIG_DEVICE_PRIVATE), else that no NVIDIA module is loaded.
 */
static const char *no_hmm_reason(void)
{
	static char why[512];
	struct utsname u;
	char path[128];

	uname(&u);
	snprintf(path, sizeof(path), "/boot/config-%s", u.release);
	if (kvt_exists(path))
		snprintf(why, sizeof(why), "hmm unavailable: the device reports no pageable memory access: kernel %s built without CONFIG_DEVICE_PRIVATE (%s)",
			 u.release, path);
	else
		snprintf(why, sizeof(why), "hmm unavailable: the device reports no pageable memory access: no NVIDIA kernel module is loaded");
	return why;
}

/* auto: hmm where the device reports pageable memory access, else managed. */
TEST_F_TIMEOUT(tier, auto_mode, 300)
{
	const char *hmm[] = { "KVT_DOUBLE_PAGEABLE=1", NULL };
	const char *man[] = { "KVT_DOUBLE_PAGEABLE=0", NULL };
	char cols[NCOLS][64], err[8192];
	unsigned long long ptr;
	struct app a;
	int found;

	ASSERT_EQ(0, spawn(&a, hmm, "init alloc 0 rt 64M fill 0 3 check 0 3 wait free 0"));
	ASSERT_TRUE(ready(&a));
	TH_LOG("helper: %s%s", a.text, errors(&a));
	ptr = strtoull(strstr(a.text, "ptr=") + 4, NULL, 16);
	ASSERT_EQ(0, val(a.text, "kind"));
	ASSERT_EQ(1, range_row(ptr, cols, &found));
	ASSERT_TRUE(found);
	ASSERT_STREQ("hmm", cols[4]);
	ASSERT_STREQ("-", cols[6]);	/* no tenant */
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "mode hmm (auto): device 0: hmm available: the device reaches pageable memory through HMM; allocations are mappings of tier 0"));
	ASSERT_EQ(0, ranges_listed());

	/* No HMM: managed memory, registered for accounting (no region). */
	ASSERT_EQ(0, spawn(&a, man, "init alloc 0 direct 64M fill 0 3 check 0 3 wait free 0"));
	ASSERT_TRUE(ready(&a));
	ptr = strtoull(strstr(a.text, "ptr=") + 4, NULL, 16);
	ASSERT_EQ(3, val(a.text, "kind"));
	ASSERT_EQ(0, val(a.text, "pref"));
	ASSERT_EQ(1, range_row(ptr, cols, &found));
	ASSERT_TRUE(found);
	ASSERT_STREQ("managed", cols[4]);
	ASSERT_STREQ(DOUBLE_GPU, cols[5]);
	ASSERT_STREQ("-", cols[7]);
	ASSERT_EQ(64 * MiB, strtoull(cols[3], NULL, 0));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "mode managed (auto): device 0: "));
	ASSERT_NE(NULL, strstr(err, no_hmm_reason()));
	ASSERT_NE(NULL, strstr(err, "so managed memory (its host copy is UVM's own memory, not kvtier's), registered with /dev/kvtier0 for accounting"));
	ASSERT_EQ(0, ranges_listed());
}

/*
 * `kvtierctl gpu` of this tree on the double's device, as @env sets it up
 * (space-separated NAME=value), its output (both streams) into @out.
 * Returns its exit status, or -1.
 */
static int ctl_gpu(const char *env, const char *args, char *out, size_t len)
{
	char cmd[4 * PATH_MAX];
	size_t n;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "env %s LD_LIBRARY_PATH=%s:%s/lib %s/tools/kvtierctl gpu %s 2>&1",
		 env, dbl, kvt_repo_root(), kvt_repo_root(), args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The report on a real tier and the double's device: each device answer
 * gives its verdict (the guest has neither a kernel configuration nor an
 * NVIDIA module, so a device's yes is the only way to hmm).
 */
TEST_F_TIMEOUT(tier, gpu_report, 120)
{
	char out[16384];

	ASSERT_EQ(0, ctl_gpu("KVT_DOUBLE_PAGEABLE=0", "", out, sizeof(out)));
	TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "\ncuda      driver 13.0, 1 device\n"));
	ASSERT_NE(NULL, strstr(out, "\ntier 0    attached: "));
	ASSERT_NE(NULL, strstr(out, "\ndevice 0  kvtier test double GPU 0: pageable memory access 0\n"));
	ASSERT_NE(NULL, strstr(out, no_hmm_reason()));
	ASSERT_NE(NULL, strstr(out, "\n  managed available: allocations become CUDA managed memory, whose host copy is UVM's own memory, not kvtier's: tier 0 only accounts it"));
	ASSERT_NE(NULL, strstr(out, "\n  offload available: the engine stores and restores KV blocks on tier 0"));

	ASSERT_EQ(0, ctl_gpu("KVT_DOUBLE_PAGEABLE=1 KVT_DOUBLE_DEVICES=2", "", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "\ncuda      driver 13.0, 2 devices\n"));
	ASSERT_NE(NULL, strstr(out, "\ndevice 1  kvtier test double GPU 1: pageable memory access 1\n"));
	ASSERT_NE(NULL, strstr(out, "\n  hmm available: the device reaches pageable memory through HMM; allocations are mappings of tier 0"));

	/* A coherent platform: pageable access through the host's page tables. */
	ASSERT_EQ(0, ctl_gpu("KVT_DOUBLE_PAGEABLE=1 KVT_DOUBLE_HOST_PAGE_TABLES=1", "--json", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "\"name\":\"kvtier test double GPU 0\",\"pageable_memory_access\":true,\"host_page_tables\":true"));
	ASSERT_NE(NULL, strstr(out, "\"hmm\":{\"verdict\":\"yes\",\"why\":\"hmm available: the device reaches pageable memory through the host's page tables (ATS"));
	ASSERT_NE(NULL, strstr(out, "\"tier\":{\"id\":0,\"state\":\"attached\""));

	/* cuInit fails: the host's verdicts, and why no device was asked. */
	ASSERT_EQ(0, ctl_gpu("KVT_DOUBLE_FAIL=cuInit", "", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "\ncuda      cuInit failed (CUDA error 801): no usable GPU or driver\n"));
	ASSERT_NE(NULL, strstr(out, "\nhmm unavailable: "));
	ASSERT_NE(NULL, strstr(out, "\nmanaged unavailable: no NVIDIA kernel module is loaded"));
	ASSERT_NE(NULL, strstr(out, "\noffload available: "));

	/* A tier the module does not have. */
	ASSERT_EQ(0, ctl_gpu("KVT_DOUBLE_PAGEABLE=1", "7", out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "\n  hmm unavailable: the device reaches pageable memory through HMM, but there is no tier 7"));
	ASSERT_NE(NULL, strstr(out, "\n  offload unavailable: there is no tier 7"));
}

/* forced hmm on a device without pageable memory access: said once. */
TEST_F_TIMEOUT(tier, hmm_forced_without_pageable_access, 300)
{
	const char *env[] = { "KVTIER_MODE=hmm", "KVTIER_TIER=/dev/kvtier0",
			      "KVTIER_MIN_BYTES=16M", "KVT_DOUBLE_PAGEABLE=0", NULL };
	char err[8192];
	struct app a;

	ASSERT_EQ(0, spawn(&a, env, "init alloc 0 direct 32M free 0"));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(err, "mode hmm (KVTIER_MODE=hmm)"));
	ASSERT_NE(NULL, strstr(err, "KVTIER_MODE=hmm on device 0, but "));
	ASSERT_NE(NULL, strstr(err, no_hmm_reason()));
	ASSERT_NE(NULL, strstr(err, "the GPU cannot reach these allocations"));
}

/* A process that exits without freeing leaves no range behind. */
TEST_F_TIMEOUT(tier, exit_unregisters, 300)
{
	const char *env[] = { "KVTIER_MODE=hmm", "KVTIER_MIN_BYTES=1M", NULL };
	char err[8192];
	struct app a;

	ASSERT_EQ(0, spawn(&a, env, "init alloc 0 direct 2M alloc 1 async 3M "
			   "alloc 2 managed 1M wait"));
	ASSERT_TRUE(ready(&a));
	TH_LOG("helper: %s%s", a.text, errors(&a));
	ASSERT_EQ(3, ranges_listed());
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_EQ(0, ranges_listed());
	ASSERT_EQ(0, kvt_tier_num(0, "used"));
}

/* In hmm mode cuMemGetInfo_v2 adds the tier: capacity to total, room to free. */
TEST_F_TIMEOUT(tier, mem_get_info_counts_tier, 300)
{
	const char *env[] = { "KVTIER_MODE=hmm", NULL };
	struct kvtier_tier_info info;
	char err[8192];
	struct app a;

	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_TIER_INFO, &info));
	ASSERT_GT(info.capacity_bytes, 0ULL);
	ASSERT_EQ(0, spawn(&a, env, "init alloc 0 direct 64M fill 0 1 info free 0"));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_EQ((16384LL << 20) + (long long)info.capacity_bytes, val(a.text, "total"));
	ASSERT_LE(val(a.text, "free"), (16384LL << 20) + (long long)info.capacity_bytes - (long long)(60 * MiB));
	ASSERT_GE(val(a.text, "free"), (16384LL << 20));
}

/* Threads allocating and freeing at once, hmm and managed. */
TEST_F_TIMEOUT(tier, thread_storm, 600)
{
	const char *hmm[] = { "KVTIER_MODE=hmm", "KVTIER_MIN_BYTES=2M", NULL };
	const char *man[] = { "KVTIER_MODE=managed", "KVTIER_MIN_BYTES=2M", NULL };
	char err[8192];
	struct app a;

	ASSERT_EQ(0, spawn(&a, hmm, "init storm 8 10 64K 2M"));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_EQ(8 * 10 * 2, val(a.text, "placed"));
	ASSERT_EQ(0, val(a.text, "live"));
	ASSERT_EQ(0, val(a.text, "bad_frees"));
	ASSERT_EQ(0, ranges_listed());
	ASSERT_EQ(0, kvt_tier_num(0, "used"));
	ASSERT_EQ(0, spawn(&a, man, "init storm 8 10 64K 2M"));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_EQ(8 * 10 * 2, val(a.text, "placed"));
	ASSERT_EQ(0, ranges_listed());
}

/* fork() while another thread allocates: children work and clean up. */
TEST_F_TIMEOUT(tier, fork_storm, 600)
{
	const char *env[] = { "KVTIER_MODE=hmm", "KVTIER_MIN_BYTES=1M", NULL };
	char err[8192];
	struct app a;

	ASSERT_EQ(0, spawn(&a, env, "init fork 8 2M calls"));
	ASSERT_EQ(0, finish(&a, err, sizeof(err)));
	ASSERT_NE(NULL, strstr(a.text, "fork children=8 ok=8"));
	ASSERT_EQ(0, val(a.text, "bad_frees"));
	ASSERT_EQ(0, ranges_listed());
	ASSERT_EQ(0, kvt_tier_num(0, "used"));
}

TEST_HARNESS_MAIN
