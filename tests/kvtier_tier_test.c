// SPDX-License-Identifier: GPL-2.0
/*
 * Tier lifecycle tests: module load/unload, the num_tiers parameter,
 * attaching and detaching namespaces through sysfs backing_dev, the
 * exclusive claim, and KVTIER_IOC_TIER_INFO.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h for
 * the environment it expects. Each test loads and unloads the module itself.
 */
#include <linux/fs.h>
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/mount.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define LOAD_UNLOAD_ROUNDS	20

static int open_excl(const char *ns)
{
	int fd = open(ns, O_RDWR | O_EXCL | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * 20 rounds of load, attach, detach, unload. After each unload nothing of
 * the module is left (class, devices, debugfs), and after all of them the
 * namespace's exclusive claim has been released.
 */
TEST(load_unload_repeat)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	char buf[256];
	int i;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	if (!ns0)
		SKIP(return, "no namespace in KVTIER_NS0");
	ASSERT_FALSE(kvt_loaded());

	for (i = 0; i < LOAD_UNLOAD_ROUNDS; i++) {
		ASSERT_EQ(0, kvt_load("num_tiers=2"));
		ASSERT_TRUE(kvt_exists("/dev/kvtier0"));
		ASSERT_TRUE(kvt_exists("/dev/kvtier1"));
		ASSERT_FALSE(kvt_exists("/dev/kvtier2"));
		if (kvt_exists("/sys/kernel/debug/kvtier"))
			ASSERT_TRUE(kvt_exists("/sys/kernel/debug/kvtier/kvtier1"));
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns0));
		ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
		ASSERT_STREQ("attached", buf);
		/* Every other round unloads with the namespace still attached. */
		if (i % 2)
			ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
		ASSERT_EQ(0, kvt_unload());
		ASSERT_FALSE(kvt_loaded());
		ASSERT_FALSE(kvt_exists("/sys/class/kvtier"));
		ASSERT_FALSE(kvt_exists("/sys/kernel/debug/kvtier"));
		ASSERT_FALSE(kvt_exists("/dev/kvtier0"));
	}
	ASSERT_EQ(0, open_excl(ns0));
}

/* Every invalid num_tiers is refused with EINVAL and nothing stays loaded. */
TEST(num_tiers_invalid)
{
	static const char * const bad[] = {
		"num_tiers=0", "num_tiers=65", "num_tiers=-1", "num_tiers=abc",
		"num_tiers=", "num_tiers", "num_tiers=4294967297",
		"num_tiers=2x",
	};
	size_t i;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	ASSERT_FALSE(kvt_loaded());
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TH_LOG("%s", bad[i]);
		ASSERT_EQ(-EINVAL, kvt_load(bad[i]));
		ASSERT_FALSE(kvt_loaded());
	}
}

/* The bounds are accepted: 1 (also the default) and 64. */
TEST(num_tiers_bounds)
{
	char buf[32];

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	ASSERT_EQ(0, kvt_load(""));
	ASSERT_EQ(0, kvt_read("/sys/module/kvtier/parameters/num_tiers", buf,
			      sizeof(buf)));
	ASSERT_STREQ("1", buf);
	ASSERT_TRUE(kvt_exists("/dev/kvtier0"));
	ASSERT_FALSE(kvt_exists("/dev/kvtier1"));
	ASSERT_EQ(0, kvt_unload());

	ASSERT_EQ(0, kvt_load("num_tiers=64"));
	ASSERT_TRUE(kvt_exists("/dev/kvtier63"));
	ASSERT_FALSE(kvt_exists("/dev/kvtier64"));
	ASSERT_EQ(0, kvt_unload());
}

/* A loaded module with two tiers; the namespaces are detached at teardown. */
FIXTURE(tiers) {
	const char *ns0;
	const char *ns1;
};

FIXTURE_SETUP(tiers)
{
	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	self->ns0 = kvt_ns("KVTIER_NS0");
	self->ns1 = kvt_ns("KVTIER_NS1");
	if (!self->ns0)
		SKIP(return, "no namespace in KVTIER_NS0");
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
}

FIXTURE_TEARDOWN(tiers)
{
	if (!kvt_loaded())
		return;
	kvt_tier_write(0, "backing_dev", "none");
	kvt_tier_write(1, "backing_dev", "none");
	EXPECT_EQ(0, kvt_unload());
}

static unsigned long long ns_bytes(const char *ns)
{
	unsigned long long size = 0;
	int fd = open(ns, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (ioctl(fd, BLKGETSIZE64, &size))
			size = 0;
		close(fd);
	}
	return size;
}

TEST_F(tiers, attach_detach)
{
	struct kvtier_tier_info info;
	char buf[256];
	int fd;

	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ("none", buf);
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("detached", buf);
	/* Detaching a detached tier is a no-op, not an error. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));

	/* A trailing newline (echo) is accepted. */
	snprintf(buf, sizeof(buf), "%s\n", self->ns0);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", buf));
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ(self->ns0, buf);
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("attached", buf);

	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	memset(&info, 0xff, sizeof(info));
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_TIER_INFO, &info));
	EXPECT_EQ((__u32)KVTIER_ABI_VERSION, info.abi_version);
	EXPECT_EQ(0U, info.tier_id);
	EXPECT_EQ((__u32)KVTIER_TIER_ATTACHED, info.flags);
	EXPECT_EQ(ns_bytes(self->ns0), info.capacity_bytes);
	EXPECT_NE(0ULL, info.capacity_bytes);
	EXPECT_EQ(512U, info.logical_block_size);
	EXPECT_EQ(0ULL, info.reserved[0] | info.reserved[3]);
	close(fd);

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("detached", buf);
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ("none", buf);

	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_TIER_INFO, &info));
	EXPECT_EQ(0U, info.flags);
	EXPECT_EQ(0ULL, info.capacity_bytes);
	close(fd);
}

TEST_F(tiers, backing_dev_errors)
{
	char buf[256];
	int fd;

	ASSERT_EQ(-ENOENT, kvt_tier_write(0, "backing_dev", "/dev/kvtier-no-such"));
	/* Character device, regular file, directory: not block devices. */
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "backing_dev", "/dev/null"));
	fd = open("/tmp/kvtier-regular", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "backing_dev", "/tmp/kvtier-regular"));
	unlink("/tmp/kvtier-regular");
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "backing_dev", "/tmp"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "backing_dev", "\n"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "backing_dev", " "));

	/* None of these changed anything. */
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ("none", buf);
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("detached", buf);

	/* Attached: attaching again is EBUSY and keeps the first namespace. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", self->ns0));
	if (self->ns1)
		ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", self->ns1));
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ(self->ns0, buf);
}

/* An open file of the tier keeps the namespace attached and the module in. */
TEST_F(tiers, busy_while_open)
{
	char buf[256];
	int fd;

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_read(0, "state", buf, sizeof(buf)));
	ASSERT_STREQ("attached", buf);
	ASSERT_EQ(-EAGAIN, kvt_unload());
	ASSERT_TRUE(kvt_loaded());
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/* The claim is exclusive: another tier, an O_EXCL open and a mount fail. */
TEST_F(tiers, exclusive_claim)
{
	int ret;

	mkdir("/tmp/kvtier-mnt", 0700);
	ASSERT_EQ(0, open_excl(self->ns0));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));

	ASSERT_EQ(-EBUSY, kvt_tier_write(1, "backing_dev", self->ns0));
	ASSERT_EQ(-EBUSY, open_excl(self->ns0));
	ret = mount(self->ns0, "/tmp/kvtier-mnt", "ext4", 0, NULL);
	ASSERT_EQ(-1, ret);
	ASSERT_EQ(EBUSY, errno);

	/* Released on detach: tier 1 may now claim it. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, open_excl(self->ns0));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", self->ns0));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	rmdir("/tmp/kvtier-mnt");
}

TEST_F(tiers, two_namespaces)
{
	char buf[256];

	if (!self->ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", self->ns1));
	ASSERT_EQ(0, kvt_tier_read(1, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ(self->ns1, buf);
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", buf, sizeof(buf)));
	ASSERT_STREQ(self->ns0, buf);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	/* Detaching tier 0 leaves tier 1 alone. */
	ASSERT_EQ(0, kvt_tier_read(1, "state", buf, sizeof(buf)));
	ASSERT_STREQ("attached", buf);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
}

TEST_F(tiers, ioctl_errors)
{
	int fd = kvt_tier_open(0, O_RDWR);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, ioctl(fd, KVTIER_IOC_TIER_INFO, (void *)8));
	ASSERT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(fd, _IO(KVTIER_IOC_MAGIC, 0x7f), 0));
	ASSERT_EQ(ENOTTY, errno);
	close(fd);
}

TEST_HARNESS_MAIN
