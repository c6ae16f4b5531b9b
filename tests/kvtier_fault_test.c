// SPDX-License-Identifier: GPL-2.0
/*
 * Injected failures at the module's fault-injection sites
 * (/sys/kernel/debug/kvtier/fail_*): each gives its documented error to
 * the caller that hit it, loses no byte, is not sticky where it is
 * transient, and leaks nothing (pages and slots are counted back; the
 * debug kernel's kmemleak scan covers the rest).
 *
 * The sites exist only on kernels with CONFIG_FAULT_INJECTION_DEBUG_FS
 * (`make check-debug`); elsewhere every test is skipped with that reason.
 * Failures are limited to this process (task-filter + make-it-fail), so
 * the background write-back worker never takes one meant for a test.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define FAIL	"/sys/kernel/debug/kvtier/"

/* Arm @site to fail this task's next @times hits (-1: every hit). */
static int fail_arm(const char *site, int times)
{
	char path[128], val[32];
	static const char * const setup[][2] = {
		{ "verbose", "0" }, { "interval", "1" }, { "space", "0" },
		{ "task-filter", "Y" }, { "probability", "100" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(setup) / sizeof(setup[0]); i++) {
		snprintf(path, sizeof(path), FAIL "%s/%s", site, setup[i][0]);
		if (kvt_write(path, setup[i][1]))
			return -1;
	}
	snprintf(path, sizeof(path), FAIL "%s/times", site);
	snprintf(val, sizeof(val), "%d", times);
	if (kvt_write(path, val))
		return -1;
	return kvt_write("/proc/self/make-it-fail", "1");
}

static int fail_disarm(const char *site)
{
	char path[128];

	snprintf(path, sizeof(path), FAIL "%s/probability", site);
	return kvt_write(path, "0") | kvt_write("/proc/self/make-it-fail", "0");
}

/* Hits of @site still to fail (the times counter counts down). */
static long long fail_left(const char *site)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), FAIL "%s/times", site);
	if (kvt_read(path, buf, sizeof(buf)))
		return -1000;
	return strtoll(buf, NULL, 10);
}

static int region_info(int fd, struct kvtier_region_info *ri)
{
	return ioctl(fd, KVTIER_IOC_REGION_INFO, ri) ? -errno : 0;
}

/* Nothing may stay charged once every file is gone. */
KVT_TIER_FIXTURE("", 4, ,
		 if (!kvt_exists(FAIL "fail_page_alloc")) {
			close(self->fd);
			self->fd = -1;
			ASSERT_EQ(0, kvt_unload());
			SKIP(return, "kernel without CONFIG_FAULT_INJECTION_DEBUG_FS: no kvtier fault-injection sites");
		 },
		 EXPECT_EQ(0, kvt_stat(0, "resident_pages")));

/*
 * No page: the fault answers VM_FAULT_OOM, not SIGBUS, and the access is
 * retried and gets its page; pwrite says ENOMEM; then all is well.
 */
TEST_F_TIMEOUT(tier, page_alloc, 300)
{
	unsigned char *p, buf[PAGE];
	int kfd = kvt_kmsg_end();

	ASSERT_LE(0, kfd);
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, MiB / 2, 0, 3);

	ASSERT_EQ(0, fail_arm("fail_page_alloc", 1));
	ASSERT_EQ(0, kvt_touch_or_sigbus(p + MiB / 2));
	ASSERT_EQ(0, fail_left("fail_page_alloc"));
	/* The core's line for a VM_FAULT_OOM outside a memory cgroup's OOM. */
	ASSERT_LT(0, kvt_kmsg_scan(kfd, "VM_FAULT_OOM"));
	close(kfd);
	ASSERT_EQ(0, fail_arm("fail_page_alloc", 1));
	kvt_fill(buf, PAGE, MiB - PAGE, 4);
	ASSERT_EQ(-1, pwrite(self->fd, buf, PAGE, MiB - PAGE));
	ASSERT_EQ(ENOMEM, errno);
	ASSERT_EQ(0, fail_disarm("fail_page_alloc"));

	/* The failed pages were never created; the others are intact. */
	ASSERT_EQ(0, kvt_touch_or_sigbus(p + MiB / 2));
	ASSERT_EQ(0, p[MiB / 2]);
	ASSERT_EQ((ssize_t)PAGE, pwrite(self->fd, buf, PAGE, MiB - PAGE));
	ASSERT_EQ(-1, kvt_check(p + MiB - PAGE, PAGE, MiB - PAGE, 4));
	ASSERT_EQ(-1, kvt_check(p, MiB / 2, 0, 3));
	ASSERT_EQ(0, fsync(self->fd));
	munmap(p, MiB);
	close(self->fd);
	self->fd = -1;
}

/*
 * No I/O descriptor: write-back fails with ENOMEM and the pages stay dirty
 * (not a sticky error: the next fsync writes them); a read fails pread
 * (ENOMEM) and a fault (VM_FAULT_OOM: retried, so the access gets the
 * right bytes); the next read is right.
 */
TEST_F_TIMEOUT(tier, io_alloc, 300)
{
	size_t len = 2 * MiB;
	struct kvtier_region_info ri;
	unsigned char *p, buf[PAGE];

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, len, 0, 5);

	ASSERT_EQ(0, fail_arm("fail_io_alloc", 1));
	ASSERT_EQ(-1, fsync(self->fd));
	ASSERT_EQ(ENOMEM, errno);
	ASSERT_EQ(0, fail_disarm("fail_io_alloc"));
	ASSERT_EQ(0, region_info(self->fd, &ri));
	ASSERT_GT(ri.dirty, 0ULL);
	ASSERT_EQ(0, ri.error);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, region_info(self->fd, &ri));
	ASSERT_EQ(0ULL, ri.dirty);
	ASSERT_EQ(len, ri.namespace);

	/* Reading back: the first attempt fails, nothing wrong is handed out. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, len, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, fail_arm("fail_io_alloc", 1));
	ASSERT_EQ(0, kvt_touch_or_sigbus(p));
	ASSERT_EQ(0, fail_left("fail_io_alloc"));
	ASSERT_EQ(-1, kvt_check(p, PAGE, 0, 5));
	ASSERT_EQ(0, fail_arm("fail_io_alloc", 1));
	ASSERT_EQ(-1, pread(self->fd, buf, PAGE, MiB));
	ASSERT_EQ(ENOMEM, errno);
	ASSERT_EQ(0, fail_disarm("fail_io_alloc"));
	ASSERT_EQ((ssize_t)PAGE, pread(self->fd, buf, PAGE, MiB));
	ASSERT_EQ(-1, kvt_check(buf, PAGE, MiB, 5));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 5));
	munmap(p, len);
	close(self->fd);
	self->fd = -1;
}

/* No free slot: fsync says ENOSPC, counted, not sticky, nothing lost. */
TEST_F_TIMEOUT(tier, slot_alloc, 300)
{
	long long nospace = kvt_stat(0, "nospace_errors");
	struct kvtier_region_info ri;
	unsigned char *p;

	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, MiB, 0, 6);
	ASSERT_EQ(0, fail_arm("fail_slot_alloc", -1));
	ASSERT_EQ(-1, fsync(self->fd));
	ASSERT_EQ(ENOSPC, errno);
	ASSERT_EQ(0, fail_disarm("fail_slot_alloc"));
	ASSERT_GT(kvt_stat(0, "nospace_errors"), nospace);
	ASSERT_EQ(0, region_info(self->fd, &ri));
	ASSERT_EQ(MiB, ri.dirty);
	ASSERT_EQ(0ULL, ri.namespace);
	ASSERT_EQ(0, fsync(self->fd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, MiB, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(p, MiB, 0, 6));
	munmap(p, MiB);
	close(self->fd);
	self->fd = -1;
}

static int bind_persistent(int fd, const char *name, unsigned int flags)
{
	struct kvtier_region_open ro = {
		.size = MiB, .flags = flags, .mode = 0600,
	};

	strncpy(ro.name, name, sizeof(ro.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro) ? -errno : 0;
}

/*
 * A metadata write fails: creating a persistent region fails with EIO and
 * leaves no region; fsync of one fails with EIO. Once writes work again a
 * commit succeeds, and after a module reload the namespace holds the last
 * committed bytes and no trace of the failed region.
 */
TEST_F_TIMEOUT(tier, meta_write, 300)
{
	unsigned int create = KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
			      KVTIER_OPEN_PERSISTENT;
	unsigned char buf[PAGE];
	int fd2;

	ASSERT_EQ(0, bind_persistent(self->fd, "fault:kept", create));
	kvt_fill(buf, PAGE, 0, 7);
	ASSERT_EQ((ssize_t)PAGE, pwrite(self->fd, buf, PAGE, 0));
	ASSERT_EQ(0, fsync(self->fd));

	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, fail_arm("fail_meta_write", -1));
	ASSERT_EQ(-EIO, bind_persistent(fd2, "fault:lost", create));
	kvt_fill(buf, PAGE, 0, 8);
	ASSERT_EQ((ssize_t)PAGE, pwrite(self->fd, buf, PAGE, 0));
	ASSERT_EQ(-1, fsync(self->fd));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, fail_disarm("fail_meta_write"));
	close(fd2);

	/* The failed create left nothing; the kept region commits again. */
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(-ENOENT, bind_persistent(fd2, "fault:lost", 0));
	close(fd2);
	ASSERT_EQ(0, fsync(self->fd));
	close(self->fd);
	self->fd = -1;

	ASSERT_EQ(0, kvt_unload());
	self->fd = kvt_start("", 4);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, bind_persistent(self->fd, "fault:kept", 0));
	ASSERT_EQ((ssize_t)PAGE, pread(self->fd, buf, PAGE, 0));
	ASSERT_EQ(-1, kvt_check(buf, PAGE, 0, 8));
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(-ENOENT, bind_persistent(fd2, "fault:lost", 0));
	close(fd2);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_UNLINK,
			   &(struct kvtier_region_name){ .name = "fault:kept" }));
	close(self->fd);
	self->fd = -1;
}

TEST_HARNESS_MAIN
