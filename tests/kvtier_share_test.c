// SPDX-License-Identifier: GPL-2.0
/*
 * Sharing a namespace's KV read-only: sealed persistent regions
 * (KVTIER_REGION_SEALED: immutable, recorded on the namespace) and tiers
 * attached read-only (the read_only knob), which serve sealed regions and
 * write nothing at all.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define NEW_PERSIST	(KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT)

static int bind_name(int fd, const char *name, unsigned long long size,
		     unsigned int flags)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = 0644 };

	strncpy(ro.name, name, sizeof(ro.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro) ? -errno : 0;
}

static int set_flags(int fd, const char *name, unsigned int set,
		     unsigned int clear)
{
	struct kvtier_region_flags rf = { .set = set, .clear = clear };

	strncpy(rf.name, name, sizeof(rf.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_SETFLAGS, &rf) ? -errno : 0;
}

static int unlink_name(int fd, const char *name)
{
	struct kvtier_region_name rn = { 0 };

	strncpy(rn.name, name, sizeof(rn.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn) ? -errno : 0;
}

/* A persistent region @name of @len bytes with pattern @seed, no file left. */
static int make_region(const char *name, size_t len, unsigned long long seed)
{
	unsigned char *buf = malloc(len);
	int fd = kvt_tier_open(0, O_RDWR), ret;

	if (!buf || fd < 0)
		return -ENOMEM;
	kvt_fill(buf, len, 0, seed);
	ret = bind_name(fd, name, len, NEW_PERSIST);
	if (!ret && pwrite(fd, buf, len, 0) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	free(buf);
	return ret;
}

/* Bytes of @name (bound read-only) equal pattern @seed: 0, else -1/-errno. */
static int check_region(const char *name, size_t len, unsigned long long seed)
{
	unsigned char *p;
	int fd = kvt_tier_open(0, O_RDWR), ret;

	ret = bind_name(fd, name, 0, KVTIER_OPEN_RDONLY);
	if (ret) {
		close(fd);
		return ret;
	}
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ret = p == MAP_FAILED ? -errno : (kvt_check(p, len, 0, seed) == -1 ? 0 : -1);
	if (p != MAP_FAILED)
		munmap(p, len);
	close(fd);
	return ret;
}

/* CRC32C of the first @len bytes of @dev, or 0 on a read error. */
static uint32_t dev_crc(const char *dev, size_t len)
{
	unsigned char *buf = malloc(MiB);
	uint32_t crc = 0;
	size_t off;

	for (off = 0; buf && off < len; off += MiB) {
		if (kvt_dev_read(dev, buf, MiB, off)) {
			free(buf);
			return 0;
		}
		crc = kvt_crc32c(crc, buf, MiB);
	}
	free(buf);
	return crc;
}

KVT_TIER_FIXTURE("", 4, , , kvt_tier_write(0, "backing_dev", "none");
		 kvt_tier_write(0, "read_only", "0"));

/*
 * Sealing: only a persistent region no file is bound to; afterwards only
 * read-only binds, no writable mapping, no unsealing; the flag is listed,
 * survives a reload and marks the superblock RO_COMPAT_SEALED.
 */
TEST_F_TIMEOUT(tier, seal, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	struct kvtier_disk_super sb;
	struct kvtier_region_entry e[16];
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = 16 };
	struct kvtier_region_info ri;
	unsigned char buf[PAGE], *p;
	int fd, fd2;
	unsigned int i;

	ASSERT_EQ(0, make_region("share:sealed", 8 * MiB, 31));
	/* Volatile regions cannot be sealed; bound ones neither. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, bind_name(fd, "share:volatile", MiB, KVTIER_OPEN_CREATE));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "share:volatile", KVTIER_REGION_SEALED, 0));
	ASSERT_EQ(0, unlink_name(self->fd, "share:volatile"));
	close(fd);
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, bind_name(fd, "share:sealed", 0, KVTIER_OPEN_RDONLY));
	ASSERT_EQ(-EBUSY, set_flags(self->fd, "share:sealed", KVTIER_REGION_SEALED, 0));
	close(fd);

	ASSERT_EQ(0, set_flags(self->fd, "share:sealed", KVTIER_REGION_SEALED, 0));
	ASSERT_EQ(0, set_flags(self->fd, "share:sealed", KVTIER_REGION_SEALED, 0));
	ASSERT_EQ(-EPERM, set_flags(self->fd, "share:sealed", 0, KVTIER_REGION_SEALED));
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_LIST, &rl));
	for (i = 0; i < rl.count && strcmp(e[i].name, "share:sealed"); i++)
		;
	ASSERT_LT(i, rl.count);
	ASSERT_EQ((unsigned int)(KVTIER_OPEN_PERSISTENT | KVTIER_REGION_SEALED), e[i].flags);

	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(-EPERM, bind_name(fd, "share:sealed", 0, 0));
	ASSERT_EQ(0, bind_name(fd, "share:sealed", 0, KVTIER_OPEN_RDONLY));
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_INFO, &ri));
	ASSERT_EQ((unsigned int)(KVTIER_OPEN_PERSISTENT | KVTIER_OPEN_RDONLY |
				 KVTIER_REGION_SEALED), ri.flags);
	ASSERT_EQ(MAP_FAILED, mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	ASSERT_EQ(-1, pwrite(fd, buf, PAGE, 0));
	ASSERT_EQ(EACCES, errno);
	/* Pinning (host memory only) is still fine; the bytes are intact. */
	p = mmap(NULL, 8 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, kvt_check(p, 8 * MiB, 0, 31));
	munmap(p, 8 * MiB);
	/* Pinning against reclaim stays the owner's to change, file bound or not. */
	fd2 = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, set_flags(fd2, "share:sealed", KVTIER_REGION_PINNED, 0));
	close(fd2);
	close(fd);

	/* On the namespace: the feature bit, and the flag after a reload. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_super_read(ns, &sb, NULL));
	/* (RO_COMPAT_LEASE is there too when this module formatted it.) */
	ASSERT_EQ(KVTIER_FEATURE_RO_COMPAT_SEALED,
		  le64toh(sb.feature_ro_compat) & ~KVTIER_FEATURE_RO_COMPAT_LEASE);
	self->fd = kvt_start("", 4);
	ASSERT_GE(self->fd, 0);
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(-EPERM, bind_name(fd, "share:sealed", 0, 0));
	close(fd);
	ASSERT_EQ(0, check_region("share:sealed", 8 * MiB, 31));
	/* Its owner can still unlink it; then the bit goes with the next commit. */
	ASSERT_EQ(0, unlink_name(self->fd, "share:sealed"));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_super_read(ns, &sb, NULL));
	ASSERT_EQ(0ULL, le64toh(sb.feature_ro_compat) & ~KVTIER_FEATURE_RO_COMPAT_LEASE);
}

/*
 * A read-only tier: serves sealed regions (read-only binds), refuses every
 * change with EROFS, and writes nothing: the namespace is bit-identical
 * afterwards, evictions included.
 */
TEST_F_TIMEOUT(tier, read_only_attach, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	size_t dev_len = kvt_dev_size(ns);
	struct kvtier_region_create rc = { .size = MiB };
	uint32_t before, after;
	long long wb, clean;
	unsigned char *p;
	int fd;

	ASSERT_EQ(0, make_region("share:prefix", 16 * MiB, 32));
	ASSERT_EQ(0, set_flags(self->fd, "share:prefix", KVTIER_REGION_SEALED, 0));
	ASSERT_EQ(0, make_region("share:open", MiB, 33));

	/* The knob only changes while detached. */
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "read_only", "1"));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "read_only", "2"));
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "1"));
	ASSERT_EQ(-EROFS, kvt_tier_write(0, "format", ns));
	before = dev_crc(ns, dev_len);
	ASSERT_NE(0U, before);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);

	/* The sealed region reads back, through eviction (16 MiB, 4 MiB pool). */
	wb = kvt_stat(0, "writeback_pages");
	clean = kvt_stat(0, "evictions_clean");
	ASSERT_EQ(0, check_region("share:prefix", 16 * MiB, 32));
	ASSERT_EQ(0, check_region("share:prefix", 16 * MiB, 32));
	ASSERT_GT(kvt_stat(0, "evictions_clean"), clean);
	ASSERT_EQ(wb, kvt_stat(0, "writeback_pages"));

	/* Everything else: EROFS. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(-EROFS, bind_name(fd, "share:prefix", 0, 0));
	ASSERT_EQ(-EROFS, bind_name(fd, "share:open", 0, KVTIER_OPEN_RDONLY));
	ASSERT_EQ(-EROFS, bind_name(fd, "share:new", MiB, NEW_PERSIST));
	ASSERT_EQ(-EROFS, bind_name(fd, "share:new", MiB, KVTIER_OPEN_CREATE));
	ASSERT_EQ(-ENOENT, bind_name(fd, "share:new", 0, KVTIER_OPEN_RDONLY));
	ASSERT_EQ(-1, ioctl(fd, KVTIER_IOC_REGION_CREATE, &rc));
	ASSERT_EQ(EROFS, errno);
	p = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_EQ(MAP_FAILED, p);
	ASSERT_EQ(EROFS, errno);
	close(fd);
	ASSERT_EQ(-EROFS, unlink_name(self->fd, "share:prefix"));
	ASSERT_EQ(-EROFS, set_flags(self->fd, "share:prefix", KVTIER_REGION_PINNED, 0));
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "read_only", "0"));

	/* Detach and unload write nothing either. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	after = dev_crc(ns, dev_len);
	ASSERT_EQ(before, after);

	/* A blank namespace is not formatted read-only. */
	{
		const char *ns1 = kvt_ns("KVTIER_NS1");
		unsigned char zero[64 * 1024] = { 0 };

		if (ns1) {
			ASSERT_EQ(0, kvt_dev_write(ns1, zero, sizeof(zero), 0));
			ASSERT_EQ(-EROFS, kvt_tier_write(0, "backing_dev", ns1));
			size_t i;

			memset(zero, 0xff, sizeof(zero));
			ASSERT_EQ(0, kvt_dev_read(ns1, zero, sizeof(zero), 0));
			for (i = 0; i < sizeof(zero) && !zero[i]; i++)
				;
			ASSERT_EQ(sizeof(zero), i);
		}
	}

	/* Read-write again: the regions are as they were; clean up. */
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "0"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, check_region("share:open", MiB, 33));
	ASSERT_EQ(0, unlink_name(self->fd, "share:prefix"));
	ASSERT_EQ(0, unlink_name(self->fd, "share:open"));
}

/*
 * Superblock feature bits: an unknown read-only-compatible feature (in an
 * intact copy) refuses a read-write attach but not a read-only one; a bit
 * flipped in a copy whose checksum then fails is damage, and the other
 * copy is used (degraded), not "a newer format".
 */
TEST_F_TIMEOUT(tier, feature_bits, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	unsigned char blk[2][KVTIER_BLOCK_SIZE], orig[2][KVTIER_BLOCK_SIZE];
	struct kvtier_disk_super *s0 = (void *)blk[0], *s1 = (void *)blk[1];
	struct kvtier_disk_super sb;
	char state[32];
	int newest;

	ASSERT_EQ(0, make_region("share:feat", MiB, 34));
	ASSERT_EQ(0, set_flags(self->fd, "share:feat", KVTIER_REGION_SEALED, 0));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dev_read(ns, orig, sizeof(orig), 0));

	/* Unknown ro_compat bit 62 in both intact copies. */
	memcpy(blk, orig, sizeof(blk));
	s0->feature_ro_compat |= htole64(1ULL << 62);
	s1->feature_ro_compat |= htole64(1ULL << 62);
	kvt_super_seal(s0);
	kvt_super_seal(s1);
	ASSERT_EQ(0, kvt_dev_write(ns, blk, sizeof(blk), 0));
	ASSERT_EQ(-EOPNOTSUPP, kvt_tier_write(0, "backing_dev", ns));
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "1"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	ASSERT_EQ(0, check_region("share:feat", MiB, 34));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "0"));
	/* Nothing was written: the copies are as this test left them. */
	{
		unsigned char now[2][KVTIER_BLOCK_SIZE];

		ASSERT_EQ(0, kvt_dev_read(ns, now, sizeof(now), 0));
		ASSERT_EQ(0, memcmp(now, blk, sizeof(now)));
	}

	/*
	 * An incompat bit flipped in the older copy, checksum not fixed:
	 * damage (attached from the newer one, degraded), not a newer format.
	 */
	memcpy(blk, orig, sizeof(blk));
	ASSERT_EQ(0, kvt_dev_write(ns, blk, sizeof(blk), 0));
	ASSERT_EQ(0, kvt_super_read(ns, &sb, &newest));
	(newest ? s0 : s1)->feature_incompat ^= htole64(1ULL << 6);
	ASSERT_EQ(0, kvt_dev_write(ns, blk, sizeof(blk), 0));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	ASSERT_EQ(0, kvt_tier_read(0, "state", state, sizeof(state)));
	ASSERT_STREQ("degraded", state);
	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, check_region("share:feat", MiB, 34));
	ASSERT_EQ(0, unlink_name(self->fd, "share:feat"));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	self->fd = kvt_tier_open(0, O_RDWR);
}

TEST_HARNESS_MAIN
