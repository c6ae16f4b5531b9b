// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctls the CUDA shim and libkvtier stand on: GPU range registration
 * (KVTIER_IOC_GPU_REGISTER / _UNREGISTER, debugfs gpu_ranges, the regions
 * file's gpu_bytes) and KVTIER_IOC_REGION_INFO. Every bad argument gets its
 * documented errno and registers nothing.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define DBG	"/sys/kernel/debug/kvtier/kvtier0/"

static const unsigned char uuid[16] = {
	0x5e, 0x0c, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f,
	0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7,
};

#define UUID_STR	"GPU-5e0c1a2b-3c4d-5e6f-7081-92a3b4c5d6e7"

static struct kvtier_gpu_range range(void *va, unsigned long long len,
				     unsigned int mode, const char *tenant)
{
	struct kvtier_gpu_range r = {
		.va = (unsigned long)va, .length = len, .mode = mode,
	};

	memcpy(r.gpu_uuid, uuid, sizeof(uuid));
	strncpy(r.tenant, tenant, sizeof(r.tenant));
	return r;
}

static int reg(int fd, const struct kvtier_gpu_range *r)
{
	return ioctl(fd, KVTIER_IOC_GPU_REGISTER, r) ? -errno : 0;
}

static int unreg(int fd, void *va)
{
	struct kvtier_gpu_range r = { .va = (unsigned long)va };

	return ioctl(fd, KVTIER_IOC_GPU_UNREGISTER, &r) ? -errno : 0;
}

static int info(int fd, struct kvtier_region_info *i)
{
	memset(i, 0xa5, sizeof(*i));
	return ioctl(fd, KVTIER_IOC_REGION_INFO, i) ? -errno : 0;
}

/* Lines of gpu_ranges after its two header lines, copied into @buf. */
static int gpu_lines(char *buf, size_t len)
{
	char line[256];
	int n = 0;
	FILE *f;

	buf[0] = 0;
	f = fopen(DBG "gpu_ranges", "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f) || strcmp(line, "kvtier-gpu 1\n") ||
	    !fgets(line, sizeof(line), f) ||
	    strcmp(line, "id pid va length mode gpu tenant region\n")) {
		fclose(f);
		return -EPROTO;
	}
	while (fgets(line, sizeof(line), f)) {
		if (strlen(buf) + strlen(line) < len)
			strcat(buf, line);
		n++;
	}
	fclose(f);
	return n;
}

/* The gpu_bytes column of region @id in debugfs regions, or -1. */
static long long region_gpu_bytes(unsigned long long id)
{
	return kvt_region_column(id, "gpu_bytes");
}

KVT_TIER_FIXTURE("", 4, , , );

/* A managed range shows in gpu_ranges with every field, and goes. */
TEST_F_TIMEOUT(tier, managed_register_unregister, 300)
{
	struct kvtier_gpu_range r;
	char buf[1024], want[256];
	void *va = (void *)0x7f1200000000ULL;

	ASSERT_EQ(0, gpu_lines(buf, sizeof(buf)));
	r = range(va, 2 * MiB + 1, KVTIER_GPU_MANAGED, "team-a");
	ASSERT_EQ(0, reg(self->fd, &r));
	ASSERT_EQ(1, gpu_lines(buf, sizeof(buf)));
	/* Length rounded up to pages; no region for managed memory. */
	snprintf(want, sizeof(want), " %d 0x7f1200000000 %llu managed " UUID_STR " team-a -\n",
		 getpid(), 2 * MiB + PAGE);
	ASSERT_NE(NULL, strstr(buf, want)) TH_LOG("gpu_ranges: %s", buf);

	/* A second range that overlaps the first: EEXIST, still one line. */
	r = range((char *)va + MiB, PAGE, KVTIER_GPU_MANAGED, "");
	ASSERT_EQ(-EEXIST, reg(self->fd, &r));
	/* Adjacent is fine; an empty tenant prints as "-". */
	r = range((char *)va + 2 * MiB + PAGE, PAGE, KVTIER_GPU_MANAGED, "");
	ASSERT_EQ(0, reg(self->fd, &r));
	ASSERT_EQ(2, gpu_lines(buf, sizeof(buf)));
	ASSERT_NE(NULL, strstr(buf, " managed " UUID_STR " - -\n"));

	/* UNREGISTER with a length that differs: EINVAL, kept. */
	r = range(va, PAGE, 0, "");
	memset(r.gpu_uuid, 0, sizeof(r.gpu_uuid));
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_GPU_UNREGISTER, &r));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(2, gpu_lines(buf, sizeof(buf)));
	/* The same fields as registered are accepted. */
	r = range(va, 2 * MiB + 1, KVTIER_GPU_MANAGED, "team-a");
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_GPU_UNREGISTER, &r));
	ASSERT_EQ(-ENOENT, unreg(self->fd, va));
	ASSERT_EQ(0, unreg(self->fd, (char *)va + 2 * MiB + PAGE));
	ASSERT_EQ(0, gpu_lines(buf, sizeof(buf)));
}

/*
 * An HMM range must lie in one mapping of this tier; it adds to the
 * region's gpu_bytes (debugfs and REGION_INFO) and the bytes written
 * through it round-trip through eviction.
 */
TEST_F_TIMEOUT(tier, hmm_range_is_a_tier_mapping, 300)
{
	size_t len = 8 * MiB;	/* twice the budget */
	struct kvtier_region_info ri;
	struct kvtier_gpu_range r;
	unsigned char *p, *anon, *page;
	char buf[1024];

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);

	/* Not a tier mapping, or reaching past it: EINVAL. */
	r = range(anon, len, KVTIER_GPU_HMM, "");
	ASSERT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(p + PAGE, len, KVTIER_GPU_HMM, "");
	ASSERT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(p - PAGE, 2 * PAGE, KVTIER_GPU_HMM, "");
	ASSERT_EQ(-EINVAL, reg(self->fd, &r));
	ASSERT_EQ(0, gpu_lines(buf, sizeof(buf)));

	r = range(p, len, KVTIER_GPU_HMM, "llm");
	ASSERT_EQ(0, reg(self->fd, &r));
	ASSERT_EQ(0, info(self->fd, &ri));
	ASSERT_EQ(len, ri.gpu_bytes);
	ASSERT_EQ((long long)len, region_gpu_bytes(ri.id));
	ASSERT_EQ(1, gpu_lines(buf, sizeof(buf)));
	snprintf(buf + 512, 64, " hmm " UUID_STR " llm %llu\n", ri.id);
	ASSERT_NE(NULL, strstr(buf, buf + 512));

	/* Bytes written through the registered range survive eviction. */
	kvt_fill(p, len, 0, 11);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, len, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(p, len, 0, 11));
	page = malloc(PAGE);
	ASSERT_EQ((ssize_t)PAGE, pread(self->fd, page, PAGE, len - PAGE));
	ASSERT_EQ(-1, kvt_check(page, PAGE, len - PAGE, 11));
	free(page);

	ASSERT_EQ(0, unreg(self->fd, p));
	ASSERT_EQ(0, info(self->fd, &ri));
	ASSERT_EQ(0ULL, ri.gpu_bytes);
	ASSERT_EQ(0, region_gpu_bytes(ri.id));
	munmap(anon, len);
	munmap(p, len);
}

/* Every malformed argument: EINVAL or EFAULT, nothing registered. */
TEST_F_TIMEOUT(tier, bad_arguments, 300)
{
	void *va = (void *)0x7f1300000000ULL;
	struct kvtier_gpu_range r;
	char buf[256];

	r = range(va, 0, KVTIER_GPU_MANAGED, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range((char *)va + 1, PAGE, KVTIER_GPU_MANAGED, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, 0, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, 3, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "");
	r.flags = 1;
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "");
	r.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "a b");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "%n%s\n");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "");
	memset(r.tenant, 'x', sizeof(r.tenant));	/* unterminated */
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, PAGE, KVTIER_GPU_MANAGED, "ok");
	r.tenant[5] = 'z';				/* bytes after the NUL */
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range((void *)(~0ULL & ~(PAGE - 1)), PAGE, KVTIER_GPU_MANAGED, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	r = range(va, ~0ULL, KVTIER_GPU_MANAGED, "");
	EXPECT_EQ(-EINVAL, reg(self->fd, &r));
	EXPECT_EQ(-1, ioctl(self->fd, KVTIER_IOC_GPU_REGISTER, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, KVTIER_IOC_GPU_UNREGISTER, (void *)16));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-ENOENT, unreg(self->fd, va));
	EXPECT_EQ(0, gpu_lines(buf, sizeof(buf)));
}

/*
 * Ranges belong to the file and the process: closing the file drops its
 * ranges only; a forked child cannot unregister its parent's, and may
 * register the same addresses (its own address space).
 */
TEST_F_TIMEOUT(tier, ownership_file_and_process, 300)
{
	void *va = (void *)0x7f1400000000ULL;
	struct kvtier_gpu_range r;
	char buf[1024];
	int fd2, status;
	pid_t pid;

	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	r = range(va, MiB, KVTIER_GPU_MANAGED, "one");
	ASSERT_EQ(0, reg(self->fd, &r));
	r = range((char *)va + MiB, MiB, KVTIER_GPU_MANAGED, "two");
	ASSERT_EQ(0, reg(fd2, &r));
	ASSERT_EQ(-ENOENT, unreg(fd2, va));	/* not this file's */
	ASSERT_EQ(2, gpu_lines(buf, sizeof(buf)));

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct kvtier_gpu_range c = range(va, MiB, KVTIER_GPU_MANAGED, "child");

		if (unreg(self->fd, va) != -ENOENT)
			_exit(1);
		if (reg(self->fd, &c) || unreg(self->fd, va))
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(2, gpu_lines(buf, sizeof(buf)));

	close(fd2);
	ASSERT_EQ(1, gpu_lines(buf, sizeof(buf)));
	ASSERT_NE(NULL, strstr(buf, " one -\n"));
	/* The child's registrations went with it; closing the file drops the rest. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, gpu_lines(buf, sizeof(buf)));
}

/* REGION_INFO reports what the region holds, for unnamed and named ones. */
TEST_F_TIMEOUT(tier, region_info, 300)
{
	size_t len = 8 * MiB;
	struct kvtier_region_open ro = {
		.name = "kvtier-gpu-test:info", .size = 2 * MiB,
		.flags = KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT,
		.mode = 0640,
	};
	struct kvtier_region_name rn = { .name = "kvtier-gpu-test:info" };
	struct kvtier_region_info ri;
	unsigned char *p, *page;
	int fd2;

	ASSERT_EQ(-ENXIO, info(self->fd, &ri));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, 2 * MiB, 0, 5);
	ASSERT_EQ(0, info(self->fd, &ri));
	ASSERT_STREQ("", ri.name);
	ASSERT_GT(ri.id, 0ULL);
	ASSERT_EQ(len, ri.size);
	ASSERT_EQ(2 * MiB, ri.resident);
	ASSERT_EQ(2 * MiB, ri.dirty);
	ASSERT_EQ(0ULL, ri.namespace);
	ASSERT_EQ(0ULL, ri.pinned);
	ASSERT_GE(ri.faults, 2 * MiB / PAGE / 16);	/* fault-around maps 16 */
	ASSERT_EQ(0ULL, ri.refaults);
	ASSERT_EQ(0U, ri.owner);
	ASSERT_EQ(1U, ri.users);
	ASSERT_EQ(0U, ri.flags);
	ASSERT_EQ(0, ri.error);
	ASSERT_EQ(0U, ri.reserved0);
	ASSERT_EQ(0ULL, ri.reserved[0] | ri.reserved[1] | ri.reserved[2] | ri.reserved[3]);

	/* Written back and dropped: on the namespace, not resident; reads back. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, len, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, info(self->fd, &ri));
	ASSERT_EQ(0ULL, ri.resident);
	ASSERT_EQ(0ULL, ri.dirty);
	ASSERT_EQ(2 * MiB, ri.namespace);
	ASSERT_EQ(-1, kvt_check(p, 2 * MiB, 0, 5));
	ASSERT_EQ(0, info(self->fd, &ri));
	ASSERT_GE(ri.resident, 2 * MiB);
	ASSERT_LE(ri.resident, 4 * MiB);
	ASSERT_GT(ri.refaults, 0ULL);
	munmap(p, len);

	/* Named, persistent, bound read-only by a second file. */
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd2, 0);
	ASSERT_EQ(0, ioctl(fd2, KVTIER_IOC_REGION_OPEN, &ro));
	page = malloc(PAGE);
	ASSERT_NE(NULL, page);
	kvt_fill(page, PAGE, MiB, 6);
	ASSERT_EQ((ssize_t)PAGE, pwrite(fd2, page, PAGE, MiB));
	close(fd2);
	fd2 = kvt_tier_open(0, O_RDWR);
	ro.flags = KVTIER_OPEN_RDONLY;
	ro.size = 0;
	ro.mode = 0;
	ASSERT_EQ(0, ioctl(fd2, KVTIER_IOC_REGION_OPEN, &ro));
	ASSERT_EQ(0, info(fd2, &ri));
	ASSERT_STREQ("kvtier-gpu-test:info", ri.name);
	ASSERT_EQ(2 * MiB, ri.size);
	ASSERT_EQ(0640U, ri.mode);
	ASSERT_EQ((unsigned int)(KVTIER_OPEN_PERSISTENT | KVTIER_OPEN_RDONLY), ri.flags);
	ASSERT_EQ(1U, ri.users);
	memset(page, 0, PAGE);
	ASSERT_EQ((ssize_t)PAGE, pread(fd2, page, PAGE, MiB));
	ASSERT_EQ(-1, kvt_check(page, PAGE, MiB, 6));
	free(page);
	ASSERT_EQ(-1, ioctl(fd2, KVTIER_IOC_REGION_INFO, (void *)16));
	ASSERT_EQ(EFAULT, errno);
	close(fd2);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_UNLINK, &rn));
}

TEST_HARNESS_MAIN
