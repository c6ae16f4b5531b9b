// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl in the test VM: attach identifies the emulated NVMe namespace
 * and refuses what it must (mounted, signed, too small, in use, not a
 * block device), attach --format destroys a signature the kernel refuses,
 * the kernel's refusals of foreign, damaged and newer formats read as
 * such, set validates before writing, stat/status/regions/top print what
 * they promise (regions: with GPU ranges registered and after they are
 * released), persist lists, pins, unpins and removes persistent regions
 * (and refuses a user who does not own one), metrics prints Prometheus
 * text that promtool accepts and a real node_exporter serves from its
 * textfile collector, with counters that move by what a workload did.
 * Output is checked loosely (fields and words, not bytes); exit codes
 * exactly. JSON is parsed with python3.
 *
 * kvtierctl is <repo>/tools/kvtierctl, with LD_LIBRARY_PATH=<repo>/lib,
 * where <repo> is three levels above this binary (<repo>/build/tests/).
 * Every kvtierctl run costs one to a few seconds under TCG (its libraries
 * come over 9p), python3 several: the runs here are few and chosen, and
 * the exhaustive checks of parsing, rates and validation are host-side,
 * against fixtures (make -C tools check, tools/testdata/check.sh).
 */
#include <endian.h>
#include <grp.h>
#include <limits.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define OUT_LEN		65536
#define MNT		"/tmp/kvtierctl-mnt"
#define SMALL_IMG	"/tmp/kvtierctl-small.img"
#define NOBODY		65534

/* Run "kvtierctl ARGS" through sh; its stdout and stderr in @out. */
/* Run shell command @cmd: its output in @out, its exit status returned. */
static int capture(const char *cmd, char *out)
{
	size_t n = 0, r;
	FILE *p;
	int st;

	p = popen(cmd, "r");
	if (!p)
		return -1;
	while ((r = fread(out + n, 1, OUT_LEN - 1 - n, p)) > 0)
		n += r;
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int ctl(char *out, const char *fmt, ...)
{
	char args[1024], cmd[PATH_MAX * 2 + 1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	/* No terminal: attach --format must never wait for an answer here. */
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s/lib %s/tools/kvtierctl %s </dev/null 2>&1",
		 kvt_repo_root(), kvt_repo_root(), args);
	return capture(cmd, out);
}

/* kvtierctl ARGS | python3: 0 when the JSON parses and @expr holds on d. */
static int ctl_json(const char *args, const char *expr)
{
	char cmd[PATH_MAX * 2 + 2048];

	snprintf(cmd, sizeof(cmd),
		 "LD_LIBRARY_PATH=%s/lib %s/tools/kvtierctl %s | python3 -c '"
		 "import json, sys\n"
		 "d = [json.loads(l) for l in sys.stdin] if %d else json.load(sys.stdin)\n"
		 "assert %s, d\n'",
		 kvt_repo_root(), kvt_repo_root(), args, !strncmp(args, "stat", 4), expr);
	return system(cmd);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * kvtierctl ARGS on a terminal (script(1) gives it a pty) that answers
 * @answer to its question; its output in @out, its exit status returned.
 */
static int ctl_tty(char *out, const char *answer, const char *args)
{
	char cmd[PATH_MAX * 2 + 1200];

	snprintf(cmd, sizeof(cmd),
		 "echo %s | script -qec 'LD_LIBRARY_PATH=%s/lib %s/tools/kvtierctl %s' /dev/null 2>&1",
		 answer, kvt_repo_root(), kvt_repo_root(), args);
	return capture(cmd, out);
}


FIXTURE(ctl) {
	const char *ns0, *ns1;
	char *out;
};

FIXTURE_SETUP(ctl)
{
	self->out = malloc(OUT_LEN);
	ASSERT_NE(NULL, self->out);
	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	self->ns0 = kvt_ns("KVTIER_NS0");
	self->ns1 = kvt_ns("KVTIER_NS1");
	if (!self->ns0)
		SKIP(return, "no namespace in KVTIER_NS0");
	ASSERT_NE(NULL, kvt_repo_root());
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
}

FIXTURE_TEARDOWN(ctl)
{
	umount(MNT);
	rmdir(MNT);
	free(self->out);
	if (!kvt_loaded())
		return;
	kvt_tier_write(0, "backing_dev", "none");
	kvt_tier_write(1, "backing_dev", "none");
	EXPECT_EQ(0, kvt_unload());
}

static int tier_is(int id, const char *backing)
{
	char buf[256];

	return !kvt_tier_read(id, "backing_dev", buf, sizeof(buf)) &&
	       !strcmp(buf, backing);
}

TEST_F_TIMEOUT(ctl, attach_nvme, 300)
{
	ASSERT_EQ(0, ctl(self->out, "attach 0 %s", self->ns0));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "model     QEMU NVMe Ctrl"));
	EXPECT_NE(NULL, strstr(self->out, "serial    kvt0"));
	EXPECT_NE(NULL, strstr(self->out, "nsid      1"));
	EXPECT_NE(NULL, strstr(self->out, "lba       512 bytes"));
	EXPECT_NE(NULL, strstr(self->out, "kvtier0: attached"));
	ASSERT_TRUE(tier_is(0, self->ns0));

	/* Attached elsewhere now: in use. */
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", self->ns0));
	EXPECT_NE(NULL, strstr(self->out, "in use"));
	ASSERT_TRUE(tier_is(1, "none"));

	ASSERT_EQ(0, ctl(self->out, "detach 0"));
	ASSERT_TRUE(tier_is(0, "none"));
}

/*
 * ext4 on NS1: refused mounted (even --format --force), refused unmounted,
 * by kvtierctl and with --force by the kernel (EMEDIUMTYPE); --format
 * names the signature it destroys and attaches; the kvtier format it
 * wrote is then attached as it is.
 */
TEST_F_TIMEOUT(ctl, attach_refuses_filesystem, 300)
{
	char args[256], want[96];

	if (!self->ns1)
		SKIP(return, "no second namespace in KVTIER_NS1");
	ASSERT_EQ(0, kvt_run("mkfs.ext4 -q -F %s >/dev/null 2>&1", self->ns1));
	mkdir(MNT, 0700);
	ASSERT_EQ(0, mount(self->ns1, MNT, "ext4", 0, NULL));

	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "is mounted on " MNT));
	ASSERT_EQ(1, ctl(self->out, "attach --format --yes --force 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "a device in use is never formatted"));
	EXPECT_EQ(NULL, strstr(self->out, "destroying"));
	ASSERT_TRUE(tier_is(1, "none"));

	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "ext4 signature"));
	EXPECT_NE(NULL, strstr(self->out, "attach --format destroys it"));
	EXPECT_EQ(NULL, strstr(self->out, "mounted"));
	ASSERT_TRUE(tier_is(1, "none"));

	/* --force passes kvtierctl's checks; the module refuses the ext4. */
	ASSERT_EQ(1, ctl(self->out, "attach --force 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "warning: --force"));
	EXPECT_NE(NULL, strstr(self->out, "holds a foreign signature or data (see dmesg); use attach --format to destroy it"));
	ASSERT_TRUE(tier_is(1, "none"));

	/* --format asks first: no terminal, no --yes: nothing happens. */
	ASSERT_EQ(2, ctl(self->out, "attach --format 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "pass --yes (nothing written)"));
	ASSERT_TRUE(tier_is(1, "none"));
	snprintf(args, sizeof(args), "attach --format 1 %s", self->ns1);
	ASSERT_EQ(1, ctl_tty(self->out, "n", args));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "destroying everything on it? [y/N]"));
	EXPECT_NE(NULL, strstr(self->out, "not confirmed"));
	ASSERT_TRUE(tier_is(1, "none"));
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", self->ns1));
	EXPECT_NE(NULL, strstr(self->out, "ext4 signature"));

	ASSERT_EQ(0, ctl(self->out, "attach --format --yes 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "--format: destroying an ext4 signature on"));
	EXPECT_NE(NULL, strstr(self->out, "kvtier1: formatted and attached"));
	ASSERT_TRUE(tier_is(1, self->ns1));
	ASSERT_EQ(0, ctl(self->out, "detach 1"));

	ASSERT_EQ(0, ctl(self->out, "attach 1 %s", self->ns1));
	TH_LOG("%s", self->out);
	/* The version the tier formats (format_version), nothing in it. */
	snprintf(want, sizeof(want), "holds a kvtier format (version %lld, 0 persistent regions,",
		 kvt_tier_num(1, "format_version"));
	EXPECT_NE(NULL, strstr(self->out, want));
	EXPECT_NE(NULL, strstr(self->out, "kvtier1: attached"));
	ASSERT_TRUE(tier_is(1, self->ns1));
	ASSERT_EQ(0, ctl(self->out, "detach 1"));
}

/*
 * Edit the kvtier superblock copies (blocks 0 and 1) of @dev in place:
 * @edit runs on each copy that has the kvtier magic. O_DIRECT: the module
 * wrote them with bios. Returns the number of copies edited, or -1.
 */
static int edit_supers(const char *dev, void (*edit)(struct kvtier_disk_super *))
{
	unsigned char *buf;
	int fd, i, n = 0;

	fd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0 || posix_memalign((void **)&buf, 4096, 2 * 4096))
		return -1;
	if (pread(fd, buf, 2 * 4096, 0) != 2 * 4096) {
		n = -1;
		goto out;
	}
	for (i = 0; i < 2; i++) {
		struct kvtier_disk_super *sb = (void *)(buf + i * 4096);

		if (le64toh(sb->magic) != KVTIER_SB_MAGIC)
			continue;
		edit(sb);
		n++;
	}
	if (n && (pwrite(fd, buf, 2 * 4096, 0) != 2 * 4096 || fsync(fd)))
		n = -1;
out:
	free(buf);
	close(fd);
	return n;
}

/* A flipped uuid byte: the copy's CRC no longer matches. */
static void damage_super(struct kvtier_disk_super *sb)
{
	sb->uuid[0] ^= 0xff;
}

/* Version 2: a format this module does not know (checked before the CRC). */
static void newer_super(struct kvtier_disk_super *sb)
{
	sb->version = htole32(KVTIER_FORMAT_VERSION + 1);
}

/*
 * Intact (sealed again) but contradicting itself: version 2 with the
 * extents of version 3 and their CRC runs. Damage, not a newer format.
 */
static void mixed_super(struct kvtier_disk_super *sb)
{
	sb->version = htole32(2);
	sb->feature_incompat |= htole64(KVTIER_FEATURE_INCOMPAT_EXTENTS |
					KVTIER_FEATURE_INCOMPAT_CRCS_RUN);
	kvt_super_seal(sb);
}

/* Version 3 that says it has version 4's CRC runs: damage too. */
static void mixed_super_v3(struct kvtier_disk_super *sb)
{
	sb->version = htole32(3);
	sb->feature_incompat |= htole64(KVTIER_FEATURE_INCOMPAT_EXTENTS |
					KVTIER_FEATURE_INCOMPAT_CRC_RUNS);
	kvt_super_seal(sb);
}

/* Version 4 that says it has version 5's file sizes: damage too. */
static void mixed_super_v4(struct kvtier_disk_super *sb)
{
	sb->version = htole32(4);
	sb->feature_incompat |= htole64(KVTIER_FEATURE_INCOMPAT_EXTENTS |
					KVTIER_FEATURE_INCOMPAT_CRC_RUNS |
					KVTIER_FEATURE_INCOMPAT_FILE_SIZES);
	kvt_super_seal(sb);
}

/* The module refuses a damaged and a newer format; kvtierctl says so. */
TEST_F_TIMEOUT(ctl, attach_damaged_and_newer_format, 300)
{
	const char *ns = self->ns1 ? self->ns1 : self->ns0;
	int i;

	ASSERT_EQ(0, ctl(self->out, "attach --format --yes 1 %s", ns));
	ASSERT_EQ(0, ctl(self->out, "detach 1"));

	ASSERT_LT(0, edit_supers(ns, damage_super));
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", ns));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "holds a damaged kvtier format"));
	EXPECT_NE(NULL, strstr(self->out, "damaged kvtier metadata on "));
	EXPECT_NE(NULL, strstr(self->out, ": see dmesg; attach --format to start over (loses all persistent regions)"));
	ASSERT_TRUE(tier_is(1, "none"));
	ASSERT_EQ(0, ctl(self->out, "attach --format --yes 1 %s", ns));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "--format: destroying a damaged kvtier format"));
	ASSERT_TRUE(tier_is(1, ns));
	ASSERT_EQ(0, ctl(self->out, "detach 1"));

	for (i = 0; i < 3; i++) {
		ASSERT_LT(0, edit_supers(ns, i == 2 ? mixed_super_v4 :
					     i ? mixed_super_v3 : mixed_super));
		ASSERT_EQ(1, ctl(self->out, "attach 1 %s", ns));
		TH_LOG("%s", self->out);
		EXPECT_NE(NULL, strstr(self->out, "holds a damaged kvtier format"));
		ASSERT_TRUE(tier_is(1, "none"));
		ASSERT_EQ(0, ctl(self->out, "attach --format --yes 1 %s", ns));
		ASSERT_EQ(0, ctl(self->out, "detach 1"));
	}

	ASSERT_LT(0, edit_supers(ns, newer_super));
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", ns));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "has a newer kvtier format than this module"));
	ASSERT_TRUE(tier_is(1, "none"));
	ASSERT_EQ(0, ctl(self->out, "attach --format --yes 1 %s", ns));
	ASSERT_TRUE(tier_is(1, ns));
	ASSERT_EQ(0, ctl(self->out, "detach 1"));
}

TEST_F_TIMEOUT(ctl, attach_refuses_in_use, 300)
{
	const char *ns = self->ns1 ? self->ns1 : self->ns0;
	int fd = open(ns, O_RDONLY | O_EXCL | O_CLOEXEC);

	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", ns));
	EXPECT_NE(NULL, strstr(self->out, "in use"));
	close(fd);
	ASSERT_TRUE(tier_is(1, "none"));
}

TEST_F_TIMEOUT(ctl, attach_refuses_small_and_not_nvme, 300)
{
	char dev[32];
	int lfd;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(SMALL_IMG, 8 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(1, ctl(self->out, "attach 1 %s", dev));
	TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "too small"));
	EXPECT_NE(NULL, strstr(self->out, "16 MiB"));
	EXPECT_NE(NULL, strstr(self->out, "not an NVMe namespace"));
	ASSERT_TRUE(tier_is(1, "none"));
	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	unlink(SMALL_IMG);
}

TEST_F_TIMEOUT(ctl, attach_refuses_non_block, 300)
{
	int fd = open("/tmp/kvtierctl-regular", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

	ASSERT_GE(fd, 0);
	close(fd);
	ASSERT_EQ(1, ctl(self->out, "attach 0 /tmp/kvtierctl-regular"));
	EXPECT_NE(NULL, strstr(self->out, "not a block device"));
	unlink("/tmp/kvtierctl-regular");
	ASSERT_EQ(1, ctl(self->out, "attach 0 /dev/null"));
	EXPECT_NE(NULL, strstr(self->out, "not a block device"));
	ASSERT_EQ(1, ctl(self->out, "attach 0 /dev/kvtierctl-no-such"));
	EXPECT_NE(NULL, strstr(self->out, "No such file"));
	ASSERT_EQ(2, ctl(self->out, "attach 0"));
	ASSERT_EQ(2, ctl(self->out, "attach 64 %s", self->ns0));
	ASSERT_EQ(1, ctl(self->out, "attach 5 %s", self->ns0));
	EXPECT_NE(NULL, strstr(self->out, "no tier 5"));
	ASSERT_TRUE(tier_is(0, "none"));
}

TEST_F_TIMEOUT(ctl, set_validates, 300)
{
	static const char * const bad[] = {
		"host_budget_mb 0", "host_budget_mb abc", "host_budget_mb 12x",
		"watermark_high 101", "readahead_kb 6", "max_inflight_kb 2",
		"discard 2", "no_such_knob 1",
	};
	static const char * const knobs[] = {
		"host_budget_mb", "watermark_high", "watermark_low", "readahead_kb",
		"writeback_batch_kb", "max_inflight_kb", "discard",
	};
	long long before[7];
	size_t i;

	for (i = 0; i < 7; i++)
		before[i] = kvt_tier_num(0, knobs[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TH_LOG("set 0 %s", bad[i]);
		ASSERT_EQ(2, ctl(self->out, "set 0 %s", bad[i]));
	}
	/* Low must stay below high, whichever is written. */
	ASSERT_EQ(2, ctl(self->out, "set 0 watermark_low %lld", before[1]));
	ASSERT_EQ(2, ctl(self->out, "set 0 watermark_high %lld", before[2]));
	for (i = 0; i < 7; i++)
		ASSERT_EQ(before[i], kvt_tier_num(0, knobs[i]));

	ASSERT_EQ(0, ctl(self->out, "set 0 host_budget_mb 32"));
	ASSERT_EQ(32, kvt_tier_num(0, "host_budget_mb"));
	ASSERT_EQ(0, ctl(self->out, "set 0 watermark_low 10"));
	ASSERT_EQ(0, ctl(self->out, "set 0 watermark_high 50"));
	ASSERT_EQ(50, kvt_tier_num(0, "watermark_high"));
	ASSERT_EQ(10, kvt_tier_num(0, "watermark_low"));
	ASSERT_EQ(0, ctl(self->out, "set 1 readahead_kb 64"));
	ASSERT_EQ(64, kvt_tier_num(1, "readahead_kb"));
	ASSERT_EQ(before[3], kvt_tier_num(0, "readahead_kb"));
	ASSERT_EQ(0, ctl(self->out, "set 0 discard 1"));
	ASSERT_EQ(1, kvt_tier_num(0, "discard"));
}

/* A mapping of @len on tier 0 and a child writing it over and over. */
static pid_t busy_child(int fd, size_t len)
{
	pid_t pid = fork();
	unsigned char *p;
	size_t off;

	if (pid)
		return pid;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		_exit(1);
	for (;;)
		for (off = 0; off < len; off += 4096)
			p[off]++;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST_F_TIMEOUT(ctl, stat_lines, 300)
{
	char *line, *save = NULL;
	int fd, data = 0, busy = 0;
	char f[7][32];
	pid_t pid;

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	pid = busy_child(fd, 32 * MiB);
	ASSERT_GT(pid, 0);

	ASSERT_EQ(0, ctl(self->out, "stat -i 1 -c 2 0"));
	TH_LOG("\n%s", self->out);
	ASSERT_EQ(3, count_lines(self->out));
	ASSERT_NE(NULL, strstr(self->out, "faults/s major% read_MB/s"));
	for (line = strtok_r(self->out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "faults/s"))
			continue;
		ASSERT_EQ(7, sscanf(line, "%31s %31s %31s %31s %31s %31s %31s",
				    f[0], f[1], f[2], f[3], f[4], f[5], f[6]));
		data++;
		if (atof(f[0]) > 0) {
			busy++;
			EXPECT_NE('-', f[5][0]);	/* p50 from the histogram */
			EXPECT_NE('-', f[6][0]);
			EXPECT_GE(atof(f[6]), atof(f[5]));
		}
	}
	ASSERT_EQ(2, data);
	ASSERT_GT(busy, 0);

	ASSERT_EQ(0, ctl_json("stat --json -i 1 -c 2 0",
			      "len(d) == 2 and all(set(x) >= {\"tier\", \"faults_per_s\", "
			      "\"major_pct\", \"read_mb_per_s\", \"writeback_mb_per_s\", "
			      "\"refaults_per_s\", \"fault_p50_us\", \"fault_p99_us\"} "
			      "for x in d) and any(x[\"faults_per_s\"] > 0 for x in d)"));
	stop_child(pid);
	close(fd);
}

TEST_F_TIMEOUT(ctl, status_json, 300)
{
	char expr[512];

	ASSERT_EQ(0, ctl(self->out, "attach 0 %s", self->ns0));
	snprintf(expr, sizeof(expr),
		 "len(d) == 2 and d[0][\"backing_dev\"] == \"%s\" and "
		 "d[0][\"state\"] == \"attached\" and d[0][\"model\"] == \"QEMU NVMe Ctrl\" and "
		 "d[0][\"serial\"] == \"kvt0\" and d[0][\"capacity_bytes\"] > 0 and "
		 "d[0][\"error\"] == 0 and d[1][\"state\"] == \"detached\" and "
		 "all(set(t) >= {\"used_bytes\", \"host_budget_mb\", \"resident_bytes\", "
		 "\"pinned_bytes\", \"logical_block_size\"} for t in d)", self->ns0);
	ASSERT_EQ(0, ctl_json("--json status", expr));
	ASSERT_EQ(0, ctl(self->out, "status 0"));
	EXPECT_NE(NULL, strstr(self->out, "kvtier0: attached"));
	EXPECT_NE(NULL, strstr(self->out, "QEMU NVMe Ctrl, serial kvt0"));
	EXPECT_EQ(NULL, strstr(self->out, "mounted"));

	/* Its kvtierfs mounts, a path with a space in it too. */
	mkdir(MNT, 0700);
	mkdir(MNT "/a b", 0700);
	ASSERT_EQ(0, mount("kvtier0", MNT "/a b", "kvtierfs", MS_RDONLY, NULL));
	ASSERT_EQ(0, ctl(self->out, "status 0"));
	EXPECT_NE(NULL, strstr(self->out, "mounted   " MNT "/a b (kvtierfs, ro)"));
	ASSERT_EQ(0, ctl_json("--json status 0",
			      "d[0][\"mounts\"] == [{\"path\": \"" MNT "/a b\", "
			      "\"read_only\": True}]"));
	ASSERT_EQ(0, ctl_json("--json status 1", "d[0][\"mounts\"] == []"));
	ASSERT_EQ(0, umount(MNT "/a b"));
	rmdir(MNT "/a b");
}

/* A made-up GPU: UUID bytes 0x00..0x0f, as debugfs and kvtierctl print it. */
#define GPU_NAME	"GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
/* Any page-aligned address will do for a managed range: never touched. */
#define GPU_MANAGED_VA	0x100000000000UL

static int gpu_register(int fd, unsigned long va, unsigned long length,
			unsigned int mode, const char *tenant)
{
	struct kvtier_gpu_range g = { .va = va, .length = length, .mode = mode };
	int i;

	for (i = 0; i < 16; i++)
		g.gpu_uuid[i] = (unsigned char)i;
	snprintf(g.tenant, sizeof(g.tenant), "%s", tenant);
	return ioctl(fd, KVTIER_IOC_GPU_REGISTER, &g);
}

/*
 * A line "ID PID VA LENGTH MODE GPU TENANT REGION" of kvtierctl's GPU
 * ranges table with these fields (any ID and REGION).
 */
static bool has_gpu_row(const char *out, pid_t pid, unsigned long va,
			const char *len, const char *mode, const char *tenant)
{
	char want[256], got[512], line[512], f[5][64];
	const char *s, *nl;
	unsigned long long id;
	int p;

	snprintf(want, sizeof(want), "%d 0x%lx %s %s %s %s", (int)pid, va, len,
		 mode, GPU_NAME, tenant);
	for (s = out; *s; s = *nl ? nl + 1 : nl) {
		nl = strchrnul(s, '\n');
		snprintf(line, sizeof(line), "%.*s", (int)(nl - s), s);
		if (sscanf(line, "%llu %d %63s %63s %63s %63s %63s %*s", &id, &p,
			   f[0], f[1], f[2], f[3], f[4]) != 7)
			continue;
		snprintf(got, sizeof(got), "%d %s %s %s %s %s", p, f[0], f[1],
			 f[2], f[3], f[4]);
		if (!strcmp(got, want))
			return true;
	}
	return false;
}

TEST_F_TIMEOUT(ctl, regions_and_top, 300)
{
	size_t len = 4 * MiB, off;
	char expr[2048];
	unsigned char *p;
	int fd;

	if (!kvt_exists("/sys/kernel/debug/kvtier/kvtier0/regions"))
		SKIP(return, "no debugfs regions file");
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (off = 0; off < len; off += 4096)
		p[off] = 1;

	ASSERT_EQ(0, ctl(self->out, "regions 0"));
	TH_LOG("\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "ID NAME"));
	EXPECT_NE(NULL, strstr(self->out, " 4.0M "));
	ASSERT_EQ(0, ctl(self->out, "--json regions 0"));
	EXPECT_NE(NULL, strstr(self->out, "\"name\":\"-\",\"owner\":0,\"size_bytes\":4194304,"));

	ASSERT_EQ(0, ctl(self->out, "top -i 0.5 -c 2 0"));
	TH_LOG("\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "kvtier0  attached"));
	EXPECT_NE(NULL, strstr(self->out, "FAULTS/s"));
	EXPECT_NE(NULL, strstr(self->out, " 4.0M "));
	EXPECT_EQ(NULL, strstr(self->out, "\033["));	/* no escapes off a tty */

	/* GPU ranges: one of each mode; gone when the file is released. */
	if (gpu_register(fd, (unsigned long)p, 2 * MiB, KVTIER_GPU_HMM, "kvt-test") &&
	    errno == ENOTTY) {
		munmap(p, len);
		close(fd);
		SKIP(return, "no GPU ranges (KVTIER_IOC_GPU_REGISTER: ENOTTY)");
	}
	ASSERT_EQ(0, gpu_register(fd, GPU_MANAGED_VA, 1 * MiB, KVTIER_GPU_MANAGED, ""));
	ASSERT_EQ(0, ctl(self->out, "regions 0"));
	TH_LOG("\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, " PINNED      GPU "));	/* regions column */
	EXPECT_NE(NULL, strstr(self->out, "\nGPU ranges\n"));
	EXPECT_TRUE(has_gpu_row(self->out, getpid(), (unsigned long)p, "2.0M",
				"hmm", "kvt-test"));
	EXPECT_TRUE(has_gpu_row(self->out, getpid(), GPU_MANAGED_VA, "1.0M",
				"managed", "-"));
	snprintf(expr, sizeof(expr),
		 "[x[\"kind\"] for x in d].count(\"gpu\") == 2 and "
		 "[(g[\"pid\"], g[\"va\"], g[\"length_bytes\"], g[\"mode\"], g[\"gpu\"], g[\"tenant\"]) "
		 " for g in d if g[\"kind\"] == \"gpu\"] == "
		 "[(%d, %lu, 2097152, \"hmm\", \"%s\", \"kvt-test\"), "
		 " (%d, %lu, 1048576, \"managed\", \"%s\", \"\")] and "
		 "[g[\"region\"] for g in d if g[\"kind\"] == \"gpu\"] == "
		 "[r[\"id\"] for r in d if r[\"kind\"] == \"region\" and r[\"size_bytes\"] == %zu] + [None] and "
		 "[r[\"gpu_bytes\"] for r in d if r[\"kind\"] == \"region\" and r[\"size_bytes\"] == %zu] == [2097152]",
		 (int)getpid(), (unsigned long)p, GPU_NAME, (int)getpid(),
		 GPU_MANAGED_VA, GPU_NAME, len, len);
	EXPECT_EQ(0, ctl_json("--json regions 0", expr));

	munmap(p, len);
	close(fd);		/* the last reference: releases the ranges */
	ASSERT_EQ(0, ctl(self->out, "regions 0"));
	TH_LOG("\n%s", self->out);
	EXPECT_EQ(NULL, strstr(self->out, "GPU ranges"));
	EXPECT_EQ(NULL, strstr(self->out, "kvt-test"));
	EXPECT_EQ(0, ctl_json("--json regions 0",
			      "not [x for x in d if x[\"kind\"] == \"gpu\"]"));
}

/* Bind a fresh file of tier 0 to region @name (KVTIER_IOC_REGION_OPEN). */
static int region_open(const char *name, unsigned int flags, size_t size)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = 0640 };
	int fd = kvt_tier_open(0, O_RDWR);

	if (fd < 0)
		return -1;
	snprintf(ro.name, sizeof(ro.name), "%s", name);
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int region_unlink(const char *name)
{
	struct kvtier_region_name rn = { { 0 } };
	int fd = kvt_tier_open(0, O_RDWR), ret;

	if (fd < 0)
		return -errno;
	snprintf(rn.name, sizeof(rn.name), "%s", name);
	ret = ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn) ? -errno : 0;
	close(fd);
	return ret;
}

/*
 * Run "kvtierctl ARGS" as uid/gid NOBODY (no supplementary groups) in a
 * child; 0 when it exits 1 with @want in its output.
 */
static int ctl_as_nobody(char *out, const char *args, const char *want)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (kvt_become(NOBODY, NOBODY, NULL, 0))
			_exit(10);
		st = ctl(out, "%s", args);
		fprintf(stderr, "# as uid %d: kvtierctl %s: exit %d: %s", NOBODY,
			args, st, out);
		_exit(st == 1 && strstr(out, want) ? 0 : 11);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define PNAME	"kvtierctl-persist"
#define VNAME	"kvtierctl-volatile"
#define PUBNAME	"kvtierctl-public"

/*
 * persist ls shows a persistent region created by ioctl (and not a
 * volatile one), across a module reload; pin and unpin show in it; rm by
 * another user is refused with the reason; rm removes it.
 */
TEST_F_TIMEOUT(ctl, persist_ls_pin_rm, 600)
{
	char *buf = malloc(MiB);
	int fd;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	fd = region_open(PNAME, KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, MiB);
	ASSERT_LE(0, fd);
	memset(buf, 0x5a, MiB);
	ASSERT_EQ((ssize_t)MiB, pwrite(fd, buf, MiB, 0));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	fd = region_open(VNAME, KVTIER_OPEN_CREATE, 64 * 1024);
	ASSERT_LE(0, fd);
	close(fd);
	free(buf);

	ASSERT_EQ(0, ctl(self->out, "persist ls"));
	TH_LOG("\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "NAME"));
	EXPECT_NE(NULL, strstr(self->out, PNAME " "));
	EXPECT_NE(NULL, strstr(self->out, " 1.0M "));
	EXPECT_NE(NULL, strstr(self->out, " root "));
	EXPECT_NE(NULL, strstr(self->out, " 0640 "));
	EXPECT_NE(NULL, strstr(self->out, " 0 no     no\n"));
	EXPECT_EQ(NULL, strstr(self->out, VNAME));
	ASSERT_EQ(0, ctl_json("persist ls --json 0",
			      "len(d) == 1 and d[0][\"name\"] == \"" PNAME "\" and "
			      "d[0][\"size_bytes\"] == 1048576 and d[0][\"namespace_bytes\"] == 1048576 and "
			      "d[0][\"users\"] == 0 and d[0][\"owner\"] == 0 and d[0][\"mode\"] == 0o640 and "
			      "d[0][\"pinned\"] is False and d[0][\"sealed\"] is False and "
			      "d[0][\"created\"] > 0"));

	/* Only persistent regions: a volatile one is refused by name. */
	ASSERT_EQ(1, ctl(self->out, "persist rm " VNAME));
	EXPECT_NE(NULL, strstr(self->out, "'" VNAME "' on kvtier0 is not persistent"));
	ASSERT_EQ(1, ctl(self->out, "persist pin " VNAME));
	EXPECT_NE(NULL, strstr(self->out, "'" VNAME "' on kvtier0 is not persistent"));
	ASSERT_EQ(0, region_unlink(VNAME));
	ASSERT_EQ(1, ctl(self->out, "persist rm kvtierctl-no-such"));
	EXPECT_NE(NULL, strstr(self->out, "no region 'kvtierctl-no-such' on kvtier0"));

	ASSERT_EQ(0, ctl(self->out, "persist pin " PNAME));
	ASSERT_EQ(0, ctl(self->out, "persist ls"));
	TH_LOG("\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, " 0 yes    no\n"));

	/* The region and its pin outlive the module. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	ASSERT_EQ(0, ctl_json("--json persist ls",
			      "[(r[\"name\"], r[\"users\"], r[\"pinned\"]) for r in d] == "
			      "[(\"" PNAME "\", 0, True)]"));
	ASSERT_EQ(0, ctl(self->out, "persist unpin --tier 0 " PNAME));
	ASSERT_EQ(0, ctl(self->out, "persist ls 0"));
	EXPECT_NE(NULL, strstr(self->out, " 0 no     no\n"));

	/*
	 * Another user whose mode bits do not let it read the region (0640,
	 * group root) does not even see it; one who may read it (0644) may
	 * not remove or pin it.
	 */
	ASSERT_EQ(0, chmod("/dev/kvtier0", 0666));
	EXPECT_EQ(0, ctl_as_nobody(self->out, "persist rm " PNAME,
				   "no region '" PNAME "' on kvtier0"));
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kvt_bind_name(fd, PUBNAME, MiB, KVTIER_OPEN_CREATE |
				   KVTIER_OPEN_PERSISTENT, 0644));
	close(fd);
	EXPECT_EQ(0, ctl_as_nobody(self->out, "persist rm " PUBNAME,
				   "not the owner of region '" PUBNAME "' on kvtier0: only its owner or root (CAP_FOWNER) may remove it"));
	EXPECT_EQ(0, ctl_as_nobody(self->out, "persist pin " PUBNAME,
				   "cannot pin region '" PUBNAME "' on kvtier0: only root"));
	ASSERT_EQ(0, ctl(self->out, "persist rm " PUBNAME));
	ASSERT_EQ(0, chmod("/dev/kvtier0", 0600));
	ASSERT_EQ(0, ctl(self->out, "persist ls"));
	EXPECT_NE(NULL, strstr(self->out, PNAME " "));
	EXPECT_NE(NULL, strstr(self->out, " 0 no     no\n"));

	/* Sealed: immutable, listed, not while open, never unsealed; rm works. */
	fd = region_open(PNAME, KVTIER_OPEN_RDONLY, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, ctl(self->out, "persist seal " PNAME));
	EXPECT_NE(NULL, strstr(self->out, "cannot seal '" PNAME "' on kvtier0: files still have it open"));
	close(fd);
	ASSERT_EQ(0, ctl(self->out, "persist seal " PNAME));
	ASSERT_EQ(0, ctl(self->out, "persist ls"));
	EXPECT_NE(NULL, strstr(self->out, " 0 no     yes\n"));
	EXPECT_EQ(-1, region_open(PNAME, 0, 0));
	EXPECT_EQ(EPERM, errno);

	ASSERT_EQ(0, ctl(self->out, "persist rm " PNAME));
	ASSERT_EQ(0, ctl_json("persist ls --json", "d == []"));
	ASSERT_EQ(1, ctl(self->out, "persist rm " PNAME));
	EXPECT_NE(NULL, strstr(self->out, "no region '" PNAME "' on kvtier0"));
}

static int metrics_as_nobody(void *arg)
{
	static char out[OUT_LEN];

	(void)arg;
	return ctl(out, "metrics >>/tmp/kvtierctl-metrics.nobody");
}

/* All of file @path (at most OUT_LEN - 1 bytes) in @buf; 0 or -1. */
static int slurp(const char *path, char *buf)
{
	size_t n = 0, r;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while ((r = fread(buf + n, 1, OUT_LEN - 1 - n, f)) > 0)
		n += r;
	buf[n] = '\0';
	fclose(f);
	return 0;
}

/*
 * The value of sample @series (name and labels, as printed) in @out, or
 * -1. node_exporter prints values as floats (4.194304e+06): strtod.
 */
static long long sample(const char *out, const char *series)
{
	const char *p = out;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == out || p[-1] == '\n') && p[n] == ' ')
			return (long long)(strtod(p + n + 1, NULL) + 0.5);
		p += n;
	}
	return -1;
}

/* promtool check metrics on @file: 0 when it finds nothing to say. */
static int promtool(const char *file)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s >%s.lint 2>&1", file, file);
	return system(cmd);
}

#define METRICS_DIR	"/tmp/kvtierctl-metrics"
#define EXPORTER_PORT	"9177"

/*
 * metrics: Prometheus text that promtool accepts, counters and histograms
 * that move with a workload, --textfile for node_exporter's textfile
 * collector, and a real node_exporter serving the same series; without
 * root the counters and gauges, without the histograms.
 */
TEST_F_TIMEOUT(ctl, metrics, 600)
{
	const char *series = "kvtier_read_bytes_total{tier=\"0\"}";
	const char *reads = "kvtier_io_duration_seconds_count{tier=\"0\",op=\"read\"}";
	char info[256];
	long long read0, read1, count0, count1;
	unsigned char *p;
	int fd, i, ret;
	FILE *f;

	if (system("command -v promtool >/dev/null && command -v prometheus-node-exporter >/dev/null"))
		SKIP(return, "promtool or prometheus-node-exporter missing (tests/deps.sh installs them)");
	(void)!system("rm -rf " METRICS_DIR " " METRICS_DIR ".*");
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", self->ns0));
	snprintf(info, sizeof(info), "kvtier_tier_info{tier=\"0\",device=\"%s\"} 1\n", self->ns0);
	ASSERT_EQ(0, ctl(self->out, "metrics >" METRICS_DIR ".1"));
	ASSERT_EQ(0, slurp(METRICS_DIR ".1", self->out));
	ASSERT_NE(NULL, strstr(self->out, "# TYPE kvtier_faults_total counter\n"));
	ASSERT_LE(0, sample(self->out, "kvtier_faults_total{tier=\"0\",kind=\"major\"}"));
	ASSERT_NE(NULL, strstr(self->out, info));
	ASSERT_NE(NULL, strstr(self->out, "# TYPE kvtier_fault_duration_seconds histogram\n"));
	ASSERT_NE(NULL, strstr(self->out, "kvtier_attached{tier=\"1\"} 0\n"));
	ASSERT_NE(NULL, strstr(self->out, "kvtier_tier_info{tier=\"1\",device=\"none\"} 1\n"));
	ASSERT_EQ(0, promtool(METRICS_DIR ".1"));
	read0 = sample(self->out, series);
	ASSERT_LE(0, read0);
	count0 = sample(self->out, reads);
	ASSERT_LE(0, count0);

	/* 4 MiB written, synced, dropped and read back through a mapping. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_LE(0, fd);
	p = kvt_map_region(fd, 4 * MiB, PROT_READ | PROT_WRITE);
	ASSERT_NE(MAP_FAILED, p);
	kvt_fill(p, 4 * MiB, 0, 11);
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(-1, kvt_check(p, 4 * MiB, 0, 11));
	ASSERT_EQ(0, ctl(self->out, "metrics >" METRICS_DIR ".2"));
	ASSERT_EQ(0, slurp(METRICS_DIR ".2", self->out));
	read1 = sample(self->out, series);
	count1 = sample(self->out, reads);
	TH_LOG("%s %lld -> %lld; read bios %lld -> %lld", series, read0, read1, count0, count1);
	ASSERT_EQ(read0 + 4 * MiB, read1);
	ASSERT_LT(count0, count1);
	ASSERT_EQ(0, promtool(METRICS_DIR ".2"));

	/* --textfile, and node_exporter's textfile collector serving it. */
	mkdir(METRICS_DIR, 0755);
	ASSERT_EQ(0, ctl(self->out, "metrics --textfile " METRICS_DIR));
	ASSERT_EQ(0, slurp(METRICS_DIR "/kvtier.prom", self->out));
	ASSERT_EQ(read1, sample(self->out, series));
	ASSERT_EQ(0, system("test -z \"$(ls -A " METRICS_DIR " | grep -v '^kvtier.prom$')\""));
	ASSERT_EQ(0, system("prometheus-node-exporter --web.listen-address=127.0.0.1:" EXPORTER_PORT
			    " --collector.disable-defaults --collector.textfile"
			    " --collector.textfile.directory=" METRICS_DIR
			    " >" METRICS_DIR ".exporter.log 2>&1 & echo $! >" METRICS_DIR ".pid"));
	for (i = 0, ret = 1; i < 120 && ret; i++) {
		ret = system("python3 -I -c 'import urllib.request, sys;"
			     " sys.stdout.write(urllib.request.urlopen(\"http://127.0.0.1:" EXPORTER_PORT
			     "/metrics\", timeout=5).read().decode())' >" METRICS_DIR ".scrape 2>/dev/null");
		if (ret)
			usleep(250 * 1000);
	}
	(void)!system("kill $(cat " METRICS_DIR ".pid) 2>/dev/null");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, slurp(METRICS_DIR ".scrape", self->out));
	TH_LOG("node_exporter serves %s %lld", series, sample(self->out, series));
	ASSERT_EQ(read1, sample(self->out, series));
	ASSERT_NE(NULL, strstr(self->out, "node_textfile_scrape_error 0\n"));
	ASSERT_EQ(0, promtool(METRICS_DIR ".scrape"));

	/* Without root: counters and gauges, no histograms, and it says why. */
	f = fopen(METRICS_DIR ".nobody", "we");
	ASSERT_NE(NULL, f);
	fclose(f);
	ASSERT_EQ(0, chown(METRICS_DIR ".nobody", NOBODY, NOBODY));
	ASSERT_EQ(0, kvt_as_user(NOBODY, NOBODY, NULL, 0, metrics_as_nobody, NULL));
	ASSERT_EQ(0, slurp(METRICS_DIR ".nobody", self->out));
	ASSERT_EQ(read1, sample(self->out, series));
	ASSERT_NE(NULL, strstr(self->out, "# kvtier: no histograms: /sys/kernel/debug/kvtier cannot be read"));
	ASSERT_EQ(NULL, strstr(self->out, "_bucket{"));
	ASSERT_EQ(0, promtool(METRICS_DIR ".nobody"));
	munmap(p, 4 * MiB);
	close(fd);
	(void)!system("rm -rf " METRICS_DIR " " METRICS_DIR ".*");
}

TEST_HARNESS_MAIN
