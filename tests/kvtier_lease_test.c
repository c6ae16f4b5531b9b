// SPDX-License-Identifier: GPL-2.0
/*
 * One read-write attach of a namespace at a time: the ownership lease
 * (kmod/lease.c, RO_COMPAT_LEASE in Documentation/kvtier-format.rst).
 *
 * Two dm-linear devices over KVTIER_NS1 are two paths to one namespace,
 * as two fabrics controllers or two hosts would be: the block layer's
 * exclusive claim does not see that they share media, only the lease
 * does. Tier 0 attaches path A, tier 1 path B. Records the test forges
 * stand in for a host that crashed, and for one that took the namespace
 * over while this one was stalled.
 *
 * Needs KVTIER_NS1, dmsetup and dm-linear (each test skips, saying why).
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/fs.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define PATH_A		"/dev/mapper/kvt-lease-a"
#define PATH_B		"/dev/mapper/kvt-lease-b"
#define IV_MS		100
/* How long an attach watches a held record: 2 x interval + 1 s. */
#define WAIT_MS		(2 * IV_MS + 1000)

/* Write @path to tier @id's backing_dev; -errno; *@ms: how long it took. */
static int attach(int id, const char *path, long long *ms)
{
	long long t0 = kvt_now_ms();
	int ret = kvt_tier_write(id, "backing_dev", path);

	if (ms)
		*ms = kvt_now_ms() - t0;
	return ret;
}

static int lease_crc_ok(const struct kvtier_disk_lease *l)
{
	struct kvtier_disk_lease tmp = *l;

	tmp.crc = 0;
	return le32toh(l->crc) == kvt_crc32c(~0U, &tmp, sizeof(tmp));
}

static void lease_seal(struct kvtier_disk_lease *l)
{
	l->crc = 0;
	l->crc = htole32(kvt_crc32c(~0U, l, sizeof(*l)));
}

/* The lease block of the namespace behind @dev (0 if none) and its record. */
static unsigned long long lease_read(const char *dev,
				     struct kvtier_disk_lease *l)
{
	unsigned char blk[KVTIER_BLOCK_SIZE];
	struct kvtier_disk_super sb;
	unsigned long long b;

	if (kvt_super_read(dev, &sb, NULL))
		return 0;
	if (!(le64toh(sb.feature_ro_compat) & KVTIER_FEATURE_RO_COMPAT_LEASE))
		return 0;
	b = le64toh(sb.lease_block);
	if (kvt_dev_read(dev, blk, sizeof(blk), b * KVTIER_BLOCK_SIZE))
		return 0;
	memcpy(l, blk, sizeof(*l));
	return b;
}

/* A record as another host @host would write it, held, into @b of @dev. */
static int lease_forge(const char *dev, unsigned long long b, const char *host,
		       unsigned long long seq, unsigned long long nonce)
{
	unsigned char blk[KVTIER_BLOCK_SIZE] = { 0 };
	struct kvtier_disk_lease *l = (void *)blk;
	struct kvtier_disk_super sb;

	if (kvt_super_read(dev, &sb, NULL))
		return -EUCLEAN;
	l->magic = htole64(KVTIER_LEASE_MAGIC);
	l->state = htole32(KVTIER_LEASE_HELD);
	memcpy(l->uuid, sb.uuid, sizeof(l->uuid));
	l->seq = htole64(seq);
	l->nonce = htole64(nonce);
	l->interval_ms = htole32(IV_MS);
	l->tier = htole32(7);
	l->acquired = htole64(time(NULL));
	l->renewed = htole64(time(NULL));
	strncpy(l->host, host, sizeof(l->host) - 1);
	lease_seal(l);
	return kvt_dev_write(dev, blk, sizeof(blk), b * KVTIER_BLOCK_SIZE);
}

static int attr_starts(int id, const char *attr, const char *want)
{
	char buf[256];

	if (kvt_tier_read(id, attr, buf, sizeof(buf)))
		return 0;
	return !strncmp(buf, want, strlen(want));
}

/* A persistent region @name of 1 MiB with pattern @seed on tier @id. */
static int make_region(int id, const char *name, unsigned long long seed)
{
	struct kvtier_region_open ro = {
		.size = MiB, .mode = 0644,
		.flags = KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT,
	};
	unsigned char *buf = malloc(MiB);
	char dev[32];
	int fd, ret = 0;

	snprintf(dev, sizeof(dev), "/dev/kvtier%d", id);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	strncpy(ro.name, name, sizeof(ro.name) - 1);
	kvt_fill(buf, MiB, 0, seed);
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro))
		ret = -errno;
	else if (pwrite(fd, buf, MiB, 0) != (ssize_t)MiB || fsync(fd))
		ret = -EIO;
	close(fd);
	free(buf);
	return ret;
}

/* Seal @name on tier @id (no file bound to it), so read-only tiers serve it. */
static int seal_region(int id, const char *name)
{
	struct kvtier_region_flags rf = { .set = KVTIER_REGION_SEALED };
	char dev[32];
	int fd, ret = 0;

	snprintf(dev, sizeof(dev), "/dev/kvtier%d", id);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	strncpy(rf.name, name, sizeof(rf.name) - 1);
	if (ioctl(fd, KVTIER_IOC_REGION_SETFLAGS, &rf))
		ret = -errno;
	close(fd);
	return ret;
}

static int check_region(int id, const char *name, unsigned long long seed)
{
	struct kvtier_region_open ro = { .flags = KVTIER_OPEN_RDONLY };
	unsigned char *buf = malloc(MiB);
	char dev[32];
	int fd, ret = 0;

	snprintf(dev, sizeof(dev), "/dev/kvtier%d", id);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !buf) {
		free(buf);
		return -ENOMEM;
	}
	strncpy(ro.name, name, sizeof(ro.name) - 1);
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro))
		ret = -errno;
	else if (pread(fd, buf, MiB, 0) != (ssize_t)MiB)
		ret = -EIO;
	else if (kvt_check(buf, MiB, 0, seed) != -1)
		ret = -1;
	close(fd);
	free(buf);
	return ret;
}

FIXTURE(lease) {
	int unused;
};

/* kvtier loaded with two tiers; NS1 formatted, behind paths A and B. */
FIXTURE_SETUP(lease)
{
	const char *ns1 = kvt_ns("KVTIER_NS1"), *why;
	int i;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	why = kvt_dm_missing("linear");
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_GT(kvt_dev_size(ns1), 0);
	ASSERT_EQ(0, kvt_dm_linear("kvt-lease-a", ns1));
	ASSERT_EQ(0, kvt_dm_linear("kvt-lease-b", ns1));
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kvt_knob(i, "lease_interval_ms", IV_MS));
		ASSERT_EQ(0, kvt_knob(i, "host_budget_mb", 8));
	}
	ASSERT_EQ(0, kvt_tier_write(0, "format", PATH_A));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

FIXTURE_TEARDOWN_PARENT(lease)
{
	if (kvt_loaded()) {
		kvt_tier_write(0, "backing_dev", "none");
		kvt_tier_write(1, "backing_dev", "none");
		EXPECT_EQ(0, kvt_unload());
	}
	if (kvt_exists(PATH_A))
		EXPECT_EQ(0, kvt_dm_remove("kvt-lease-a"));
	if (kvt_exists(PATH_B))
		EXPECT_EQ(0, kvt_dm_remove("kvt-lease-b"));
}

/*
 * Format gives the namespace a lease (RO_COMPAT_LEASE, the last block); a
 * read-write attach holds and renews it, detach frees it; the knob's
 * bounds; a namespace without the feature attaches with no lease.
 */
TEST_F_TIMEOUT(lease, record, 120)
{
	struct kvtier_disk_lease l, l2;
	struct kvtier_disk_super sb;
	unsigned char blk[2][KVTIER_BLOCK_SIZE];
	struct utsname u;
	unsigned long long b;

	ASSERT_EQ(0, uname(&u));
	ASSERT_EQ(0, kvt_super_read(PATH_B, &sb, NULL));
	b = lease_read(PATH_B, &l);
	ASSERT_EQ(kvt_dev_size(PATH_A) / 4096 - 1, b);
	ASSERT_EQ(b, le64toh(sb.nr_blocks) - 1);
	ASSERT_LE(le64toh(sb.data_start) + le64toh(sb.nr_slots), b);
	ASSERT_TRUE(lease_crc_ok(&l));
	ASSERT_EQ(KVTIER_LEASE_MAGIC, le64toh(l.magic));
	ASSERT_EQ(KVTIER_LEASE_FREE, le32toh(l.state));
	ASSERT_EQ(0, memcmp(l.uuid, sb.uuid, sizeof(l.uuid)));

	ASSERT_EQ(0, attach(0, PATH_A, NULL));
	ASSERT_TRUE(attr_starts(0, "lease", "held-here host="));
	ASSERT_EQ(b, lease_read(PATH_B, &l));
	ASSERT_TRUE(lease_crc_ok(&l));
	ASSERT_EQ(KVTIER_LEASE_HELD, le32toh(l.state));
	ASSERT_EQ(0U, le32toh(l.tier));
	ASSERT_EQ(IV_MS, le32toh(l.interval_ms));
	ASSERT_STREQ(u.nodename, l.host);
	/* Renewed every interval while attached. */
	usleep(5 * IV_MS * 1000);
	ASSERT_EQ(b, lease_read(PATH_B, &l2));
	ASSERT_EQ(l.nonce, l2.nonce);
	ASSERT_GE(le64toh(l2.seq), le64toh(l.seq) + 2);
	/* The interval is fixed while attached; 100..60000 ms. */
	ASSERT_EQ(-EBUSY, kvt_knob(0, "lease_interval_ms", 200));
	ASSERT_EQ(0, attach(0, "none", NULL));
	ASSERT_EQ(-EINVAL, kvt_knob(0, "lease_interval_ms", 99));
	ASSERT_EQ(-EINVAL, kvt_knob(0, "lease_interval_ms", 60001));
	ASSERT_EQ(b, lease_read(PATH_B, &l));
	ASSERT_EQ(KVTIER_LEASE_FREE, le32toh(l.state));
	ASSERT_EQ(l2.nonce, l.nonce);
	ASSERT_TRUE(attr_starts(0, "lease", "detached"));

	/* Without the feature (an older format): attached, no lease. */
	ASSERT_EQ(0, kvt_dev_read(PATH_A, blk, sizeof(blk), 0));
	{
		unsigned char orig[2][KVTIER_BLOCK_SIZE];
		int i;

		memcpy(orig, blk, sizeof(orig));
		for (i = 0; i < 2; i++) {
			struct kvtier_disk_super *s = (void *)blk[i];

			if (!kvt_super_valid(blk[i]))
				continue;
			s->feature_ro_compat &= ~htole64(KVTIER_FEATURE_RO_COMPAT_LEASE);
			s->lease_block = 0;
			kvt_super_seal(blk[i]);
		}
		ASSERT_EQ(0, kvt_dev_write(PATH_A, blk, sizeof(blk), 0));
		ASSERT_EQ(0, attach(0, PATH_A, NULL));
		ASSERT_TRUE(attr_starts(0, "lease", "none"));
		ASSERT_EQ(0, attach(0, "none", NULL));
		ASSERT_EQ(0, kvt_run("dmesg | grep -q 'kvtier0: %s: no ownership lease on this namespace'",
				 PATH_A));
		ASSERT_EQ(0, kvt_dev_write(PATH_A, orig, sizeof(orig), 0));
	}
}

/*
 * A second read-write attach by another path is refused while the first
 * renews; read-only attaches are not, and see the writer; after a detach
 * the other path attaches at once, and finds what the first committed.
 */
TEST_F_TIMEOUT(lease, second_writer, 120)
{
	long long ms;

	ASSERT_EQ(0, attach(0, PATH_A, NULL));
	ASSERT_EQ(0, make_region(0, "lease:one", 61));
	ASSERT_EQ(0, seal_region(0, "lease:one"));

	ASSERT_EQ(-EBUSY, attach(1, PATH_B, &ms));
	TH_LOG("second read-write attach refused after %lld ms", ms);
	ASSERT_TRUE(attr_starts(1, "state", "detached"));
	ASSERT_EQ(0, kvt_run("dmesg | grep -q 'kvtier1: %s: attached read-write elsewhere: ownership lease held by'",
			 PATH_B));

	ASSERT_EQ(0, kvt_knob(1, "read_only", 1));
	ASSERT_EQ(0, attach(1, PATH_B, &ms));
	ASSERT_LT(ms, WAIT_MS);
	ASSERT_TRUE(attr_starts(1, "lease", "held host="));
	ASSERT_EQ(0, check_region(1, "lease:one", 61));
	ASSERT_EQ(0, attach(1, "none", NULL));
	ASSERT_EQ(0, kvt_knob(1, "read_only", 0));
	/* The writer was not disturbed. */
	ASSERT_TRUE(attr_starts(0, "state", "attached"));
	ASSERT_TRUE(attr_starts(0, "lease", "held-here"));

	/* Clean detach: the next writer does not wait for expiry. */
	ASSERT_EQ(0, attach(0, "none", NULL));
	ASSERT_EQ(0, attach(1, PATH_B, &ms));
	TH_LOG("attach after a clean detach took %lld ms", ms);
	ASSERT_LT(ms, WAIT_MS);
	ASSERT_TRUE(attr_starts(1, "lease", "held-here host="));
	ASSERT_EQ(0, check_region(1, "lease:one", 61));
	ASSERT_EQ(-EBUSY, attach(0, PATH_A, NULL));
}

/*
 * A holder that stopped renewing (a crashed host: a record the test
 * writes) is taken over after 2 x its interval + 1 s; so is a record that
 * fails its checksum. A record renewed meanwhile refuses the attach.
 */
TEST_F_TIMEOUT(lease, takeover, 120)
{
	struct kvtier_disk_lease l;
	unsigned long long b;
	long long ms;
	pid_t pid;
	int i;

	b = lease_read(PATH_B, &l);
	ASSERT_NE(0ULL, b);
	ASSERT_EQ(0, lease_forge(PATH_B, b, "crashed-host", 41, 0x1234));
	ASSERT_EQ(0, attach(1, PATH_B, &ms));
	TH_LOG("stale lease taken over after %lld ms", ms);
	ASSERT_GE(ms, WAIT_MS);
	ASSERT_EQ(b, lease_read(PATH_A, &l));
	ASSERT_EQ(1U, le32toh(l.tier));
	ASSERT_NE(0x1234ULL, le64toh(l.nonce));
	ASSERT_GT(le64toh(l.seq), 41ULL);
	ASSERT_EQ(0, kvt_run("dmesg | grep -q 'kvtier1: %s: ownership lease of crashed-host (kvtier7) not renewed for %d ms: taking it over'",
			 PATH_B, WAIT_MS));
	ASSERT_EQ(0, attach(1, "none", NULL));

	/* Damaged: treated as held by an unknown writer, then taken over. */
	{
		unsigned char junk[KVTIER_BLOCK_SIZE];

		memset(junk, 0xa5, sizeof(junk));
		ASSERT_EQ(0, kvt_dev_write(PATH_A, junk, sizeof(junk),
					   b * KVTIER_BLOCK_SIZE));
		ASSERT_EQ(0, attach(0, PATH_A, &ms));
		ASSERT_GE(ms, WAIT_MS);
		ASSERT_TRUE(attr_starts(0, "lease", "held-here"));
		ASSERT_EQ(0, attach(0, "none", NULL));
	}

	/* A record another host keeps renewing: refused. */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		for (i = 0; i < 60; i++) {
			lease_forge(PATH_B, b, "live-host", 100 + i, 0x5678);
			usleep(IV_MS * 1000);
		}
		_exit(0);
	}
	usleep(2 * IV_MS * 1000);
	ASSERT_EQ(-EBUSY, attach(0, PATH_A, &ms));
	TH_LOG("live foreign lease: refused after %lld ms", ms);
	ASSERT_TRUE(attr_starts(0, "state", "detached"));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
}

/*
 * Violation: while tier 0 holds the namespace, another writer takes the
 * lease over (what happens when a holder stalls past the takeover wait).
 * Tier 0 notices at its next renewal: state error (EBUSY), it writes
 * nothing more (not the record, not data, not a commit), and detaches.
 */
TEST_F_TIMEOUT(lease, fenced, 120)
{
	struct kvtier_region_open ro = {
		.size = MiB, .mode = 0644,
		.flags = KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT,
	};
	struct kvtier_disk_lease l;
	struct kvtier_disk_super sb, sb2;
	unsigned long long b;
	unsigned char *buf = malloc(MiB);
	long long wb;
	char err[32];
	pid_t pid;
	int fd, i;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, attach(0, PATH_A, NULL));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	strcpy(ro.name, "lease:fenced");
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro));
	kvt_fill(buf, MiB, 0, 62);
	ASSERT_EQ((ssize_t)MiB, pwrite(fd, buf, MiB, 0));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, kvt_super_read(PATH_B, &sb, NULL));

	b = lease_read(PATH_B, &l);
	ASSERT_NE(0ULL, b);
	/* The thief renews for 2 s, so a renewal of tier 0 meets its record. */
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		for (i = 0; i < 20; i++) {
			lease_forge(PATH_B, b, "thief-host", 1000 + i, 0x9abc);
			usleep(IV_MS * 1000);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_TRUE(attr_starts(0, "state", "error"));
	ASSERT_EQ(0, kvt_tier_read(0, "error", err, sizeof(err)));
	ASSERT_STREQ("-16", err);
	ASSERT_TRUE(attr_starts(0, "lease", "held host=thief-host"));
	ASSERT_EQ(0, kvt_run("dmesg | grep -q 'kvtier0: %s: ownership lease taken over (thief-host, kvtier7'",
			 PATH_A));

	/*
	 * New data is not written back, nothing is committed: not by the
	 * background worker (a fenced tier does not run it: 256 dirty pages
	 * are far over 1 % of a 16 MiB budget), not by fsync.
	 */
	kvt_fill(buf, MiB, 0, 63);
	ASSERT_EQ((ssize_t)MiB, pwrite(fd, buf, MiB, 0));
	wb = kvt_stat(0, "writeback_pages");
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	ASSERT_EQ(0, kvt_knob(0, "dirty_background_pct", 1));
	usleep(500000);
	ASSERT_EQ(wb, kvt_stat(0, "writeback_pages"));
	ASSERT_EQ(0, kvt_stat(0, "writeback_background"));
	ASSERT_EQ(MiB / PAGE, kvt_stat(0, "dirty_pages"));
	ASSERT_EQ(-1, fsync(fd));
	ASSERT_EQ(EBUSY, errno);
	close(fd);
	ASSERT_NE(0, attach(0, "none", NULL));
	ASSERT_TRUE(attr_starts(0, "state", "detached"));
	ASSERT_EQ(0, kvt_super_read(PATH_B, &sb2, NULL));
	ASSERT_EQ(le64toh(sb.generation), le64toh(sb2.generation));
	ASSERT_EQ(b, lease_read(PATH_B, &l));
	ASSERT_EQ(0x9abcULL, le64toh(l.nonce));

	/* The thief stopped renewing: taken over; the last commit is there. */
	ASSERT_EQ(0, attach(1, PATH_B, NULL));
	ASSERT_EQ(0, check_region(1, "lease:fenced", 62));
	free(buf);
}

TEST_HARNESS_MAIN
