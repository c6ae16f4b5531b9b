// SPDX-License-Identifier: GPL-2.0
/*
 * libkvtier-cuda on the CUDA test double, on the host (no VM, no module):
 * interposition through direct symbols, dlsym() and cuGetProcAddress(_v2),
 * the runtime's paths, the selection policy and every bad environment
 * value, fallback without a tier, the hook table against the exports, and
 * fork and thread storms. Each case runs kvt_cuda_app under LD_PRELOAD.
 *
 * Built and run by tests/cuda-double/Makefile (make check), in
 * $(BUILD)/cuda-double next to the double and the helper.
 */
#include <poll.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "../kvtier_util.h"
#include "../../cuda/hooks.h"

#define OUTMAX	(256 * 1024)

struct run {
	int status;		/* exit code, or 128 + signal */
	char out[OUTMAX];
	char err[OUTMAX];
};

static char dir[PATH_MAX];	/* the double, the helper: next to this test */
static char shim[PATH_MAX];

static const char *missing(void)
{
	static char why[PATH_MAX + 64];
	char app[PATH_MAX + 16];
	ssize_t n;

	if (!*dir) {
		n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
		if (n <= 0)
			return "no /proc/self/exe";
		dir[n] = '\0';
		*strrchr(dir, '/') = '\0';
		if (getenv("KVTIER_CUDA_SHIM"))
			snprintf(shim, sizeof(shim), "%s", getenv("KVTIER_CUDA_SHIM"));
		else if (kvt_repo_root())
			snprintf(shim, sizeof(shim), "%s/cuda/libkvtier-cuda.so",
				 kvt_repo_root());
	}
	snprintf(app, sizeof(app), "%s/kvt_cuda_app", dir);
	if (!kvt_exists(app)) {
		snprintf(why, sizeof(why), "no helper %s (CUDA headers missing?)", app);
		return why;
	}
	if (!kvt_exists(shim)) {
		snprintf(why, sizeof(why), "no shim %s (make -C cuda)", shim);
		return why;
	}
	return NULL;
}

/*
 * Run kvt_cuda_app with @cmd (words separated by spaces) under the shim
 * (unless @env holds "NOSHIM"), with the KVTIER_* / KVT_DOUBLE_* settings
 * in @env (NULL-terminated "NAME=value" strings) and nothing else of them.
 */
static void run(struct run *r, const char *const *env, const char *cmd)
{
	int po[2], pe[2], i, n = 0, noshim = 0;
	char *argv[64], *words = strdup(cmd), *save = NULL, *w;
	char app[PATH_MAX + 16], ldp[PATH_MAX + 32], pre[PATH_MAX + 32];
	struct pollfd pf[2];
	size_t lo = 0, le = 0;
	pid_t pid;
	int st;

	snprintf(app, sizeof(app), "%s/kvt_cuda_app", dir);
	argv[n++] = app;
	for (w = strtok_r(words, " ", &save); w && n < 63; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	for (i = 0; env && env[i]; i++)
		noshim |= !strcmp(env[i], "NOSHIM");
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
		abort();
	pid = fork();
	if (!pid) {
		extern char **environ;
		char **e;

		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		/* Only what this case sets. */
	again:
		for (e = environ; *e; e++) {
			if (!strncmp(*e, "KVTIER_", 7) || !strncmp(*e, "KVT_DOUBLE_", 11) ||
			    !strncmp(*e, "LD_PRELOAD=", 11)) {
				char name[128];

				snprintf(name, sizeof(name), "%.*s",
					 (int)(strchr(*e, '=') - *e), *e);
				unsetenv(name);
				goto again;
			}
		}
		snprintf(ldp, sizeof(ldp), "LD_LIBRARY_PATH=%s", dir);
		putenv(ldp);
		if (!noshim) {
			snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", shim);
			putenv(pre);
		}
		for (i = 0; env && env[i]; i++)
			if (strcmp(env[i], "NOSHIM"))
				putenv((char *)env[i]);
		execv(app, argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	pf[0] = (struct pollfd){ .fd = po[0], .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = pe[0], .events = POLLIN };
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 2, 60000) <= 0)
			break;
		for (i = 0; i < 2; i++) {
			char *buf = i ? r->err : r->out;
			size_t *len = i ? &le : &lo;
			ssize_t got;

			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			got = read(pf[i].fd, buf + *len, OUTMAX - 1 - *len);
			if (got <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
			} else {
				*len += got;
			}
		}
	}
	r->out[lo] = '\0';
	r->err[le] = '\0';
	waitpid(pid, &st, 0);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	free(words);
	if (r->status)
		fprintf(stderr, "# %s -> %d\n# stdout: %s\n# stderr: %s\n", cmd,
			r->status, r->out, r->err);
}

/* Integer after "@key=" in @s (the first occurrence), or -999. */
static long val(const char *s, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s=", key);
	for (p = strstr(s, k); p; p = strstr(p + 1, k))
		if (p == s || p[-1] == ' ' || p[-1] == '\n')
			return strtol(p + strlen(k), NULL, 0);
	return -999;
}

/* Value of @key on the line of allocation slot @slot. */
static long slot_val(const char *s, int slot, const char *key)
{
	char pre[16];
	const char *p = s;

	snprintf(pre, sizeof(pre), "%d ptr=", slot);
	while (p && strncmp(p, pre, strlen(pre))) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return p ? val(p, key) : -999;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (s = strstr(s, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

#define NEED()								\
	do {								\
		const char *why_ = missing();				\
		if (why_)						\
			SKIP(return, "%s", why_);			\
	} while (0)

/* No tier on the host: a path that surely does not exist. */
#define NOTIER	"KVTIER_TIER=/dev/kvtier250"

static struct run R;

#define ALLOC_CMD(path) "init alloc 0 " path " 128M fill 0 5 check 0 5 free 0 " \
	"calls cuMemAlloc_v2 cuMemAllocManaged cuMemAllocAsync cuMemAllocFromPoolAsync cuMemFree_v2 cuMemFreeAsync cuMemAdvise_v2"

/* Each allocation path, in managed mode: managed memory, advised to the GPU. */
TEST(paths_managed)
{
	static const char *const paths[] = { "direct", "dlsym", "gpa", "gpa1",
					     "rt", "rtdrv", "async", "pool" };
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, NULL };
	char cmd[512];
	size_t i;

	NEED();
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(cmd, sizeof(cmd), ALLOC_CMD("%s"), paths[i]);
		run(&R, env, cmd);
		TH_LOG("path %s", paths[i]);
		ASSERT_EQ(0, R.status);
		ASSERT_EQ(3, slot_val(R.out, 0, "kind"));
		ASSERT_EQ(0, slot_val(R.out, 0, "pref"));
		ASSERT_EQ(1, val(R.out, "cuMemAllocManaged"));
		ASSERT_EQ(1, val(R.out, "cuMemAdvise_v2"));
		ASSERT_EQ(0, val(R.out, "cuMemAlloc_v2"));
		ASSERT_EQ(0, val(R.out, "cuMemAllocAsync"));
		ASSERT_EQ(0, val(R.out, "cuMemAllocFromPoolAsync"));
		/* Freed through the driver's plain free: managed memory. */
		ASSERT_EQ(1, val(R.out, "cuMemFree_v2"));
		ASSERT_EQ(0, val(R.out, "cuMemFreeAsync"));
		ASSERT_EQ(0, val(R.out, "bad_frees"));
		ASSERT_EQ(0, val(R.out, "live"));
	}
}

/* Without the shim the same programs get device memory: the control. */
TEST(paths_without_shim)
{
	static const char *const paths[] = { "direct", "dlsym", "gpa", "gpa1",
					     "rt", "rtdrv" };
	const char *env[] = { "NOSHIM", "KVTIER_MODE=managed", NULL };
	char cmd[512];
	size_t i;

	NEED();
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(cmd, sizeof(cmd), ALLOC_CMD("%s"), paths[i]);
		run(&R, env, cmd);
		ASSERT_EQ(0, R.status);
		ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
		ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
		ASSERT_EQ(1, val(R.out, "cuMemAlloc_v2"));
	}
}

/* Managed memory the program asks for stays managed, without advice. */
TEST(app_managed)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, NULL };

	NEED();
	run(&R, env, ALLOC_CMD("managed"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(3, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(-1, slot_val(R.out, 0, "pref"));
	ASSERT_EQ(0, val(R.out, "cuMemAdvise_v2"));
	run(&R, env, ALLOC_CMD("rtmanaged"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(3, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(1, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
}

/* dlsym and cuGetProcAddress(_v2) hand out the wrappers of every hook. */
TEST(interposed_symbols)
{
	const char *env[] = { NOTIER, NULL };

	NEED();
	run(&R, env, "init syms gpaptr next");
	ASSERT_EQ(0, R.status);
	ASSERT_NE(NULL, strstr(R.out, "0 wrong"));
	ASSERT_NE(NULL, strstr(R.out,
		"gpa cuMemFree=1 cuGetProcAddress=1 legacy=1 ptsz=1"));
	ASSERT_NE(NULL, strstr(R.out, "next=ok"));
}

/* The hook table, the wrappers and the library's dynamic symbols agree. */
TEST(exports_match_table)
{
	static const char *const names[] = {
#define H(ret, name, params, args) #name,
		KVTIER_CUDA_HOOKS(H, H)
#undef H
		"dlsym",
	};
	char cmd[PATH_MAX + 64], line[256], sym[128], type;
	size_t i, n = sizeof(names) / sizeof(names[0]), seen = 0, found;
	FILE *f;

	NEED();
	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", shim);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %c %127s", &type, sym) != 2)
			continue;
		found = 0;
		for (i = 0; i < n; i++)
			found |= !strcmp(sym, names[i]);
		TH_LOG("exported %s", sym);
		EXPECT_TRUE(found);	/* exported, so it must be in the table */
		EXPECT_EQ('T', type);	/* and be a function of the shim */
		seen++;
	}
	ASSERT_EQ(0, pclose(f));
	ASSERT_EQ(n, seen);	/* each table name exported once */
}

/* KVTIER_MIN_BYTES: the threshold, with suffixes; below it nothing changes. */
TEST(threshold)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, NULL };
	const char *env2[] = { "KVTIER_MODE=managed", NOTIER,
			       "KVTIER_MIN_BYTES=2k", NULL };
	char cmd[256];

	NEED();
	/* Default 64 MiB: one page less passes through, 64 MiB is placed. */
	snprintf(cmd, sizeof(cmd), "init alloc 0 direct %llu alloc 1 direct %llu free 0 free 1 calls",
		 (64ULL << 20) - 4096, 64ULL << 20);
	run(&R, env, cmd);
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(3, slot_val(R.out, 1, "kind"));
	run(&R, env2, "init alloc 0 direct 2047 alloc 1 direct 2048 free 0 free 1 calls");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(3, slot_val(R.out, 1, "kind"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
}

/* KVTIER_MAX_ALLOCS bounds the live placed allocations. */
TEST(max_allocs)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER,
			      "KVTIER_MAX_ALLOCS=2", NULL };

	NEED();
	run(&R, env, "init alloc 0 direct 128M alloc 1 rt 128M alloc 2 direct 128M "
	    "free 0 alloc 3 gpa 128M free 1 free 2 free 3 calls");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(3, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(3, slot_val(R.out, 1, "kind"));
	ASSERT_EQ(2, slot_val(R.out, 2, "kind"));
	ASSERT_EQ(3, slot_val(R.out, 3, "kind"));
	ASSERT_EQ(1, count(R.err, "KVTIER_MAX_ALLOCS=2"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
	ASSERT_EQ(0, val(R.out, "live"));
}

/* KVTIER_MODE=off: untouched, silent. */
TEST(mode_off)
{
	const char *env[] = { "KVTIER_MODE=off", NOTIER, "KVTIER_LOG=debug", NULL };

	NEED();
	run(&R, env, ALLOC_CMD("direct"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(1, val(R.out, "cuMemAlloc_v2"));
	ASSERT_EQ(0, count(R.err, "mode hmm") + count(R.err, "mode managed"));
	ASSERT_EQ(0, count(R.err, "placed "));
}

/*
 * auto without a tier does no harm: every allocation passes through
 * unchanged (weights too), with or without HMM, and it says so once; the
 * exit summary counts the bytes that passed. (With a tier: the VM's
 * kvtier_cuda_test auto_mode.)
 */
TEST(mode_auto)
{
	const char *env0[] = { NOTIER, "KVT_DOUBLE_PAGEABLE=0", NULL };
	const char *env1[] = { NOTIER, "KVT_DOUBLE_PAGEABLE=1", NULL };

	NEED();
	run(&R, env0, "init alloc 0 direct 128M alloc 1 rt 128M fill 0 5 check 0 5 "
	    "free 0 free 1 calls cuMemAlloc_v2 cuMemAllocManaged");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(2, slot_val(R.out, 1, "kind"));
	ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(1, count(R.err, "mode off (auto): /dev/kvtier250 cannot be opened"));
	ASSERT_EQ(0, count(R.err, "mode managed") + count(R.err, "mode hmm"));
	ASSERT_EQ(1, count(R.err, "0 on the tier (hmm), 0 managed, 268435456 passed through"));
	run(&R, env1, ALLOC_CMD("rt"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(1, count(R.err, "mode off (auto): /dev/kvtier250 cannot be opened"));
}

/*
 * KVTIER_LOG=PATH and LEVEL:PATH: the lines go to that file (appended),
 * nothing to stderr.
 */
TEST(log_to_a_file)
{
	char path[64], var[96], buf[4096];
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, var, NULL };
	ssize_t n;
	int fd;

	NEED();
	snprintf(path, sizeof(path), "/tmp/kvt-cuda-log.%d", (int)getpid());
	unlink(path);
	snprintf(var, sizeof(var), "KVTIER_LOG=%s", path);
	run(&R, env, ALLOC_CMD("direct"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(0, count(R.err, "kvtier-cuda["));
	snprintf(var, sizeof(var), "KVTIER_LOG=debug:%s", path);
	run(&R, env, ALLOC_CMD("rt"));
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(0, count(R.err, "kvtier-cuda["));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	unlink(path);
	ASSERT_GT(n, 0);
	buf[n] = '\0';
	/* Both runs' lines, the second one's debug lines too. */
	ASSERT_EQ(2, count(buf, "mode managed (KVTIER_MODE=managed)"));
	ASSERT_GE(count(buf, "placed 134217728 bytes at"), 1);
}

/* hmm without a tier: pass-through, said once however many allocations. */
TEST(hmm_without_tier)
{
	const char *env[] = { "KVTIER_MODE=hmm", NOTIER, NULL };

	NEED();
	run(&R, env, "init alloc 0 direct 128M alloc 1 rt 128M alloc 2 async 128M "
	    "fill 0 1 check 0 1 free 0 free 1 free 2 calls cuMemAlloc_v2 cuMemAllocManaged");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(2, slot_val(R.out, 1, "kind"));
	ASSERT_EQ(2, slot_val(R.out, 2, "kind"));
	ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(1, count(R.err, "KVTIER_MODE=hmm but /dev/kvtier250 cannot be opened"));
	ASSERT_EQ(1, count(R.err, "cannot be opened"));
	ASSERT_EQ(1, count(R.err, "summary: placed 0 hmm + 0 managed (0 bytes), 3 at or above the threshold passed through"));
}

/* A CUDA call the mode needs fails: pass-through, said once. */
TEST(mode_call_fails)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER,
			      "KVT_DOUBLE_FAIL=cuMemAdvise_v2", NULL };

	NEED();
	run(&R, env, "init alloc 0 direct 128M alloc 1 direct 128M free 0 free 1 "
	    "calls cuMemAllocManaged cuMemAdvise_v2");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
	ASSERT_EQ(2, slot_val(R.out, 1, "kind"));
	/* One try, undone (freed), then no more. */
	ASSERT_EQ(1, val(R.out, "cuMemAllocManaged"));
	ASSERT_EQ(0, val(R.out, "live"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
	ASSERT_EQ(1, count(R.err, "cuMemAdvise (preferred location) failed"));
}

/* Every bad value: one message naming it, and everything passes through. */
TEST(bad_environment)
{
	static const char *const bad[][2] = {
		{ "KVTIER_MODE", "fast" },
		{ "KVTIER_MIN_BYTES", "12Q" },
		{ "KVTIER_MIN_BYTES", "-5" },
		{ "KVTIER_MIN_BYTES", "99999999999999999999" },
		{ "KVTIER_MIN_BYTES", "20000000T" },
		{ "KVTIER_MAX_ALLOCS", "many" },
		{ "KVTIER_MAX_ALLOCS", "-1" },
		{ "KVTIER_TIER", "/tmp/kvtier0" },
		{ "KVTIER_TIER", "/dev/kvtier" },
		{ "KVTIER_TIER", "/dev/kvtier1x" },
		{ "KVTIER_TENANT", "two words" },
		{ "KVTIER_TENANT", "a-tenant-label-of-32-characters!" },
		{ "KVTIER_LOG", "loud" },
		{ "KVTIER_LOG", "a-level-name-far-too-long" },
		{ "KVTIER_LOG", "relative/path" },
		{ "KVTIER_LOG", "loud:/tmp/kvt-log" },
		{ "KVTIER_LOG", "/nonexistent-dir/kvt.log" },
	};
	char var[128], msg[160];
	size_t i;

	NEED();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *env[] = { "KVTIER_MODE=managed", NOTIER, var, NULL };

		snprintf(var, sizeof(var), "%s=%s", bad[i][0], bad[i][1]);
		snprintf(msg, sizeof(msg), "%s=\"%s\" is not valid", bad[i][0], bad[i][1]);
		run(&R, env, ALLOC_CMD("direct"));
		TH_LOG("%s", var);
		ASSERT_EQ(0, R.status);
		ASSERT_EQ(1, count(R.err, msg));
		ASSERT_EQ(1, count(R.err, "kvtier-cuda"));
		ASSERT_EQ(2, slot_val(R.out, 0, "kind"));
		ASSERT_EQ(0, val(R.out, "cuMemAllocManaged"));
		ASSERT_EQ(1, val(R.out, "cuMemAlloc_v2"));
	}
	/* The boundaries that are valid. */
	{
		const char *env[] = { "KVTIER_MODE=managed", NOTIER,
				      "KVTIER_TENANT=a-tenant-label-of-31-characters",
				      "KVTIER_MIN_BYTES=64M", "KVTIER_MAX_ALLOCS=0",
				      "KVTIER_LOG=warn", NULL };

		run(&R, env, ALLOC_CMD("direct"));
		ASSERT_EQ(0, R.status);
		ASSERT_EQ(3, slot_val(R.out, 0, "kind"));
		ASSERT_EQ(0, count(R.err, "kvtier-cuda"));
	}
}

/* VMM calls pass through, counted. */
TEST(vmm_passthrough)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, "KVTIER_LOG=debug", NULL };

	NEED();
	run(&R, env, "init vmm 128M calls cuMemCreate cuMemMap cuMemUnmap cuMemRelease");
	ASSERT_EQ(0, R.status);
	ASSERT_NE(NULL, strstr(R.out, "vmm ok kind=2"));
	ASSERT_EQ(1, val(R.out, "cuMemCreate"));
	ASSERT_EQ(1, val(R.out, "cuMemMap"));
	ASSERT_EQ(1, val(R.out, "cuMemUnmap"));
	ASSERT_EQ(1, val(R.out, "cuMemRelease"));
	ASSERT_EQ(1, count(R.err, "cuMemCreate 134217728 bytes: physical GPU memory, passed through"));
	ASSERT_EQ(1, count(R.err, "VMM (passed through): 1 handles created, 0 live, 0 bytes mapped"));
}

/* cuMemGetInfo_v2 is the driver's where the shim does not serve from a tier. */
TEST(mem_get_info)
{
	const char *env[] = { "KVTIER_MODE=managed", NOTIER, NULL };

	NEED();
	run(&R, env, "init alloc 0 direct 128M info free 0");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(16384L << 20, val(R.out, "total"));
	ASSERT_EQ(16384L << 20, val(R.out, "free"));	/* managed: not device memory */
}

/* Many threads allocating and freeing through several paths at once. */
TEST(thread_storm)
{
	const char *managed[] = { "KVTIER_MODE=managed", NOTIER, NULL };
	const char *off[] = { "KVTIER_MODE=off", NOTIER, NULL };

	NEED();
	run(&R, managed, "init storm 16 40 1M 128M");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(16 * 40 * 2, val(R.out, "placed"));	/* half are big */
	ASSERT_EQ(0, val(R.out, "live"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
	run(&R, off, "init storm 16 40 1M 128M");
	ASSERT_EQ(0, R.status);
	ASSERT_EQ(0, val(R.out, "placed"));
	ASSERT_EQ(0, val(R.out, "live"));
}

/* fork() while another thread allocates: children neither deadlock nor lose bytes. */
TEST(fork_storm)
{
	const char *managed[] = { "KVTIER_MODE=managed", NOTIER, NULL };
	const char *off[] = { "KVTIER_MODE=off", NOTIER, NULL };

	NEED();
	run(&R, managed, "init fork 24 128M calls");
	ASSERT_EQ(0, R.status);
	ASSERT_NE(NULL, strstr(R.out, "fork children=24 ok=24"));
	ASSERT_EQ(0, val(R.out, "bad_frees"));
	run(&R, off, "init fork 8 128M");
	ASSERT_EQ(0, R.status);
}

TEST_HARNESS_MAIN
