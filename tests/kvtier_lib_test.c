// SPDX-License-Identifier: GPL-2.0
/*
 * libkvtier against the module: regions (create, open by name, map, read,
 * write), hints, pins, sync, info, GPU ranges, tier stats, the block-
 * offload API with host buffers (and a persistent region restored after
 * a module reload), KVTIER_XFER_CUDA without a usable runtime, and every
 * bad argument's errno.
 *
 * Linked against ../lib/libkvtier.so by absolute rpath: the VM sees the
 * host's tree at the same path. Runs as root in the test VM
 * (tests/run-suite.sh); see kvtier_util.h.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/kvtier.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"
#include "kvtier.h"


FIXTURE(lib) {
	struct kvtier_tier *t;
};

/* Module loaded with two tiers; NS0 formatted (empty) on tier 0, 4 MiB pool. */
FIXTURE_SETUP(lib)
{
	const char *why = kvt_missing();

	self->t = NULL;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
	ASSERT_EQ(0, kvtier_tier_open(0, &self->t));
}

/*
 * In the parent: unlink what a failed test left named (a named region
 * keeps the namespace attached), leave NS0 an empty kvtier namespace and
 * unload.
 */
FIXTURE_TEARDOWN_PARENT(lib)
{
	struct kvtier_region_entry *e;
	struct kvtier_tier *t;
	size_t n, i;

	if (!kvt_loaded() && kvt_load("num_tiers=2")) {
		EXPECT_TRUE(0);
		return;
	}
	if (!kvtier_tier_open(0, &t)) {
		if (kvtier_region_list(t, &e, &n) >= 0) {
			for (i = 0; i < n; i++)
				kvtier_region_unlink(t, e[i].name);
			free(e);
		}
		kvtier_tier_close(t);
	}
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_unload());
}

static int info_of(struct kvtier_region *r, struct kvtier_region_info *i)
{
	return kvtier_region_info(r, i);
}

/* Value of stat @name of tier 0 through kvtier_tier_stats, or -1. */
static long long lib_stat(const char *name)
{
	struct kvtier_stat *st;
	long long v = -1;
	size_t n, i;

	if (kvtier_tier_stats(0, &st, &n))
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			v = st[i].value;
	free(st);
	return v;
}

/* Write pattern @seed over [@off, @off + @len) in 1 MiB steps. */
static int lfill(struct kvtier_region *r, uint64_t off, size_t len,
		 unsigned long long seed)
{
	static unsigned char buf[MiB];
	size_t done, n;

	for (done = 0; done < len; done += n) {
		n = len - done < MiB ? len - done : MiB;
		kvt_fill(buf, n, off + done, seed);
		if (kvtier_region_write(r, buf, n, off + done) != (ssize_t)n)
			return -1;
	}
	return 0;
}

/* Check pattern @seed over the range: -1 if all match, else as kvt_check. */
static long long lcheck(struct kvtier_region *r, uint64_t off, size_t len,
			unsigned long long seed)
{
	static unsigned char buf[MiB];
	size_t done, n;
	long long bad;

	for (done = 0; done < len; done += n) {
		n = len - done < MiB ? len - done : MiB;
		if (kvtier_region_read(r, buf, n, off + done) != (ssize_t)n)
			return -2;
		bad = kvt_check(buf, n, off + done, seed);
		if (bad >= 0)
			return bad;
	}
	return -1;
}

TEST_F_TIMEOUT(lib, unnamed_region_roundtrip, 300)
{
	size_t len = 8 * MiB;	/* twice the pool: pages go to the namespace */
	struct kvtier_region *r;
	unsigned char buf[3 * PAGE];
	struct kvtier_region_info info;
	void *p, *q;

	ASSERT_EQ(0, kvtier_region_create(self->t, len - 100, &r));
	ASSERT_GE(kvtier_region_fd(r), 0);
	ASSERT_NE(kvtier_tier_fd(self->t), kvtier_region_fd(r));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(len, info.size);	/* rounded up to the page size */
	ASSERT_EQ('\0', info.name[0]);

	/* pwrite side, read through a mapping, after eviction. */
	ASSERT_EQ(0, lfill(r, 0, len, 1));
	ASSERT_EQ(0, kvtier_region_map(r, PROT_READ | PROT_WRITE, &p));
	ASSERT_EQ(-EBUSY, kvtier_region_map(r, PROT_READ, &q));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 1));
	/* Written through the mapping, read with kvtier_region_read. */
	kvt_fill((char *)p + MiB, 2 * MiB, MiB, 2);
	ASSERT_EQ(-1, lcheck(r, MiB, 2 * MiB, 2));
	ASSERT_EQ(0, kvtier_region_unmap(r));
	ASSERT_EQ(-EINVAL, kvtier_region_unmap(r));
	ASSERT_EQ(-1, lcheck(r, 0, MiB, 1));
	ASSERT_EQ(-1, lcheck(r, 3 * MiB, len - 3 * MiB, 1));

	/* A read across the end returns what exists; at the end, 0. */
	ASSERT_EQ((ssize_t)PAGE, kvtier_region_read(r, buf, sizeof(buf), len - PAGE));
	ASSERT_EQ(-1, kvt_check(buf, PAGE, len - PAGE, 1));
	ASSERT_EQ(0, kvtier_region_read(r, buf, sizeof(buf), len));
	ASSERT_EQ(0, kvtier_region_read(r, buf, sizeof(buf), len + MiB));
	/* A write across the end writes up to it; at the end, -EFBIG. */
	kvt_fill(buf, sizeof(buf), len - PAGE, 3);
	ASSERT_EQ((ssize_t)PAGE, kvtier_region_write(r, buf, sizeof(buf), len - PAGE));
	ASSERT_EQ(-EFBIG, kvtier_region_write(r, buf, PAGE, len));
	ASSERT_EQ(-1, lcheck(r, len - PAGE, PAGE, 3));
	ASSERT_EQ(0, kvtier_region_read(r, buf, 0, 0));

	/* Mapped again after the unmap: the same bytes. */
	ASSERT_EQ(0, kvtier_region_map(r, PROT_READ, &p));
	ASSERT_EQ(-1, kvt_check((char *)p + MiB, 2 * MiB, MiB, 2));
	ASSERT_EQ(-1, kvt_check((char *)p + len - PAGE, PAGE, len - PAGE, 3));
	kvtier_region_close(r);	/* unmaps too */
	ASSERT_EQ(0, kvt_tier_num(0, "resident"));
}

TEST_F_TIMEOUT(lib, named_regions, 300)
{
	struct kvtier_region *a, *b, *ro;
	struct kvtier_region_info info;
	unsigned char page[PAGE];
	void *p;

	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-a", 3 * MiB + 1,
					KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL,
					0640, &a));
	ASSERT_EQ(0, lfill(a, 0, 3 * MiB + PAGE, 4));
	/* By name, size 0: learns the size; sees the bytes. */
	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-a", 0, 0, 0, &b));
	ASSERT_EQ(0, info_of(b, &info));
	ASSERT_STREQ("kv:lib-a", info.name);
	ASSERT_EQ(3 * MiB + PAGE, info.size);
	ASSERT_EQ(0640U, info.mode);
	ASSERT_EQ(0U, info.owner);
	ASSERT_EQ(2U, info.users);
	ASSERT_EQ(0U, info.flags);
	ASSERT_EQ(-1, lcheck(b, 0, 3 * MiB + PAGE, 4));
	ASSERT_EQ(0, kvtier_region_map(b, PROT_READ | PROT_WRITE, &p));
	kvt_fill(p, PAGE, 0, 5);
	ASSERT_EQ(-1, lcheck(a, 0, PAGE, 5));

	/* Read-only: reads, no writes, no writable mapping. */
	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-a", 3 * MiB + PAGE,
					KVTIER_OPEN_RDONLY, 0, &ro));
	ASSERT_EQ(0, info_of(ro, &info));
	ASSERT_EQ((__u32)KVTIER_OPEN_RDONLY, info.flags);
	ASSERT_EQ(-1, lcheck(ro, 0, PAGE, 5));
	kvt_fill(page, PAGE, 0, 6);
	ASSERT_EQ(-EACCES, kvtier_region_write(ro, page, PAGE, 0));
	ASSERT_EQ(-EACCES, kvtier_region_map(ro, PROT_READ | PROT_WRITE, &p));
	ASSERT_EQ(-1, lcheck(a, 0, PAGE, 5));
	kvtier_region_close(ro);

	/* The errors of opening by name. */
	ASSERT_EQ(-EEXIST, kvtier_region_open(self->t, "kv:lib-a", MiB,
					      KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL,
					      0600, &ro));
	ASSERT_EQ(-ENOENT, kvtier_region_open(self->t, "kv:none", 0, 0, 0, &ro));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "kv:lib-a", MiB, 0, 0, &ro));
	ASSERT_EQ(-EEXIST, kvtier_region_open(self->t, "kv:lib-a", 0,
					      KVTIER_OPEN_PERSISTENT, 0, &ro));

	kvtier_region_close(b);
	ASSERT_EQ(0, kvtier_region_unlink(self->t, "kv:lib-a"));
	ASSERT_EQ(-1, lcheck(a, PAGE, 3 * MiB, 4));	/* the open file keeps it */
	kvtier_region_close(a);
	ASSERT_EQ(0, kvt_tier_num(0, "used"));
}

TEST_F_TIMEOUT(lib, hints_pin_sync_info_stats, 300)
{
	struct kvtier_region_info info;
	long long prefetched, bytes_read;
	struct kvtier_region *r;
	int i;
	void *p;

	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-hints", 8 * MiB,
					KVTIER_OPEN_CREATE, 0600, &r));
	ASSERT_EQ(0, lfill(r, 0, MiB, 7));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(MiB, info.resident);
	ASSERT_EQ(MiB, info.dirty);
	ASSERT_EQ(0ULL, info.pinned);
	ASSERT_EQ(0, info.error);

	/* sync: the namespace has it, nothing dirty, still resident. */
	ASSERT_EQ(0, kvtier_region_sync(r));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.dirty);
	ASSERT_EQ(MiB, info.namespace);
	ASSERT_EQ(MiB, info.resident);

	/* cold: dropped from the pool, kept on the namespace. */
	ASSERT_EQ(0, kvtier_region_write(r, "x", 1, 5) == 1 ? 0 : -1);
	ASSERT_EQ(0, kvtier_region_cold(r, 0, 0));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.resident);
	ASSERT_EQ(0ULL, info.dirty);
	ASSERT_EQ(MiB, info.namespace);
	bytes_read = lib_stat("read_bytes");
	ASSERT_GE(bytes_read, 0);
	{
		unsigned char c = 0;

		ASSERT_EQ(1, kvtier_region_read(r, &c, 1, 5));
		ASSERT_EQ('x', c);
		ASSERT_EQ(0, kvtier_region_write(r, (char *)&(unsigned long long){
			kvt_pattern(0, 7) }, 8, 0) == 8 ? 0 : -1);
	}
	ASSERT_EQ(-1, lcheck(r, 0, MiB, 7));
	ASSERT_GT(lib_stat("read_bytes"), bytes_read);
	ASSERT_EQ(0, kvtier_region_cold(r, 0, MiB));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.resident);

	/*
	 * prefetch: asynchronous, the pages arrive. The worker charges them
	 * as it submits each bio and counts them just after: wait for both.
	 */
	prefetched = lib_stat("prefetch_pages");
	ASSERT_EQ(0, kvtier_region_prefetch(r, 0, MiB));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, info_of(r, &info));
		if (info.resident == MiB && lib_stat("prefetch_pages") > prefetched)
			break;
		usleep(50 * 1000);
	}
	ASSERT_EQ(MiB, info.resident);
	ASSERT_GT(lib_stat("prefetch_pages"), prefetched);
	ASSERT_EQ(-1, lcheck(r, 0, MiB, 7));

	/* Faults are counted; the mapping sees the bytes. */
	ASSERT_EQ(0, kvtier_region_map(r, PROT_READ, &p));
	ASSERT_EQ(-1, kvt_check(p, MiB, 0, 7));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_GT(info.faults, 0ULL);
	ASSERT_EQ(0, kvtier_region_unmap(r));

	/* pin: resident and counted, kept through pool pressure. */
	ASSERT_EQ(0, kvtier_region_cold(r, 0, 0));
	ASSERT_EQ(0, kvtier_region_pin(r, 0, MiB));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(MiB, info.pinned);
	ASSERT_EQ(MiB, info.resident);
	ASSERT_EQ(MiB, lib_stat("pinned_bytes"));
	ASSERT_EQ(0, lfill(r, 4 * MiB, 4 * MiB, 8));	/* pool pressure */
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(MiB, info.pinned);
	ASSERT_GE(info.resident, MiB);
	ASSERT_EQ(-1, lcheck(r, 0, MiB, 7));
	ASSERT_EQ(0, kvtier_region_unpin(r, 0, MiB));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.pinned);
	ASSERT_EQ(0, lib_stat("pinned_bytes"));
	ASSERT_EQ(-1, lcheck(r, 4 * MiB, 4 * MiB, 8));
	kvtier_region_close(r);
	ASSERT_EQ(0, kvtier_region_unlink(self->t, "kv:lib-hints"));
}

/*
 * kvtier_tier_stats with tier 0's stat attribute replaced by @text (a
 * bind mount in a private mount namespace): @nr stats (the columns it
 * knows of the line, then 5 gauges), the first and the 16th values
 * checked against @first and @last, or -errno.
 */
static int stats_of_text(const char *text, long long first, long long last,
			 size_t nr)
{
	const char *stat = "/sys/class/kvtier/kvtier0/stat";
	char file[] = "/tmp/kvt-lib-stat-XXXXXX";
	struct kvtier_stat *st = NULL;
	size_t n = 0;
	int fd, ret, status;
	pid_t pid;

	fd = mkstemp(file);
	if (fd < 0)
		return -1000;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return -1001;
	close(fd);
	pid = fork();
	if (!pid) {
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(file, stat, NULL, MS_BIND, NULL))
			_exit(200);
		ret = kvtier_tier_stats(0, &st, &n);
		if (!ret)
			ret = n == nr && !strcmp(st[0].name, "faults_minor") &&
			      st[0].value == first && !strcmp(st[15].name, "inflight_bytes") &&
			      st[15].value == last ? 0 : -1;
		_exit(ret < 0 ? -ret : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		ret = -1002;
	else
		ret = -WEXITSTATUS(status);
	unlink(file);
	return ret;
}

/* A user outside the kvtier group reads the counters. */
static int stats_as_user(void *arg)
{
	struct kvtier_stat *st;
	size_t n;
	int ret;

	(void)arg;
	ret = kvtier_tier_stats(0, &st, &n);
	if (ret)
		return -ret;
	free(st);
	return n == 25 ? 0 : 1;
}

/* One version: the library's is the loaded module's (dkms.conf's). */
TEST_F_TIMEOUT(lib, version_is_the_modules, 60)
{
	char mod[64];

	ASSERT_NE(NULL, kvtier_version());
	ASSERT_EQ(0, kvt_read("/sys/module/kvtier/version", mod, sizeof(mod)));
	ASSERT_STREQ(mod, kvtier_version());
}

TEST_F_TIMEOUT(lib, tier_stats, 300)
{
	static const char *const gauges[] = {
		"resident_bytes", "pinned_bytes", "used_bytes", "capacity_bytes",
		"budget_bytes",
	};
	struct kvtier_stat *st;
	size_t n, i;
	long long dbg;

	ASSERT_EQ(0, kvtier_tier_stats(0, &st, &n));
	ASSERT_EQ(25U, n);
	ASSERT_STREQ("inflight_bytes", st[15].name);
	ASSERT_STREQ("pages_reused", st[19].name);
	for (i = 0; i < 5; i++)
		ASSERT_STREQ(gauges[i], st[20 + i].name);
	ASSERT_EQ(4 * MiB, (unsigned long long)st[24].value);	/* budget_bytes */
	/* The same counters as debugfs's, where both have them. */
	for (i = 0; i < 20; i++) {
		if (i == 15)	/* inflight_bytes: a gauge, read apart */
			continue;
		dbg = kvt_stat(0, st[i].name);
		if (dbg != st[i].value)
			TH_LOG("%s: stat %lld, debugfs %lld", st[i].name,
			       (long long)st[i].value, dbg);
		ASSERT_EQ(dbg, st[i].value);
	}
	free(st);
	ASSERT_EQ(-EINVAL, kvtier_tier_stats(0, NULL, &n));
	ASSERT_EQ(-EINVAL, kvtier_tier_stats(0, &st, NULL));
	ASSERT_EQ(-ENOENT, kvtier_tier_stats(7, &st, &n));
	/* Without root and outside the kvtier group. */
	ASSERT_EQ(0, kvt_as_user(65534, 65534, NULL, 0, stats_as_user, NULL));

	/* The format, through files standing in for the module's. */
	/* A module before columns 17-20: their stats are left out. */
	ASSERT_EQ(0, stats_of_text("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", 1, 16, 21));
	ASSERT_EQ(0, stats_of_text("7 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -4096 99 98\n", 7, -4096, 23));
	ASSERT_EQ(0, stats_of_text("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n", 1, 16, 25));
	/* Columns a newer module appends are left out. */
	ASSERT_EQ(0, stats_of_text("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n", 1, 16, 25));
	ASSERT_EQ(-EPROTO, stats_of_text("1 2 3\n", 0, 0, 0));
	ASSERT_EQ(-EPROTO, stats_of_text("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 x\n", 0, 0, 0));
	ASSERT_EQ(-EPROTO, stats_of_text("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 x\n", 0, 0, 0));
	ASSERT_EQ(-EPROTO, stats_of_text("", 0, 0, 0));
}

/* A knob through kvtier_tier_attr_get/set, and each refusal. */
TEST_F_TIMEOUT(lib, tier_attr, 120)
{
	static const char *const bad[] = { "", ".", "..", "../kvtier1/state", "a/b" };
	char buf[64], two[2], three[3];
	size_t i;

	ASSERT_EQ(0, kvtier_tier_attr_get(0, "host_budget_mb", buf, sizeof(buf)));
	ASSERT_STREQ("4", buf);
	ASSERT_EQ(0, kvtier_tier_attr_set(0, "host_budget_mb", "6"));
	ASSERT_EQ(0, kvtier_tier_attr_get(0, "host_budget_mb", buf, sizeof(buf)));
	ASSERT_STREQ("6", buf);
	ASSERT_EQ(6, kvt_tier_num(0, "host_budget_mb"));
	/* The module's refusals come back, and change nothing. */
	ASSERT_EQ(-EINVAL, kvtier_tier_attr_set(0, "host_budget_mb", "x"));
	ASSERT_EQ(-EBUSY, kvtier_tier_attr_set(0, "read_only", "1"));
	ASSERT_EQ(-EACCES, kvtier_tier_attr_set(0, "state", "detached"));
	ASSERT_EQ(0, kvtier_tier_attr_get(0, "host_budget_mb", buf, sizeof(buf)));
	ASSERT_STREQ("6", buf);
	ASSERT_EQ(0, kvtier_tier_attr_get(0, "read_only", buf, sizeof(buf)));
	ASSERT_STREQ("0", buf);
	/* "6\n" and its terminator fit in 3 bytes, not in 2. */
	ASSERT_EQ(0, kvtier_tier_attr_get(0, "host_budget_mb", three, sizeof(three)));
	ASSERT_STREQ("6", three);
	ASSERT_EQ(-ERANGE, kvtier_tier_attr_get(0, "host_budget_mb", two, sizeof(two)));
	/* Names that would leave the tier's directory. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(-EINVAL, kvtier_tier_attr_get(0, bad[i], buf, sizeof(buf)));
		ASSERT_EQ(-EINVAL, kvtier_tier_attr_set(0, bad[i], "1"));
	}
	ASSERT_EQ(-EINVAL, kvtier_tier_attr_get(0, NULL, buf, sizeof(buf)));
	ASSERT_EQ(-EINVAL, kvtier_tier_attr_get(0, "state", NULL, 8));
	ASSERT_EQ(-EINVAL, kvtier_tier_attr_get(0, "state", buf, 0));
	ASSERT_EQ(-EINVAL, kvtier_tier_attr_set(0, "host_budget_mb", NULL));
	ASSERT_EQ(-ENOENT, kvtier_tier_attr_get(0, "no_such_knob", buf, sizeof(buf)));
	ASSERT_EQ(-ENOENT, kvtier_tier_attr_get(7, "state", buf, sizeof(buf)));
	ASSERT_EQ(-ENOENT, kvtier_tier_attr_set(7, "host_budget_mb", "6"));
	ASSERT_EQ(6, kvt_tier_num(0, "host_budget_mb"));
}

TEST_F_TIMEOUT(lib, gpu_ranges, 300)
{
	struct kvtier_gpu_range g;
	struct kvtier_region_info info;
	struct kvtier_region *r;
	void *p, *anon;

	ASSERT_EQ(0, kvtier_region_create(self->t, 4 * MiB, &r));
	ASSERT_EQ(0, kvtier_region_map(r, PROT_READ | PROT_WRITE, &p));
	memset(&g, 0, sizeof(g));
	g.va = (uintptr_t)p + MiB;
	g.length = MiB;
	g.mode = KVTIER_GPU_HMM;
	memset(g.gpu_uuid, 0xab, sizeof(g.gpu_uuid));
	strcpy(g.tenant, "team-a");
	ASSERT_EQ(0, kvtier_gpu_register(self->t, &g));
	ASSERT_EQ(-EEXIST, kvtier_gpu_register(self->t, &g));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(MiB, info.gpu_bytes);
	/* The registered range is the region's memory: bytes round-trip. */
	kvt_fill((char *)p + MiB, MiB, MiB, 9);
	ASSERT_EQ(-1, lcheck(r, MiB, MiB, 9));

	/* HMM outside a mapping of the tier: refused. */
	anon = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	g.va = (uintptr_t)anon;
	ASSERT_EQ(-EINVAL, kvtier_gpu_register(self->t, &g));
	g.mode = KVTIER_GPU_MANAGED;
	ASSERT_EQ(0, kvtier_gpu_register(self->t, &g));
	ASSERT_EQ(0, kvtier_gpu_unregister(self->t, (uintptr_t)anon));
	ASSERT_EQ(-ENOENT, kvtier_gpu_unregister(self->t, (uintptr_t)anon));
	g.mode = 7;
	ASSERT_EQ(-EINVAL, kvtier_gpu_register(self->t, &g));

	ASSERT_EQ(0, kvtier_gpu_unregister(self->t, (uintptr_t)p + MiB));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.gpu_bytes);
	ASSERT_EQ(-EINVAL, kvtier_gpu_register(NULL, &g));
	ASSERT_EQ(-EINVAL, kvtier_gpu_register(self->t, NULL));
	ASSERT_EQ(-EINVAL, kvtier_gpu_unregister(NULL, 0));
	munmap(anon, MiB);
	ASSERT_EQ(-1, kvt_check((char *)p + MiB, MiB, MiB, 9));
	kvtier_region_close(r);
}

TEST_F_TIMEOUT(lib, region_bad_arguments, 300)
{
	struct kvtier_region *r, *r2 = (void *)0x1;
	struct kvtier_region_info info;
	unsigned char buf[PAGE];
	char longname[80];
	void *p;

	memset(longname, 'x', sizeof(longname));
	longname[64] = '\0';
	ASSERT_EQ(-EINVAL, kvtier_region_create(NULL, MiB, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_create(self->t, MiB, NULL));
	ASSERT_EQ(-EINVAL, kvtier_region_create(self->t, 0, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_create(self->t, 1ULL << 63, &r2));
	ASSERT_EQ(-ENOSPC, kvtier_region_create(self->t, 1ULL << 50, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(NULL, "a", MiB, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, NULL, MiB, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "", MiB, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, longname, MiB, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "a/b", MiB, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "a", MiB, 0x100, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "a", MiB, KVTIER_OPEN_CREATE, 01000, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "a", 0, KVTIER_OPEN_CREATE, 0600, &r2));
	ASSERT_EQ(-EINVAL, kvtier_region_open(self->t, "a", MiB, KVTIER_OPEN_CREATE, 0600, NULL));
	ASSERT_EQ((void *)0x1, r2);	/* untouched on failure */
	ASSERT_EQ(-ENOENT, kvtier_region_open(self->t, "a", 0, 0, 0, &r2));
	ASSERT_EQ(0, kvt_tier_num(0, "used"));

	ASSERT_EQ(0, kvtier_region_create(self->t, MiB, &r));
	ASSERT_EQ(0, lfill(r, 0, MiB, 10));
	ASSERT_EQ(-EINVAL, kvtier_region_fd(NULL));
	ASSERT_EQ(-EINVAL, kvtier_region_map(NULL, PROT_READ, &p));
	ASSERT_EQ(-EINVAL, kvtier_region_map(r, PROT_READ, NULL));
	ASSERT_EQ(-EINVAL, kvtier_region_map(r, 0, &p));
	ASSERT_EQ(-EINVAL, kvtier_region_map(r, PROT_READ | PROT_EXEC, &p));
	ASSERT_EQ(-EINVAL, kvtier_region_unmap(NULL));
	ASSERT_EQ(-EINVAL, kvtier_region_read(NULL, buf, PAGE, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_read(r, NULL, PAGE, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_read(r, buf, PAGE, 1ULL << 63));
	ASSERT_EQ(-EINVAL, kvtier_region_read(r, buf, (size_t)SSIZE_MAX + 1, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_write(NULL, buf, PAGE, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_write(r, NULL, PAGE, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_write(r, buf, PAGE, 1ULL << 63));
	ASSERT_EQ(-EFAULT, kvtier_region_write(r, (void *)8, PAGE, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_prefetch(NULL, 0, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_prefetch(r, MiB, PAGE));
	ASSERT_EQ(-EINVAL, kvtier_region_prefetch(r, 1ULL << 63, PAGE));
	ASSERT_EQ(-EINVAL, kvtier_region_cold(NULL, 0, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_cold(r, MiB, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_pin(NULL, 0, PAGE));
	ASSERT_EQ(-EINVAL, kvtier_region_pin(r, 1, PAGE));
	ASSERT_EQ(-EINVAL, kvtier_region_pin(r, 0, 0));
	ASSERT_EQ(-EINVAL, kvtier_region_pin(r, 0, 2 * MiB));
	ASSERT_EQ(-EINVAL, kvtier_region_unpin(r, PAGE, 1));
	ASSERT_EQ(-EINVAL, kvtier_region_sync(NULL));
	ASSERT_EQ(-EINVAL, kvtier_region_info(NULL, &info));
	ASSERT_EQ(-EINVAL, kvtier_region_info(r, NULL));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(0ULL, info.pinned);
	kvtier_region_close(NULL);
	/* Nothing above changed the bytes. */
	ASSERT_EQ(-1, lcheck(r, 0, MiB, 10));
	kvtier_region_close(r);

	/* Over the pin budget (half the 4 MiB pool): ENOSPC, nothing pinned. */
	ASSERT_EQ(0, kvtier_region_create(self->t, 4 * MiB, &r));
	ASSERT_EQ(-ENOSPC, kvtier_region_pin(r, 0, 3 * MiB));
	ASSERT_EQ(0, lib_stat("pinned_bytes"));
	kvtier_region_close(r);
}

/* @n buffers of @bytes filled with pattern @seed at region offsets @offs. */
static void **blocks_new(unsigned int n, size_t bytes, const uint64_t *offs,
			 unsigned long long seed)
{
	void **b = calloc(n, sizeof(*b));
	unsigned int i;

	for (i = 0; b && i < n; i++) {
		b[i] = malloc(bytes);
		if (!b[i])
			return NULL;
		if (seed)
			kvt_fill(b[i], bytes, offs[i], seed);
		else
			memset(b[i], 0, bytes);
	}
	return b;
}

static void blocks_free(void **b, unsigned int n)
{
	unsigned int i;

	for (i = 0; b && i < n; i++)
		free(b[i]);
	free(b);
}

/* The blocks hold pattern @seed of their offsets: -1, else the block. */
static long long blocks_check(void **b, unsigned int n, size_t bytes,
			      const uint64_t *offs, unsigned long long seed)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (kvt_check(b[i], bytes, offs[i], seed) >= 0)
			return i;
	return -1;
}

#define NBLK	192
#define BLK	(40 * 1024 + 8)	/* not a page multiple; cut in 16 KiB units */

/* Offsets of NBLK blocks of BLK in reverse order, packed from @base. */
static void block_offsets(uint64_t *offs, uint64_t base)
{
	unsigned int i;

	for (i = 0; i < NBLK; i++)
		offs[i] = base + (uint64_t)(NBLK - 1 - i) * BLK;
}

TEST_F_TIMEOUT(lib, xfer_host_buffers, 300)
{
	struct kvtier_xfer_attr attr = { .block_bytes = BLK, .staging_bytes = 16384 };
	uint64_t offs[NBLK], t[4], size = 16 * MiB;	/* 4x the pool */
	struct kvtier_region *r;
	struct kvtier_xfer *x;
	void **in, **out;
	int i, done, ret, polls = 0;

	block_offsets(offs, 4 * MiB + 12);
	ASSERT_EQ(0, kvtier_region_create(self->t, size, &r));
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	in = blocks_new(NBLK, BLK, offs, 11);
	out = blocks_new(NBLK, BLK, offs, 0);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);

	/* Four stores in flight, polled until each is done. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, kvtier_xfer_store(x, in + i * NBLK / 4,
					       offs + i * NBLK / 4, NBLK / 4, &t[i]));
	ASSERT_NE(t[0], t[1]);
	for (done = 0; done != 0xf; polls++) {
		for (i = 0; i < 4; i++) {
			if (done & (1 << i))
				continue;
			ret = kvtier_xfer_poll(x, t[i]);
			ASSERT_GE(ret, 0);
			if (ret == 1)
				done |= 1 << i;
		}
		usleep(1000);
		ASSERT_LT(polls, 60000);
	}
	/* A reaped ticket is forgotten. */
	ASSERT_EQ(-ENOENT, kvtier_xfer_poll(x, t[0]));
	ASSERT_EQ(-ENOENT, kvtier_xfer_wait(x, t[3]));
	/* The bytes are in the region at their offsets (through another path). */
	for (i = 0; i < NBLK; i += 17)
		ASSERT_EQ(-1, lcheck(r, offs[i], BLK & ~7ULL, 11));
	/* Bytes between blocks were not touched. */
	{
		unsigned char z[12];
		static const unsigned char zero[12];

		ASSERT_EQ(12, kvtier_region_read(r, z, 12, 4 * MiB));
		ASSERT_EQ(0, memcmp(z, zero, 12));
	}

	/* Evicted by other traffic, then restored in two calls: waited. */
	ASSERT_EQ(0, kvtier_region_cold(r, 0, 0));
	ASSERT_EQ(0, kvtier_xfer_restore(x, out, offs, NBLK / 2, &t[0]));
	ASSERT_EQ(0, kvtier_xfer_restore(x, out + NBLK / 2, offs + NBLK / 2,
					 NBLK / 2, &t[1]));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t[1]));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t[0]));
	ASSERT_EQ(-1, blocks_check(out, NBLK, BLK, offs, 11));

	/*
	 * A restore into memory that cannot be written (the second block):
	 * EFAULT for the job (its other units run in parallel: the first
	 * block may or may not be restored), then the xfer works on: a store
	 * from that memory (readable) and a restore of it back.
	 */
	{
		void *bad[2] = { out[0] };

		bad[1] = mmap(NULL, BLK, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, bad[1]);
		ASSERT_EQ(0, kvtier_xfer_restore(x, bad, offs, 2, &t[0]));
		ASSERT_EQ(-EFAULT, kvtier_xfer_wait(x, t[0]));
		ASSERT_EQ(0, kvtier_xfer_restore(x, out, offs, 1, &t[0]));
		ASSERT_EQ(0, kvtier_xfer_wait(x, t[0]));
		ASSERT_EQ(-1, kvt_check(out[0], BLK, offs[0], 11));
		ASSERT_EQ(0, kvtier_xfer_store(x, bad, offs + 2, 2, &t[0]));
		ASSERT_EQ(0, kvtier_xfer_wait(x, t[0]));
		munmap(bad[1], BLK);
	}

	/*
	 * Destroy with transfers in flight and many more units queued than
	 * the ring holds (576, three per block): they all complete first.
	 */
	blocks_free(in, NBLK);
	in = blocks_new(NBLK, BLK, offs, 12);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, kvtier_xfer_store(x, in, offs, NBLK, &t[0]));
	kvtier_xfer_destroy(x);
	for (i = 0; i < NBLK; i++)
		ASSERT_EQ(-1, lcheck(r, offs[i], BLK & ~7ULL, 12)) TH_LOG("block %d", i);
	kvtier_region_close(r);
	blocks_free(in, NBLK);
	blocks_free(out, NBLK);
}

/* Threads of this process: entries of /proc/self/task, or -1. */
static int nr_threads(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		n += d->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * Completions of this process's io_urings (CqHead of each one's fdinfo,
 * summed), or -1 if it has none.
 */
static long long ring_completions(void)
{
	long long sum = -1;
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		char path[300], link[64] = "", line[128];
		unsigned int head;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		if (readlink(path, link, sizeof(link) - 1) < 0 ||
		    strcmp(link, "anon_inode:[io_uring]"))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", d->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "CqHead: %u", &head) == 1) {
				sum = (sum < 0 ? 0 : sum) + head;
				break;
			}
		}
		if (f)
			fclose(f);
	}
	closedir(dir);
	return sum;
}

/* Can this process set up an io_uring? */
static bool io_uring_works(void)
{
	struct io_uring_params p = {};
	long fd = syscall(__NR_io_uring_setup, 1, &p);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * From now on system call @nr fails with @err in this process (in all its
 * threads with @all_threads), as a container's seccomp profile makes it.
 */
static int deny_syscall(int nr, int err, bool all_threads)
{
#ifdef __x86_64__
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned int)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = ARRAY_SIZE(f), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
		    all_threads ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog))
		return -errno;
	return 0;
#else
	(void)nr, (void)err, (void)all_threads;
	return -EOPNOTSUPP;
#endif
}

#define RT_NBLK	96
#define RT_BLK	(64 * 1024)	/* page-aligned: the module's direct reads */

/* How xfer_round_trip() goes. */
enum rt_how {
	RT_RING,		/* on the ring */
	RT_WORKERS,		/* on the four workers: no ring */
	RT_BREAK_EINVAL,	/* io_uring_enter refused after create */
	RT_BREAK_EAGAIN,	/* ... for want of resources, lastingly */
};

/* Blocks of a round trip, and the units each makes on the ring. */
struct rt_geom {
	unsigned int nblk;
	size_t blk, staging;
	long long ring_units;		/* per block */
};

/* Two units of 32 KiB per block. */
static const struct rt_geom rt_small = { RT_NBLK, RT_BLK, RT_BLK / 2, 2 };
/* Default staging (8 MiB): 1 MiB units on the ring, the last one short. */
static const struct rt_geom rt_big = { 4, 3 * MiB + PAGE, 0, 4 };

/*
 * Store @g's page-aligned blocks through a new xfer of @r, write them
 * back, restore them: -1 when that went @how and the bytes round-trip,
 * else the line that failed (a child's exit status, or the log).
 */
static int xfer_round_trip(struct kvtier_region *r, const struct rt_geom *g,
			   enum rt_how how, int seed)
{
	struct kvtier_xfer_attr attr = { .block_bytes = g->blk, .staging_bytes = g->staging };
	int before = nr_threads(), threads = how == RT_WORKERS ? 4 : 1;
	void **in = calloc(g->nblk, sizeof(void *)), **out = calloc(g->nblk, sizeof(void *));
	long long cq0, cq, units = 2 * g->nblk * g->ring_units;
	uint64_t *offs = calloc(g->nblk, sizeof(*offs)), t;
	struct kvtier_xfer *x = NULL;
	int ret = -1;
	unsigned int i;

	for (i = 0; in && out && offs && i < g->nblk; i++) {
		offs[i] = (uint64_t)(g->nblk - 1 - i) * g->blk;
		if (posix_memalign(&in[i], PAGE, g->blk) ||
		    posix_memalign(&out[i], PAGE, g->blk))
			break;
		kvt_fill(in[i], g->blk, offs[i], seed);
		memset(out[i], 0, g->blk);
	}
	if (!in || !out || !offs || i < g->nblk) {
		ret = __LINE__;
		goto out;
	}
	cq0 = ring_completions();
	if (kvtier_xfer_create(r, &attr, &x)) {
		ret = __LINE__;
		goto out;
	}
	if (nr_threads() - before != threads) {
		ret = __LINE__;
		goto out;
	}
	if (how == RT_BREAK_EINVAL || how == RT_BREAK_EAGAIN) {
		if (deny_syscall(__NR_io_uring_enter,
				 how == RT_BREAK_EINVAL ? EINVAL : EAGAIN, true)) {
			ret = __LINE__;
			goto out;
		}
	}
	if (kvtier_xfer_store(x, in, offs, g->nblk, &t) || kvtier_xfer_wait(x, t) ||
	    kvtier_region_cold(r, 0, 0)) {
		ret = __LINE__;
		goto out;
	}
	if (kvtier_xfer_restore(x, out, offs, g->nblk, &t) || kvtier_xfer_wait(x, t)) {
		ret = __LINE__;
		goto out;
	}
	if (blocks_check(out, g->nblk, g->blk, offs, seed) != -1) {
		ret = __LINE__;
		goto out;
	}
	/* Each unit completed on the ring once (and the probe), or none did. */
	cq = ring_completions() - (cq0 < 0 ? 0 : cq0);
	if (how == RT_RING ? cq != units + 1 :
	    how == RT_WORKERS ? ring_completions() != cq0 : cq != 1)
		ret = __LINE__;
out:
	kvtier_xfer_destroy(x);
	/* A joined thread may be listed until its exit is complete. */
	for (i = 0; i < 100 && nr_threads() != before; i++)
		usleep(10000);
	if (ret == -1 && nr_threads() != before)
		ret = __LINE__;
	for (i = 0; i < g->nblk; i++) {
		free(in ? in[i] : NULL);
		free(out ? out[i] : NULL);
	}
	free(in);
	free(out);
	free(offs);
	return ret;
}

/* xfer_round_trip() in a child that first denies @nr with @err (if @nr). */
static int round_trip_child(struct kvtier_region *r, int nr, int err,
			    enum rt_how how, int seed)
{
	int status, line;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid) {
		line = nr && deny_syscall(nr, err, false) ? __LINE__ :
		       xfer_round_trip(r, &rt_small, how, seed);
		if (line != -1)
			fprintf(stderr, "# child failed at line %d\n", line);
		_exit(line == -1 ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

/*
 * Host-buffer xfers move their units through one io_uring thread where
 * the process can use io_uring, and every unit completes on the ring.
 * Where it cannot - a seccomp profile (as container runtimes' defaults
 * have) refuses io_uring_setup, or io_uring_enter so the first no-op
 * fails - four worker threads move them with pread/pwrite. A ring that
 * stops taking requests later (refused, or short of resources for good)
 * moves the units with pread/pwrite on its thread. All round-trip, and
 * what a child stored is what the parent reads.
 */
TEST_F_TIMEOUT(lib, xfer_io_uring_or_workers, 300)
{
	uint64_t off = (RT_NBLK - 1 - 7) * (uint64_t)RT_BLK;
	struct kvtier_region *r;

#ifndef __x86_64__
	SKIP(return, "the seccomp filters are written for x86_64");
#endif
	ASSERT_EQ(0, kvtier_region_create(self->t, RT_NBLK * RT_BLK, &r));
	ASSERT_EQ(-1, xfer_round_trip(r, &rt_small, io_uring_works() ? RT_RING : RT_WORKERS,
				      21));
	ASSERT_EQ(0, round_trip_child(r, __NR_io_uring_setup, ENOSYS, RT_WORKERS, 22));
	ASSERT_EQ(-1, lcheck(r, off, RT_BLK, 22));
	if (io_uring_works()) {
		ASSERT_EQ(0, round_trip_child(r, __NR_io_uring_enter, EPERM,
					      RT_WORKERS, 23));
		ASSERT_EQ(0, round_trip_child(r, 0, 0, RT_BREAK_EINVAL, 24));
		ASSERT_EQ(-1, lcheck(r, off, RT_BLK, 24));
		ASSERT_EQ(0, round_trip_child(r, 0, 0, RT_BREAK_EAGAIN, 25));
		ASSERT_EQ(-1, lcheck(r, off, RT_BLK, 25));
	}
	kvtier_region_close(r);
	/* Blocks of several units on the ring, the last one short. */
	ASSERT_EQ(0, kvtier_region_create(self->t, rt_big.nblk * rt_big.blk, &r));
	ASSERT_EQ(-1, xfer_round_trip(r, &rt_big, io_uring_works() ? RT_RING : RT_WORKERS, 26));
	kvtier_region_close(r);
}

TEST_F_TIMEOUT(lib, xfer_bad_arguments, 300)
{
	struct kvtier_xfer_attr attr = { .block_bytes = 2 * PAGE };
	struct kvtier_xfer *x = (void *)0x1, *xo;
	struct kvtier_region *r, *ro;
	uint64_t offs[2] = { 0, 0 }, ticket = 77;
	unsigned char zero[2 * PAGE], got[2 * PAGE];
	void *bufs[2];
	int ret;

	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-xfer", MiB,
					KVTIER_OPEN_CREATE, 0600, &r));
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(NULL, &attr, &x));
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, NULL, &x));
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, NULL));
	attr.block_bytes = 0;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.block_bytes = MiB + 1;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.block_bytes = 2 * PAGE;
	attr.flags = 2;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.flags = 0;
	attr.reserved[3] = 1;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.reserved[3] = 0;
	attr.staging_buffers = 65;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.staging_buffers = 0;
	attr.staging_bytes = (1UL << 30) + 1;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.staging_bytes = 0;
	attr.flags = KVTIER_XFER_CUDA;
	attr.cuda_device = -1;
	ASSERT_EQ(-EINVAL, kvtier_xfer_create(r, &attr, &x));
	attr.flags = 0;
	ASSERT_EQ((void *)0x1, x);
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));

	bufs[0] = malloc(2 * PAGE);
	bufs[1] = malloc(2 * PAGE);
	kvt_fill(bufs[0], 2 * PAGE, 0, 12);
	kvt_fill(bufs[1], 2 * PAGE, 0, 12);
	offs[0] = 0;
	/* The second block ends past the region: nothing is submitted. */
	offs[1] = MiB - PAGE;
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, offs, 2, &ticket));
	offs[1] = UINT64_MAX - PAGE;
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, offs, 2, &ticket));
	offs[1] = MiB - 2 * PAGE;
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, offs, 0, &ticket));
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, NULL, offs, 2, &ticket));
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, NULL, 2, &ticket));
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, offs, 2, NULL));
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(NULL, bufs, offs, 2, &ticket));
	ASSERT_EQ(-EINVAL, kvtier_xfer_restore(x, bufs, offs, 0, &ticket));
	bufs[1] = NULL;
	ASSERT_EQ(-EINVAL, kvtier_xfer_store(x, bufs, offs, 2, &ticket));
	ASSERT_EQ(-EINVAL, kvtier_xfer_restore(x, bufs, offs, 2, &ticket));
	ASSERT_EQ(77ULL, ticket);
	ASSERT_EQ(-ENOENT, kvtier_xfer_poll(x, 0));
	ASSERT_EQ(-ENOENT, kvtier_xfer_poll(x, 1));
	ASSERT_EQ(-ENOENT, kvtier_xfer_wait(x, 12345));
	ASSERT_EQ(-EINVAL, kvtier_xfer_poll(NULL, 1));
	ASSERT_EQ(-EINVAL, kvtier_xfer_wait(NULL, 1));
	kvtier_xfer_destroy(NULL);
	/* Nothing reached the region. */
	memset(zero, 0, sizeof(zero));
	ASSERT_EQ((ssize_t)sizeof(got), kvtier_region_read(r, got, sizeof(got), 0));
	ASSERT_EQ(0, memcmp(zero, got, sizeof(got)));

	/* A store that fails while it runs: the error comes back. */
	ASSERT_EQ(0, kvtier_xfer_store(x, (void *[]){ (void *)PAGE }, offs, 1, &ticket));
	ASSERT_EQ(-EFAULT, kvtier_xfer_wait(x, ticket));
	ASSERT_EQ(0, kvtier_xfer_store(x, (void *[]){ (void *)PAGE }, offs, 1, &ticket));
	while (!(ret = kvtier_xfer_poll(x, ticket)))
		usleep(1000);
	ASSERT_EQ(-EFAULT, ret);
	/* The first ticket was 1: the refused calls took none. */
	ASSERT_EQ(2ULL, ticket);

	/* A region bound read-only is restored from, never stored to. */
	ASSERT_EQ(0, kvtier_xfer_store(x, bufs, offs, 1, &ticket));
	ASSERT_EQ(0, kvtier_xfer_wait(x, ticket));
	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-xfer", 0,
					KVTIER_OPEN_RDONLY, 0, &ro));
	ASSERT_EQ(0, kvtier_xfer_create(ro, &attr, &xo));
	kvtier_region_close(ro);	/* the xfer keeps its own file */
	ASSERT_EQ(-EACCES, kvtier_xfer_store(xo, bufs, offs, 1, &ticket));
	bufs[1] = calloc(1, 2 * PAGE);
	ASSERT_EQ(0, kvtier_xfer_restore(xo, bufs + 1, offs, 1, &ticket));
	ASSERT_EQ(0, kvtier_xfer_wait(xo, ticket));
	ASSERT_EQ(-1, kvt_check(bufs[1], 2 * PAGE, 0, 12));
	kvtier_xfer_destroy(xo);
	kvtier_xfer_destroy(x);
	kvtier_region_close(r);
	ASSERT_EQ(0, kvtier_region_unlink(self->t, "kv:lib-xfer"));
	free(bufs[0]);
	free(bufs[1]);
}

/*
 * KV reuse across a restart: blocks stored into a persistent region and
 * synced come back by name after the module is unloaded and loaded again.
 */
TEST_F_TIMEOUT(lib, xfer_persistent_restore_after_reload, 400)
{
	struct kvtier_xfer_attr attr = { .block_bytes = BLK };
	struct kvtier_region_info info;
	struct kvtier_region *r;
	struct kvtier_xfer *x;
	uint64_t offs[NBLK], t;
	void **in, **out;

	block_offsets(offs, 0);
	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-prefix", 12 * MiB,
					KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
					KVTIER_OPEN_PERSISTENT, 0600, &r));
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	in = blocks_new(NBLK, BLK, offs, 13);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, kvtier_xfer_store(x, in, offs, NBLK, &t));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t));
	ASSERT_EQ(0, kvtier_region_sync(r));
	kvtier_xfer_destroy(x);
	kvtier_region_close(r);
	kvtier_tier_close(self->t);
	self->t = NULL;

	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
	ASSERT_EQ(0, kvtier_tier_open(0, &self->t));

	ASSERT_EQ(0, kvtier_region_open(self->t, "kv:lib-prefix", 0, 0, 0, &r));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_EQ(12 * MiB, info.size);
	ASSERT_EQ((__u32)KVTIER_OPEN_PERSISTENT, info.flags);
	ASSERT_EQ(0ULL, info.resident);
	ASSERT_GE(info.namespace, (unsigned long long)NBLK * BLK);
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	out = blocks_new(NBLK, BLK, offs, 0);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, kvtier_xfer_restore(x, out, offs, NBLK, &t));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t));
	ASSERT_EQ(-1, blocks_check(out, NBLK, BLK, offs, 13));
	ASSERT_EQ(0, info_of(r, &info));
	ASSERT_GT(info.resident, 0ULL);
	kvtier_xfer_destroy(x);
	kvtier_region_close(r);
	ASSERT_EQ(0, kvtier_region_unlink(self->t, "kv:lib-prefix"));
	blocks_free(in, NBLK);
	blocks_free(out, NBLK);
}

/*
 * KVTIER_XFER_CUDA where no GPU is usable: a clear error, never a silent
 * host-only xfer. -ENOENT without a CUDA runtime, -EIO when one loads but
 * its calls fail (no device).
 */
TEST_F_TIMEOUT(lib, xfer_cuda_unavailable, 120)
{
	struct kvtier_xfer_attr attr = { .block_bytes = PAGE,
					 .flags = KVTIER_XFER_CUDA };
	static const char *const names[] = {
		"libcudart.so.13", "libcudart.so.12", "libcudart.so",
	};
	struct kvtier_xfer *x = (void *)0x1;
	struct kvtier_region *r;
	unsigned char b[PAGE], c[PAGE];
	void *h = NULL, *bp = b, *cp = c;
	uint64_t off = 0, t;
	int want, i;

	for (i = 0; !h && i < 3; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	want = h ? -EIO : -ENOENT;
	ASSERT_EQ(0, kvtier_region_create(self->t, MiB, &r));
	ASSERT_EQ(want, kvtier_xfer_create(r, &attr, &x));
	ASSERT_EQ((void *)0x1, x);
	/* The region is fine without CUDA. */
	attr.flags = 0;
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	kvt_fill(b, PAGE, 0, 14);
	ASSERT_EQ(0, kvtier_xfer_store(x, &bp, &off, 1, &t));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t));
	ASSERT_EQ(0, kvtier_xfer_restore(x, &cp, &off, 1, &t));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t));
	ASSERT_EQ(-1, kvt_check(c, PAGE, 0, 14));
	kvtier_xfer_destroy(x);
	kvtier_region_close(r);
}

/*
 * The CUDA test double (tests/cuda-double, built into BUILD/cuda-double
 * next to BUILD/tests): its driver and runtime loaded by path, so that
 * libkvtier finds "libcudart.so.13" already loaded. @fail: the driver
 * entry point the double fails (read by its constructor), or NULL.
 * Returns the runtime's handle, or NULL if the double is not built.
 */
static void *load_double(const char *fail)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n;
	int i;

	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0)
		return NULL;
	dir[n] = '\0';
	for (i = 0; i < 2; i++)
		*strrchr(dir, '/') = '\0';
	if (fail)
		setenv("KVT_DOUBLE_FAIL", fail, 1);
	snprintf(path, sizeof(path), "%s/cuda-double/libcuda.so.1", dir);
	if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL))
		return NULL;
	snprintf(path, sizeof(path), "%s/cuda-double/libcudart.so.13", dir);
	return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

typedef int (*rt_malloc_fn)(void **, size_t);
typedef int (*rt_free_fn)(void *);
typedef long (*calls_fn)(const char *);

/*
 * Device buffers go through pinned staging with cudaMemcpyAsync in units
 * of staging_bytes; host buffers in the same call go straight to the
 * tier. Bytes round-trip both ways, through the device pointers.
 */
TEST_F_TIMEOUT(lib, xfer_cuda_double, 300)
{
	struct kvtier_xfer_attr attr = { .block_bytes = BLK, .flags = KVTIER_XFER_CUDA,
					 .staging_buffers = 2, .staging_bytes = 16384 };
	uint64_t offs[NBLK], t[2];
	struct kvtier_region *r;
	struct kvtier_xfer *x;
	rt_malloc_fn rt_malloc;
	rt_free_fn rt_free;
	calls_fn calls;
	void *rt, *dev, **host, *bufs[NBLK];
	long copies, streams;
	unsigned int i, ndev = 0;

	rt = load_double(NULL);
	if (!rt)
		SKIP(return, "the CUDA test double is not built (tests/cuda-double)");
	rt_malloc = (rt_malloc_fn)dlsym(rt, "cudaMalloc");
	rt_free = (rt_free_fn)dlsym(rt, "cudaFree");
	calls = (calls_fn)dlsym(RTLD_DEFAULT, "kvt_double_calls");
	ASSERT_NE(NULL, rt_malloc);
	ASSERT_NE(NULL, rt_free);
	ASSERT_NE(NULL, calls);

	block_offsets(offs, 8);
	ASSERT_EQ(0, rt_malloc(&dev, (size_t)NBLK * BLK));
	host = blocks_new(NBLK, BLK, offs, 15);
	ASSERT_NE(NULL, host);
	/* Even blocks on the "device", odd ones in host memory. */
	for (i = 0; i < NBLK; i++) {
		if (i % 2) {
			bufs[i] = host[i];
			continue;
		}
		bufs[i] = (char *)dev + (size_t)i * BLK;
		kvt_fill(bufs[i], BLK, offs[i], 15);
		ndev++;
	}
	ASSERT_EQ(0, kvtier_region_create(self->t, 12 * MiB, &r));
	streams = calls("cuStreamCreateWithPriority");
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	/* One stream per staging buffer, at the bottom of the range. */
	ASSERT_EQ(streams + 2, calls("cuStreamCreateWithPriority"));
	ASSERT_GE(calls("cuCtxGetStreamPriorityRange"), 1);

	copies = calls("cuMemcpyAsync");
	ASSERT_EQ(0, kvtier_xfer_store(x, bufs, offs, NBLK / 2, &t[0]));
	ASSERT_EQ(0, kvtier_xfer_store(x, bufs + NBLK / 2, offs + NBLK / 2,
				       NBLK / 2, &t[1]));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t[0]));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t[1]));
	/* 40 KiB + 8 in 16 KiB units: three copies per device block. */
	ASSERT_EQ(copies + 3 * (long)ndev, calls("cuMemcpyAsync"));
	for (i = 0; i < NBLK; i += 7)
		ASSERT_EQ(-1, lcheck(r, offs[i], BLK & ~7ULL, 15));

	/* Wiped, evicted, restored through staging into the device pointers. */
	memset(dev, 0, (size_t)NBLK * BLK);
	for (i = 1; i < NBLK; i += 2)
		memset(host[i], 0, BLK);
	ASSERT_EQ(0, kvtier_region_cold(r, 0, 0));
	ASSERT_EQ(0, kvtier_xfer_restore(x, bufs, offs, NBLK, &t[0]));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t[0]));
	ASSERT_EQ(copies + 6 * (long)ndev, calls("cuMemcpyAsync"));
	ASSERT_EQ(-1, blocks_check(bufs, NBLK, BLK, offs, 15));

	kvtier_xfer_destroy(x);
	ASSERT_EQ(0, rt_free(dev));
	kvtier_region_close(r);
	blocks_free(host, NBLK);
}

/* A CUDA call failing at create: -EIO and no xfer, never host-only. */
TEST_F_TIMEOUT(lib, xfer_cuda_double_create_fails, 120)
{
	struct kvtier_xfer_attr attr = { .block_bytes = PAGE, .flags = KVTIER_XFER_CUDA };
	struct kvtier_xfer *x = (void *)0x1;
	struct kvtier_region *r;

	if (!load_double("cuStreamCreateWithPriority"))
		SKIP(return, "the CUDA test double is not built (tests/cuda-double)");
	ASSERT_EQ(0, kvtier_region_create(self->t, MiB, &r));
	ASSERT_EQ(-EIO, kvtier_xfer_create(r, &attr, &x));
	ASSERT_EQ((void *)0x1, x);
	attr.cuda_device = 3;	/* the double has one device */
	ASSERT_EQ(-EIO, kvtier_xfer_create(r, &attr, &x));
	kvtier_region_close(r);
}

/* A copy failing during a transfer: that ticket reports -EIO. */
TEST_F_TIMEOUT(lib, xfer_cuda_double_copy_fails, 120)
{
	struct kvtier_xfer_attr attr = { .block_bytes = 2 * PAGE,
					 .flags = KVTIER_XFER_CUDA };
	struct kvtier_region *r;
	struct kvtier_xfer *x;
	unsigned char hostbuf[2 * PAGE], back[2 * PAGE];
	uint64_t off = 0, t;
	rt_malloc_fn rt_malloc;
	void *rt, *dev, *bp;

	rt = load_double("cuMemcpyAsync");
	if (!rt)
		SKIP(return, "the CUDA test double is not built (tests/cuda-double)");
	rt_malloc = (rt_malloc_fn)dlsym(rt, "cudaMalloc");
	ASSERT_NE(NULL, rt_malloc);
	ASSERT_EQ(0, rt_malloc(&dev, 2 * PAGE));
	kvt_fill(dev, 2 * PAGE, 0, 16);
	ASSERT_EQ(0, kvtier_region_create(self->t, MiB, &r));
	ASSERT_EQ(0, kvtier_xfer_create(r, &attr, &x));
	ASSERT_EQ(0, kvtier_xfer_store(x, &dev, &off, 1, &t));
	ASSERT_EQ(-EIO, kvtier_xfer_wait(x, t));
	/* Host buffers need no copy: they still work. */
	kvt_fill(hostbuf, sizeof(hostbuf), 0, 17);
	bp = hostbuf;
	ASSERT_EQ(0, kvtier_xfer_store(x, &bp, &off, 1, &t));
	ASSERT_EQ(0, kvtier_xfer_wait(x, t));
	ASSERT_EQ((ssize_t)sizeof(back), kvtier_region_read(r, back, sizeof(back), 0));
	ASSERT_EQ(-1, kvt_check(back, sizeof(back), 0, 17));
	ASSERT_EQ(0, kvtier_xfer_restore(x, &dev, &off, 1, &t));
	ASSERT_EQ(-EIO, kvtier_xfer_wait(x, t));
	ASSERT_EQ(-1, kvt_check(dev, 2 * PAGE, 0, 16));	/* untouched */
	kvtier_xfer_destroy(x);
	kvtier_region_close(r);
}

TEST_HARNESS_MAIN
