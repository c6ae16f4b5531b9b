// SPDX-License-Identifier: GPL-2.0
/*
 * Persistent named regions: the on-namespace format (formatting a zero
 * device, loading, refusing damaged, newer and foreign ones), creating,
 * syncing and finding regions again after detach and module reload with
 * their attributes and bytes, permissions, the pinned flag, capacity
 * reclaim, corruption on the namespace, and prefetch after a reload.
 *
 * Every test formats KVTIER_NS0 first and leaves it (and KVTIER_NS1) an
 * empty kvtier namespace, so the suites that run after it see no regions.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <grp.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define NOBODY		65534
#define PERSIST		KVTIER_OPEN_PERSISTENT
#define NEW_PERSIST	(KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT)
#define MAX_LIST	128

/* The tests number their patterns 1, 2, 3...; these are the seeds. */
#define SEED(n)		((unsigned long long)(n) << 8)

static void pfill(void *p, size_t len, unsigned long long base,
		  unsigned long long n)
{
	kvt_fill(p, len, base, SEED(n));
}

static long long pcheck(const void *p, size_t len, unsigned long long base,
			unsigned long long n)
{
	return kvt_check(p, len, base, SEED(n));
}

static int tier_open(int id)
{
	char path[32];

	snprintf(path, sizeof(path), KVTIER_DEV_PREFIX "%d", id);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* Bind @fd to @name; returns 0 or -errno. */

/* A fresh file of tier @id bound to @name: the fd, or -errno. */
static int open_name(int id, const char *name, unsigned long long size,
		     unsigned int flags, unsigned int mode)
{
	int fd = tier_open(id), ret;

	if (fd < 0)
		return -errno;
	ret = kvt_bind_name(fd, name, size, flags, mode);
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static int set_flags(int fd, const char *name, unsigned int set,
		     unsigned int clear, unsigned long long reserved)
{
	struct kvtier_region_flags rf = { .set = set, .clear = clear,
					  .reserved = reserved };

	strncpy(rf.name, name, sizeof(rf.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_SETFLAGS, &rf) ? -errno : 0;
}

/* Named regions of the tier of @fd into @e (room @n): the total or -errno. */
static int list_names(int fd, struct kvtier_region_entry *e, unsigned int n)
{
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = n };

	return ioctl(fd, KVTIER_IOC_REGION_LIST, &rl) ? -errno : (int)rl.count;
}

/* The list entry of @name in @e; 0 or -ENOENT. */
static int find_name(int fd, const char *name, struct kvtier_region_entry *e)
{
	static struct kvtier_region_entry all[MAX_LIST];
	int n, i;

	memset(all, 0, sizeof(all));
	n = list_names(fd, all, MAX_LIST);
	if (n < 0)
		return n;
	for (i = 0; i < n && i < MAX_LIST; i++) {
		if (!strcmp(all[i].name, name)) {
			*e = all[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* pwrite pattern @seed over [@off, @off + @len) of @fd; 0 or -errno. */
static int fill_fd(int fd, unsigned long long off, size_t len,
		   unsigned long long seed)
{
	static unsigned char buf[MiB];
	size_t done, n;
	ssize_t w;

	for (done = 0; done < len; done += n) {
		n = len - done < MiB ? len - done : MiB;
		pfill(buf, n, off + done, seed);
		w = pwrite(fd, buf, n, off + done);
		if (w < 0)
			return -errno;
		if ((size_t)w != n)
			return -EIO;
	}
	return 0;
}

/*
 * pread [@off, @off + @len) of @fd: -1 if it is pattern @seed, else the
 * offset of the first wrong word, or -2 (errno set) if a read failed.
 */
static long long check_fd(int fd, unsigned long long off, size_t len,
			  unsigned long long seed)
{
	static unsigned char buf[MiB];
	size_t done, n;
	long long bad;

	for (done = 0; done < len; done += n) {
		n = len - done < MiB ? len - done : MiB;
		if (pread(fd, buf, n, off + done) != (ssize_t)n)
			return -2;
		bad = pcheck(buf, n, off + done, seed);
		if (bad != -1)
			return bad;
	}
	return -1;
}

/* -1 if [@off, @off + @len) of @fd reads as zeros, else the first non-zero offset. */
static long long check_zero(int fd, unsigned long long off, size_t len)
{
	static unsigned char buf[MiB];
	size_t done, n, i;

	for (done = 0; done < len; done += n) {
		n = len - done < MiB ? len - done : MiB;
		if (pread(fd, buf, n, off + done) != (ssize_t)n)
			return -2;
		for (i = 0; i < n; i++)
			if (buf[i])
				return (long long)(off + done + i);
	}
	return -1;
}

/* A new persistent region @name on tier @id with pattern @seed, synced and closed. */
static int make_persistent(int id, const char *name, size_t len,
			   unsigned int mode, unsigned long long seed)
{
	int fd = open_name(id, name, len, NEW_PERSIST, mode), ret;

	if (fd < 0)
		return fd;
	ret = fill_fd(fd, 0, len, seed);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	return ret;
}

/* Open @name on tier @id and check it is pattern @seed: -1 or as check_fd. */
static long long check_name(int id, const char *name, size_t len,
			    unsigned long long seed)
{
	long long ret;
	int fd = open_name(id, name, 0, 0, 0);

	if (fd < 0)
		return -3;
	ret = check_fd(fd, 0, len, seed);
	close(fd);
	return ret;
}

/* Load the module and attach @dev to tier 0. 0 or -errno. */
static int load_attach(const char *dev)
{
	int ret = kvt_load("num_tiers=2");

	return ret ? ret : kvt_tier_write(0, "backing_dev", dev);
}

/*
 * Unload the module (which writes back and commits every persistent
 * region), load it again and attach KVTIER_NS0 to tier 0; *@fd, closed
 * first, is a fresh file of tier 0 afterwards. 0 or -errno.
 */
static int reload(int *fd)
{
	int ret;

	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	ret = kvt_unload();
	if (!ret)
		ret = load_attach(kvt_ns("KVTIER_NS0"));
	if (ret)
		return ret;
	*fd = tier_open(0);
	return *fd < 0 ? -errno : 0;
}

static int tier_state_is(int id, const char *state)
{
	char buf[64];

	return !kvt_tier_read(id, "state", buf, sizeof(buf)) && !strcmp(buf, state);
}

/*
 * Attach tier 1 to a loop device of a 16 MiB image @img (with @dm, to
 * /dev/mapper/@dm, a linear device over it, so a test can swap in an
 * error target), formatting it as @version if blank; @dev gets the loop
 * device's name. Returns the loop device's fd (loop_detach()).
 */
static int loop_tier1(struct __test_metadata *_metadata, const char *img,
		      const char *version, const char *dm, char *dev, size_t len)
{
	char path[64];
	int lfd;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(img, 16 * MiB, dev, len);
	ASSERT_GE(lfd, 0);
	if (dm)
		ASSERT_EQ(0, kvt_dm_linear(dm, dev));
	snprintf(path, sizeof(path), dm ? "/dev/mapper/%s" : "%s", dm ? dm : dev);
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", version));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", path));
	return lfd;
}

/* Detach a loop device made by kvt_loop_attach and remove its file. */
static void loop_detach(int lfd, const char *file)
{
	if (lfd >= 0) {
		ioctl(lfd, LOOP_CLR_FD, 0);
		close(lfd);
	}
	unlink(file);
}

/*
 * The committed state of the namespace on @dev, read raw
 * (kvt_state_read(): the checkpoint and, on version 2, the journal): the
 * newest valid superblock, a checkpoint image, its records.
 */
struct ckpt {
	struct kvtier_disk_super sb;
	unsigned char *buf;
	size_t len;
	const struct kvtier_disk_ckpt *hdr;
	const struct kvtier_disk_region *regions;
	const struct kvtier_disk_page *pages;
};

static int ckpt_read(const char *dev, struct ckpt *c)
{
	unsigned long long nr_regions;
	int ret;

	memset(c, 0, sizeof(*c));
	ret = kvt_state_read(dev, &c->sb, &c->buf, &c->len);
	if (ret)
		return ret;
	c->hdr = (const void *)c->buf;
	nr_regions = le64toh(c->hdr->nr_regions);
	c->regions = (const void *)(c->buf + sizeof(*c->hdr));
	c->pages = (const void *)(c->regions + nr_regions);
	return 0;
}

/* The record of @name in @c (and its first page record in @pages), or NULL. */
static const struct kvtier_disk_region *ckpt_region(const struct ckpt *c,
						    const char *name,
						    const struct kvtier_disk_page **pages)
{
	unsigned long long i, first = 0;

	for (i = 0; i < le64toh(c->hdr->nr_regions); i++) {
		if (!strncmp(c->regions[i].name, name, sizeof(c->regions[i].name))) {
			if (pages)
				*pages = c->pages + first;
			return &c->regions[i];
		}
		first += le64toh(c->regions[i].nr_pages);
	}
	return NULL;
}

/*
 * Run @fn(@fds) in a child as uid @uid, gid @gid, no supplementary groups;
 * @fds are files of the tier opened as root (the device node is root's).
 * Returns the child's exit status, 99 if it could not change ids.
 */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void *fds), int *fds)
{
	return kvt_as_user(uid, gid, NULL, 0, fn, fds);
}

static void open_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fds[i] = tier_open(0);
}

static void close_fds(int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The transaction of generation @seq in @j's journal copy, or NULL. */
static struct kvtier_disk_txn *jsnap_txn(struct kvt_jsnap *j, unsigned long long seq)
{
	size_t off;

	for (off = 0; off < j->jr_len; off += PAGE) {
		struct kvtier_disk_txn *t = (void *)(j->jr + off);

		if (le64toh(t->magic) == KVTIER_TXN_MAGIC && le64toh(t->seq) == seq)
			return t;
	}
	return NULL;
}

FIXTURE(persist) {
	int fd;
};

/* Module loaded with two tiers; NS0 formatted (empty) and attached to tier 0. */
FIXTURE_SETUP(persist)
{
	const char *why = kvt_missing();

	self->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=2"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
}

/*
 * In the parent, after the test process exited: leave NS0 (and NS1) empty
 * kvtier namespaces, whatever the test left on them, and unload.
 */
FIXTURE_TEARDOWN_PARENT(persist)
{
	const char *ns1 = kvt_ns("KVTIER_NS1");

	if (!kvt_loaded() && kvt_load("num_tiers=2")) {
		EXPECT_TRUE(0);
		return;
	}
	kvt_tier_write(1, "backing_dev", "none");
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	if (ns1 && !kvt_tier_write(1, "format", ns1))
		EXPECT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_unload());
}

/*
 * An all-zero device is formatted on attach (a valid superblock describing
 * it), and attaching it again loads it: a region written before the detach
 * is there with its bytes.
 */
TEST_F_TIMEOUT(persist, zero_device_is_formatted_then_loaded, 300)
{
	const char *img = "/tmp/kvt-zero.img";
	unsigned char blk[2][KVTIER_BLOCK_SIZE];
	struct kvtier_disk_super sb, again;
	struct kvtier_region_entry e;
	size_t size = 64 * MiB, len = 4 * MiB;
	char dev[32];
	int lfd, f1;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(img, size, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_TRUE(tier_state_is(1, "attached"));

	ASSERT_EQ(0, kvt_super_read(dev, &sb, NULL));
	ASSERT_EQ(0, kvt_dev_read(dev, blk, sizeof(blk), 0));
	/* The version the knob says (its default: a blank tier's). */
	EXPECT_EQ((__u32)kvt_tier_num(1, "format_version"), le32toh(sb.version));
	EXPECT_EQ(sizeof(sb), le32toh(sb.header_size));
	EXPECT_EQ(size / KVTIER_BLOCK_SIZE, le64toh(sb.nr_blocks));
	EXPECT_EQ(le32toh(sb.version) == 1 ? 0ULL :
		  le32toh(sb.version) == 2 ? KVTIER_FEATURE_INCOMPAT_JOURNAL :
		  le32toh(sb.version) == 3 ?
		  KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS :
		  le32toh(sb.version) == 4 ?
		  KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS |
		  KVTIER_FEATURE_INCOMPAT_CRC_RUNS :
		  KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS |
		  KVTIER_FEATURE_INCOMPAT_CRC_RUNS | KVTIER_FEATURE_INCOMPAT_FILE_SIZES,
		  le64toh(sb.feature_incompat));
	EXPECT_GE(le64toh(sb.meta_start), 2ULL);
	EXPECT_GE(le64toh(sb.data_start),
		  le64toh(sb.meta_start) + 2 * le64toh(sb.meta_blocks));
	EXPECT_LE(le64toh(sb.data_start) + le64toh(sb.nr_slots), le64toh(sb.nr_blocks));
	EXPECT_GT(le64toh(sb.nr_slots), size / KVTIER_BLOCK_SIZE / 2);
	EXPECT_GT(le64toh(sb.max_regions), 0ULL);
	EXPECT_NE(0, memcmp(sb.uuid, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16));
	TH_LOG("64 MiB: meta_start %llu meta_blocks %llu data_start %llu nr_slots %llu max_regions %llu gen %llu",
	       (unsigned long long)le64toh(sb.meta_start),
	       (unsigned long long)le64toh(sb.meta_blocks),
	       (unsigned long long)le64toh(sb.data_start),
	       (unsigned long long)le64toh(sb.nr_slots),
	       (unsigned long long)le64toh(sb.max_regions),
	       (unsigned long long)le64toh(sb.generation));

	ASSERT_EQ(0, make_persistent(1, "zero:first", len, 0600, 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	/* Loaded, not formatted again: same uuid, the region and its bytes. */
	ASSERT_EQ(0, kvt_super_read(dev, &again, NULL));
	ASSERT_EQ(0, memcmp(sb.uuid, again.uuid, sizeof(sb.uuid)));
	ASSERT_EQ(le64toh(sb.format_time), le64toh(again.format_time));
	f1 = tier_open(1);
	ASSERT_GE(f1, 0);
	ASSERT_EQ(0, find_name(f1, "zero:first", &e));
	ASSERT_EQ(len, e.size);
	ASSERT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(0U, e.users);
	close(f1);
	ASSERT_EQ(-1, check_name(1, "zero:first", len, 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, img);
}

/*
 * Creating a persistent region commits it at once: the checkpoint on the
 * namespace names it with its size, owner, group, mode and creation time
 * before any sync, and a namespace put back to that moment after a
 * "crash" (the metadata copied then, restored under the unloaded module)
 * still has it, with no bytes. Synced bytes then survive a reload.
 */
TEST_F_TIMEOUT(persist, create_commits_at_once, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	size_t len = 3 * MiB + PAGE;
	struct kvtier_region_entry e, e2;
	const struct kvtier_disk_region *r;
	struct ckpt c;
	struct kvt_jsnap snap = {};
	time_t t0 = time(NULL);
	int fd;

	fd = open_name(0, "meta:created", 3 * MiB + 1,
		       KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, 0640);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, find_name(self->fd, "meta:created", &e));
	ASSERT_EQ(len, e.size);	/* rounded up to the page size */
	ASSERT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(1U, e.users);
	ASSERT_EQ(0640U, e.mode);
	ASSERT_EQ(0U, e.owner);
	ASSERT_GE(e.created, (__s64)t0);
	ASSERT_LE(e.created, (__s64)time(NULL));

	/* On the namespace now, without fsync. */
	ASSERT_EQ(0, ckpt_read(ns0, &c));
	r = ckpt_region(&c, "meta:created", NULL);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(len, le64toh(r->size));
	ASSERT_EQ(0ULL, le64toh(r->nr_pages));
	ASSERT_EQ(e.created, (__s64)le64toh(r->created));
	ASSERT_EQ(0U, le32toh(r->owner));
	ASSERT_EQ(0U, le32toh(r->group));
	ASSERT_EQ(0640U, le32toh(r->mode));
	ASSERT_EQ(0U, le32toh(r->flags));

	/* The moment of the "crash": all metadata as it is now. */
	free(c.buf);
	ASSERT_EQ(0, kvt_jsnap_take(ns0, &snap));

	ASSERT_EQ(0, fill_fd(fd, 0, len, 2));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "meta:created", &e2));
	ASSERT_EQ(e.created, e2.created);
	ASSERT_EQ(0640U, e2.mode);
	ASSERT_EQ(-1, check_name(0, "meta:created", len, 2));

	/* Back to the crash: the region is there, its bytes were never synced. */
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_jsnap_put(ns0, &snap));
	kvt_jsnap_free(&snap);
	ASSERT_EQ(0, load_attach(ns0));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, find_name(self->fd, "meta:created", &e2));
	ASSERT_EQ(len, e2.size);
	ASSERT_EQ(0640U, e2.mode);
	ASSERT_EQ(0U, e2.owner);
	ASSERT_EQ(e.created, e2.created);
	ASSERT_EQ(0ULL, e2.namespace);
	fd = open_name(0, "meta:created", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, check_zero(fd, 0, len));
	ASSERT_EQ(0, fill_fd(fd, 0, len, 3));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-1, check_name(0, "meta:created", len, 3));
}

/*
 * Bytes made durable by msync(MS_SYNC) and fsync through a 4 MiB pool (so
 * pages were evicted on the way) come back after a module reload, with
 * the region's attributes and times; bytes written later without a sync
 * are written back by the unload and by a detach.
 */
TEST_F_TIMEOUT(persist, synced_bytes_survive_reload, 300)
{
	size_t len = 8 * MiB;
	struct kvtier_region_entry before, after;
	unsigned char *p;
	int fd;

	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));
	fd = open_name(0, "kv:conv-1", len, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pfill(p, len, 0, 10);
	ASSERT_EQ(0, msync(p, len, MS_SYNC));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, fill_fd(fd, len / 2, len / 2, 11));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, find_name(self->fd, "kv:conv-1", &before));
	ASSERT_EQ(0U, before.users);
	ASSERT_GT(before.namespace, 0ULL);

	sleep(2);	/* a reload that reset the times would show */
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "kv:conv-1", &after));
	ASSERT_EQ(len, after.size);
	ASSERT_EQ((__u32)PERSIST, after.flags);
	ASSERT_EQ(0U, after.users);
	ASSERT_EQ(0U, after.owner);
	ASSERT_EQ(0600U, after.mode);
	ASSERT_EQ(0ULL, after.resident);
	ASSERT_EQ(len, after.namespace);
	ASSERT_EQ(before.created, after.created);
	/* Kept as seconds, measured in jiffies: within a second. */
	ASSERT_LE(llabs(before.last_used - after.last_used), 1);

	fd = open_name(0, "kv:conv-1", len, 0, 0);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, pcheck(p, len / 2, 0, 10));
	ASSERT_EQ(-1, pcheck(p + len / 2, len / 2, len / 2, 11));
	/* Changed through the mapping, never synced: the unload writes it back. */
	pfill(p, 16 * PAGE, 0, 12);
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-1, check_name(0, "kv:conv-1", 16 * PAGE, 12));
	fd = open_name(0, "kv:conv-1", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, check_fd(fd, 16 * PAGE, len / 2 - 16 * PAGE, 10));
	ASSERT_EQ(-1, check_fd(fd, len / 2, len / 2, 11));

	/* Written with pwrite, never synced: the detach writes it back. */
	ASSERT_EQ(0, fill_fd(fd, 100 * PAGE, PAGE, 13));
	close(fd);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	self->fd = tier_open(0);
	ASSERT_EQ(0, find_name(self->fd, "kv:conv-1", &after));
	ASSERT_EQ(0ULL, after.resident);	/* dropped from memory by the detach */
	ASSERT_EQ(0U, after.users);
	fd = open_name(0, "kv:conv-1", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, check_fd(fd, 0, 16 * PAGE, 12));
	ASSERT_EQ(-1, check_fd(fd, 16 * PAGE, 84 * PAGE, 10));
	ASSERT_EQ(-1, check_fd(fd, 100 * PAGE, PAGE, 13));
	ASSERT_EQ(-1, check_fd(fd, 101 * PAGE, len / 2 - 101 * PAGE, 10));
	ASSERT_EQ(-1, check_fd(fd, len / 2, len / 2, 11));
	close(fd);
}

/*
 * Detach is refused while a file or mapping of the tier exists or a
 * non-persistent named region does; persistent regions do not hold it,
 * and come back on the next attach.
 */
TEST_F_TIMEOUT(persist, detach_rules, 300)
{
	struct kvtier_region_entry e[4];
	unsigned char *p;
	int fk, fv;

	fk = open_name(0, "keep", MiB, NEW_PERSIST, 0600);
	ASSERT_GE(fk, 0);
	ASSERT_EQ(0, fill_fd(fk, 0, MiB, 20));
	fv = open_name(0, "vol", MiB, KVTIER_OPEN_CREATE, 0600);
	ASSERT_GE(fv, 0);
	ASSERT_EQ(0, fill_fd(fv, 0, MiB, 21));

	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	/* A mapping without its file still holds the tier. */
	p = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fk, 0);
	ASSERT_NE(MAP_FAILED, p);
	close(fk);
	close(fv);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(-1, pcheck(p, MiB, 0, 20));
	munmap(p, MiB);
	/* No file, no mapping, a non-persistent named region: still busy. */
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_TRUE(tier_state_is(0, "attached"));
	ASSERT_EQ(-1, check_name(0, "vol", MiB, 21));
	fv = tier_open(0);
	ASSERT_EQ(0, kvt_unlink_name(fv, "vol"));
	close(fv);
	/* Only persistent regions: the detach writes "keep" back and goes. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_TRUE(tier_state_is(0, "detached"));
	fv = tier_open(0);
	ASSERT_EQ(-ENODEV, kvt_bind_name(fv, "keep", 0, 0, 0));
	close(fv);

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	self->fd = tier_open(0);
	ASSERT_EQ(1, list_names(self->fd, e, 4));
	ASSERT_STREQ("keep", e[0].name);
	ASSERT_EQ(0U, e[0].users);
	ASSERT_EQ(-1, check_name(0, "keep", MiB, 20));
}

/*
 * PERSISTENT against existing regions, names that are refused, a 63-byte
 * name that survives a reload, ENOSPC, and unlink that lasts.
 */
TEST_F_TIMEOUT(persist, open_rules_and_names, 300)
{
	static const char * const bad[] = {
		"", "/", "a/b", "ctl\x01x", "tab\tx", "sp ace", "del\x7f",
		"caf\xc3\xa9", "\xff",
	};
	struct kvtier_region_entry e;
	struct kvtier_region_open ro;
	char name63[64];
	size_t i;
	int fv, fp, fd, ret;

	fv = open_name(0, "plain", MiB, KVTIER_OPEN_CREATE, 0600);
	ASSERT_GE(fv, 0);
	ASSERT_EQ(0, fill_fd(fv, 0, MiB, 30));
	fd = tier_open(0);
	ASSERT_EQ(-EEXIST, kvt_bind_name(fd, "plain", 0, PERSIST, 0));
	ASSERT_EQ(-EEXIST, kvt_bind_name(fd, "plain", MiB,
				     KVTIER_OPEN_CREATE | PERSIST, 0600));
	ASSERT_EQ(-EEXIST, kvt_bind_name(fd, "plain", MiB, NEW_PERSIST, 0600));
	ASSERT_EQ(0, find_name(self->fd, "plain", &e));
	ASSERT_EQ(0U, e.flags);
	close(fd);

	fp = open_name(0, "durable", MiB, NEW_PERSIST, 0600);
	ASSERT_GE(fp, 0);
	ASSERT_EQ(0, fill_fd(fp, 0, MiB, 31));
	fd = tier_open(0);
	ASSERT_EQ(-EEXIST, kvt_bind_name(fd, "durable", MiB, NEW_PERSIST, 0600));
	ASSERT_EQ(-EINVAL, kvt_bind_name(fd, "durable", 2 * MiB, 0, 0));
	ASSERT_EQ(0, kvt_bind_name(fd, "durable", MiB, PERSIST, 0));
	ASSERT_EQ(-1, check_fd(fd, 0, MiB, 31));
	close(fd);
	fd = tier_open(0);
	ASSERT_EQ(0, kvt_bind_name(fd, "durable", 0, 0, 0));	/* PERSISTENT not needed */
	ASSERT_EQ(-1, check_fd(fd, 0, MiB, 31));
	close(fd);
	ASSERT_EQ(0, find_name(self->fd, "durable", &e));
	ASSERT_EQ(1U, e.users);	/* fp; the two above are closed */
	close(fp);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = tier_open(0);
		ret = kvt_bind_name(fd, bad[i], MiB, NEW_PERSIST, 0600);
		if (ret != -EINVAL)
			TH_LOG("bad name #%zu: %d", i, ret);
		ASSERT_EQ(-EINVAL, ret);
		close(fd);
	}
	/* 64 bytes without a NUL. */
	memset(&ro, 0, sizeof(ro));
	memset(ro.name, 'n', sizeof(ro.name));
	ro.size = MiB;
	ro.flags = NEW_PERSIST;
	ro.mode = 0600;
	fd = tier_open(0);
	ASSERT_EQ(-1, ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(-ENOSPC, kvt_bind_name(fd, "huge", 1ULL << 40, NEW_PERSIST, 0600));
	ASSERT_EQ(-EINVAL, kvt_bind_name(fd, "badmode", MiB, NEW_PERSIST, 01000));
	close(fd);
	ASSERT_EQ(-ENOENT, find_name(self->fd, "huge", &e));

	/* 63 bytes: the longest name, kept whole on the namespace. */
	memset(name63, 0, sizeof(name63));
	memset(name63, '~', 63);
	name63[0] = '!';
	ASSERT_EQ(0, make_persistent(0, name63, 2 * PAGE, 0600, 32));
	ASSERT_EQ(-1, check_name(0, "plain", MiB, 30));
	close(fv);
	fd = tier_open(0);
	ASSERT_EQ(0, kvt_unlink_name(fd, "plain"));	/* so the module may go */
	ASSERT_EQ(0, kvt_unlink_name(fd, "durable"));
	ASSERT_EQ(-ENOENT, kvt_unlink_name(fd, "durable"));
	close(fd);

	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(1, list_names(self->fd, NULL, 0));
	ASSERT_EQ(0, find_name(self->fd, name63, &e));
	ASSERT_EQ(2 * PAGE, e.size);
	ASSERT_EQ(-1, check_name(0, name63, 2 * PAGE, 32));
	ASSERT_EQ(-ENOENT, find_name(self->fd, "durable", &e));
	/* The unlinked name is free for a new region. */
	ASSERT_EQ(0, make_persistent(0, "durable", PAGE, 0600, 33));
	ASSERT_EQ(-1, check_name(0, "durable", PAGE, 33));
}

static int nobody_after_reload(void *arg)
{
	int *fds = arg;

	unsigned char *p;

	/* root's 0600: nothing, and no unlink or flags. */
	if (kvt_bind_name(fds[0], "priv", 0, 0, 0) != -EACCES)
		return 1;
	if (kvt_bind_name(fds[0], "priv", 0, KVTIER_OPEN_RDONLY, 0) != -EACCES)
		return 2;
	if (kvt_unlink_name(fds[0], "priv") != -EPERM)
		return 3;
	if (set_flags(fds[0], "priv", KVTIER_REGION_PINNED, 0, 0) != -EPERM)
		return 4;
	/* root's 0644: read-only only, and the bytes are there. */
	if (kvt_bind_name(fds[1], "pub", 0, 0, 0) != -EACCES)
		return 5;
	if (kvt_bind_name(fds[1], "pub", 0, KVTIER_OPEN_RDONLY, 0))
		return 6;
	if (check_fd(fds[1], 0, MiB, 41) != -1)
		return 7;
	if (pwrite(fds[1], "x", 1, 0) != -1 || errno != EACCES)
		return 8;
	/* root's 0640, group root: not for nobody's group. */
	if (kvt_bind_name(fds[2], "grp", 0, KVTIER_OPEN_RDONLY, 0) != -EACCES)
		return 9;
	/* Its own 0600: read-write, the bytes it wrote, and it may change them. */
	if (kvt_bind_name(fds[3], "own", 0, 0, 0))
		return 10;
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fds[3], 0);
	if (p == MAP_FAILED || pcheck(p, MiB, 0, 43) != -1)
		return 11;
	pfill(p, PAGE, 0, 44);
	if (msync(p, PAGE, MS_SYNC))
		return 12;
	munmap(p, MiB);
	/* Pinning is CAP_SYS_RESOURCE's, even for the owner. */
	if (set_flags(fds[3], "own", KVTIER_REGION_PINNED, 0, 0) != -EPERM)
		return 13;
	return 0;
}

static int group_root_reads(void *arg)
{
	int *fds = arg;

	/* uid nobody, gid root: the group bits of "grp" (0640) apply. */
	if (kvt_bind_name(fds[0], "grp", 0, 0, 0) != -EACCES)
		return 1;
	if (kvt_bind_name(fds[0], "grp", 0, KVTIER_OPEN_RDONLY, 0))
		return 2;
	if (check_fd(fds[0], 0, MiB, 42) != -1)
		return 3;
	return 0;
}

static int nobody_creates(void *arg)
{
	int *fds = arg;

	if (kvt_bind_name(fds[0], "own", MiB, NEW_PERSIST, 0600))
		return 1;
	if (fill_fd(fds[0], 0, MiB, 43) || fsync(fds[0]))
		return 2;
	return 0;
}

/*
 * Owner, group and mode are kept on the namespace and enforced after a
 * reload exactly as the mode says; root overrides.
 */
TEST_F_TIMEOUT(persist, permissions_survive_reload, 300)
{
	const struct kvtier_disk_region *r;
	struct kvtier_region_entry e;
	struct ckpt c;
	int fds[4];

	ASSERT_EQ(0, make_persistent(0, "priv", MiB, 0600, 40));
	ASSERT_EQ(0, make_persistent(0, "pub", MiB, 0644, 41));
	ASSERT_EQ(0, make_persistent(0, "grp", MiB, 0640, 42));
	open_fds(fds, 1);
	ASSERT_EQ(0, as_user(NOBODY, NOBODY, nobody_creates, fds));
	close_fds(fds, 1);

	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "own", &e));
	ASSERT_EQ((__u32)NOBODY, e.owner);
	ASSERT_EQ(0600U, e.mode);
	ASSERT_EQ(0, find_name(self->fd, "pub", &e));
	ASSERT_EQ(0U, e.owner);
	ASSERT_EQ(0644U, e.mode);
	ASSERT_EQ(0, ckpt_read(kvt_ns("KVTIER_NS0"), &c));
	r = ckpt_region(&c, "own", NULL);
	ASSERT_NE(NULL, r);
	ASSERT_EQ((__u32)NOBODY, le32toh(r->owner));
	ASSERT_EQ((__u32)NOBODY, le32toh(r->group));
	r = ckpt_region(&c, "grp", NULL);
	ASSERT_NE(NULL, r);
	ASSERT_EQ(0U, le32toh(r->group));
	ASSERT_EQ(0640U, le32toh(r->mode));
	free(c.buf);

	open_fds(fds, 4);
	ASSERT_EQ(0, as_user(NOBODY, NOBODY, nobody_after_reload, fds));
	close_fds(fds, 4);
	open_fds(fds, 1);
	ASSERT_EQ(0, as_user(NOBODY, 0, group_root_reads, fds));
	close_fds(fds, 1);

	/* Root overrides the mode: nobody's region, read-write, and unlink. */
	ASSERT_EQ(0, find_name(self->fd, "own", &e));
	ASSERT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(-1, check_name(0, "own", PAGE, 44));
	ASSERT_EQ(-1, check_name(0, "priv", MiB, 40));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "own"));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-ENOENT, find_name(self->fd, "own", &e));
	ASSERT_EQ(-1, check_name(0, "grp", MiB, 42));
}

static int nobody_sets_flags(void *arg)
{
	int *fds = arg;

	return set_flags(fds[0], "pin-me", KVTIER_REGION_PINNED, 0, 0) == -EPERM ? 0 : 1;
}

/* KVTIER_IOC_REGION_SETFLAGS: PINNED on persistent regions, its errors, kept across reloads. */
TEST_F_TIMEOUT(persist, setflags_pinned, 300)
{
	const struct kvtier_disk_region *r;
	struct kvtier_region_entry e;
	struct ckpt c;
	int fv, fds[1];

	ASSERT_EQ(0, make_persistent(0, "pin-me", MiB, 0644, 50));
	fv = open_name(0, "vol", MiB, KVTIER_OPEN_CREATE, 0600);
	ASSERT_GE(fv, 0);
	ASSERT_EQ(0, fill_fd(fv, 0, MiB, 51));

	ASSERT_EQ(-EINVAL, set_flags(self->fd, "vol", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "pin-me", 1U << 10, 0, 0));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "pin-me", PERSIST, 0, 0));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "pin-me", 0, PERSIST, 0));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "pin-me", KVTIER_REGION_PINNED,
				     KVTIER_REGION_PINNED, 0));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "pin-me", KVTIER_REGION_PINNED, 0, 1));
	ASSERT_EQ(-EINVAL, set_flags(self->fd, "a/b", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(-ENOENT, set_flags(self->fd, "nope", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(-1, ioctl(self->fd, KVTIER_IOC_REGION_SETFLAGS, (void *)8));
	ASSERT_EQ(EFAULT, errno);
	open_fds(fds, 1);
	ASSERT_EQ(0, as_user(NOBODY, NOBODY, nobody_sets_flags, fds));
	close_fds(fds, 1);
	ASSERT_EQ(0, find_name(self->fd, "pin-me", &e));
	ASSERT_EQ((__u32)PERSIST, e.flags);	/* none of that changed anything */
	ASSERT_EQ(0, find_name(self->fd, "vol", &e));
	ASSERT_EQ(0U, e.flags);

	ASSERT_EQ(0, set_flags(self->fd, "pin-me", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, set_flags(self->fd, "pin-me", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, find_name(self->fd, "pin-me", &e));
	ASSERT_EQ((__u32)(PERSIST | KVTIER_REGION_PINNED), e.flags);
	/* Committed at once. */
	ASSERT_EQ(0, ckpt_read(kvt_ns("KVTIER_NS0"), &c));
	r = ckpt_region(&c, "pin-me", NULL);
	ASSERT_NE(NULL, r);
	ASSERT_EQ((__u32)KVTIER_DISK_REGION_PINNED, le32toh(r->flags));
	free(c.buf);

	close(fv);
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "vol"));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "pin-me", &e));
	ASSERT_EQ((__u32)(PERSIST | KVTIER_REGION_PINNED), e.flags);
	ASSERT_EQ(-1, check_name(0, "pin-me", MiB, 50));

	ASSERT_EQ(0, set_flags(self->fd, "pin-me", 0, KVTIER_REGION_PINNED, 0));
	ASSERT_EQ(0, find_name(self->fd, "pin-me", &e));
	ASSERT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "pin-me", &e));
	ASSERT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(-1, check_name(0, "pin-me", MiB, 50));
}

#define RECLAIM_IMG	"/tmp/kvt-reclaim.img"
#define RSZ		(2 * MiB)

/*
 * A full namespace reclaims persistent regions nobody uses, least recently
 * used first, and never a pinned one or one in use. A 32 MiB loop device
 * is filled with 2 MiB regions (one kept open and mapped, the others
 * closed, a second apart); the second oldest is pinned and the oldest
 * read (so it is recent); four more regions must then take the space of
 * the others in order. After an attach, the order is the records' times.
 */
TEST_F_TIMEOUT(persist, reclaim_lru_when_full, 600)
{
	struct kvtier_region_entry e;
	struct kvtier_disk_super sb;
	char dev[32], name[16], order[64][16];
	int lfd, keep, f1, nfit, i, j, k, n_order = 0, gone, kfd, ret;
	long long before;
	unsigned char *pk;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(RECLAIM_IMG, 32 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_knob(1, "host_budget_mb", 4));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, NULL));
	nfit = le64toh(sb.nr_slots) * PAGE / RSZ;
	TH_LOG("%llu slots: %d regions of 2 MiB fit",
	       (unsigned long long)le64toh(sb.nr_slots), nfit);
	ASSERT_GE(nfit, 8);
	ASSERT_LE(nfit, 60);
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	ASSERT_EQ(0, kvt_stat(1, "regions_reclaimed"));

	keep = open_name(1, "in-use", RSZ, NEW_PERSIST, 0600);
	ASSERT_GE(keep, 0);
	pk = mmap(NULL, RSZ, PROT_READ | PROT_WRITE, MAP_SHARED, keep, 0);
	ASSERT_NE(MAP_FAILED, pk);
	pfill(pk, RSZ, 0, 200);
	ASSERT_EQ(0, fsync(keep));
	for (i = 0; i < nfit - 1; i++) {
		sleep(1);
		snprintf(name, sizeof(name), "r%02d", i);
		ASSERT_EQ(0, make_persistent(1, name, RSZ, 0600, 300 + i));
	}
	f1 = tier_open(1);
	ASSERT_EQ(nfit, list_names(f1, NULL, 0));
	ASSERT_EQ(0, kvt_stat(1, "regions_reclaimed"));

	/* Pin the second oldest; use the oldest, so it is the most recent. */
	ASSERT_EQ(0, set_flags(f1, "r01", KVTIER_REGION_PINNED, 0, 0));
	sleep(1);
	ASSERT_EQ(-1, check_name(1, "r00", PAGE, 300));
	for (i = 2; i < nfit - 1; i++)
		snprintf(order[n_order++], sizeof(order[0]), "r%02d", i);
	snprintf(order[n_order++], sizeof(order[0]), "r00");

	for (j = 0; j < 4; j++) {
		sleep(1);
		snprintf(name, sizeof(name), "n%02d", j);
		before = kvt_stat(1, "regions_reclaimed");
		ret = make_persistent(1, name, RSZ, 0600, 400 + j);
		TH_LOG("%s: %d, regions_reclaimed %lld -> %lld", name, ret, before,
		       kvt_stat(1, "regions_reclaimed"));
		ASSERT_EQ(0, ret);
		/* Gone: exactly the first regions in LRU order, none after. */
		for (gone = 0; gone < n_order; gone++)
			if (!find_name(f1, order[gone], &e))
				break;
		for (k = gone; k < n_order; k++) {
			if (find_name(f1, order[k], &e))
				TH_LOG("%s gone after %d reclaimed in LRU order",
				       order[k], gone);
			ASSERT_EQ(0, find_name(f1, order[k], &e));
		}
		ASSERT_EQ(gone, kvt_stat(1, "regions_reclaimed"));
		ASSERT_EQ(0, find_name(f1, "in-use", &e));
		ASSERT_EQ(0, find_name(f1, "r01", &e));
		for (k = 0; k <= j; k++) {
			snprintf(name, sizeof(name), "n%02d", k);
			ASSERT_EQ(0, find_name(f1, name, &e));
		}
	}
	TH_LOG("%d regions reclaimed", gone);
	ASSERT_GE(gone, 4);
	ASSERT_LT(gone, n_order);	/* r00, used last, stayed */
	ASSERT_EQ(0, find_name(f1, "r00", &e));
	ASSERT_LT(0, kvt_kmsg_scan(kfd, "reclaimed persistent region"));
	close(kfd);

	/* Every survivor reads back whole; the region in use never went. */
	ASSERT_EQ(-1, pcheck(pk, RSZ, 0, 200));
	ASSERT_EQ(0, find_name(f1, "r01", &e));
	ASSERT_EQ((__u32)(PERSIST | KVTIER_REGION_PINNED), e.flags);
	ASSERT_EQ(-1, check_name(1, "r01", RSZ, 301));
	ASSERT_EQ(-1, check_name(1, "r00", RSZ, 300));
	for (k = gone; k < n_order - 1; k++)
		ASSERT_EQ(-1, check_name(1, order[k], RSZ, 300 + atoi(order[k] + 1)));
	for (j = 0; j < 4; j++) {
		snprintf(name, sizeof(name), "n%02d", j);
		ASSERT_EQ(-1, check_name(1, name, RSZ, 400 + j));
	}

	/* The reclaim was committed: the same set after detach and attach. */
	munmap(pk, RSZ);
	close(keep);
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	f1 = tier_open(1);
	ASSERT_EQ(nfit + 4 - gone, list_names(f1, NULL, 0));
	for (k = 0; k < gone; k++)
		ASSERT_EQ(-ENOENT, find_name(f1, order[k], &e));
	ASSERT_EQ(0, find_name(f1, "r01", &e));
	ASSERT_EQ((__u32)(PERSIST | KVTIER_REGION_PINNED), e.flags);
	ASSERT_EQ(-1, check_name(1, "r01", RSZ, 301));
	ASSERT_EQ(-1, check_name(1, "in-use", RSZ, 200));

	/*
	 * An attach orders the LRU by the records' times, not by the
	 * records' order: n03, the last created, is made the least recently
	 * used, and a region of two is made after a detach and an attach.
	 */
	sleep(1);
	for (k = gone; k < n_order; k++)
		ASSERT_EQ(-1, check_name(1, order[k], RSZ, 300 + atoi(order[k] + 1)));
	for (j = 0; j < 3; j++) {
		snprintf(name, sizeof(name), "n%02d", j);
		ASSERT_EQ(-1, check_name(1, name, RSZ, 400 + j));
	}
	/* Times are seconds: the newest apart from the rest. */
	sleep(1);
	ASSERT_EQ(-1, check_name(1, "in-use", RSZ, 200));
	/*
	 * Reads are recorded by the next checkpoint (a transaction records
	 * only the regions it changed): two make the detach write one.
	 */
	ASSERT_EQ(0, set_flags(f1, "in-use", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, set_flags(f1, "in-use", 0, KVTIER_REGION_PINNED, 0));
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	before = kvt_stat(1, "regions_reclaimed");
	ASSERT_EQ(0, make_persistent(1, "after", 2 * RSZ, 0600, 500));
	f1 = tier_open(1);
	j = list_names(f1, NULL, 0);
	TH_LOG("after the attach: %lld reclaimed, n03 %s", kvt_stat(1, "regions_reclaimed") - before,
	       find_name(f1, "n03", &e) ? "gone" : "kept");
	ASSERT_EQ(-ENOENT, find_name(f1, "n03", &e));
	ASSERT_EQ(nfit + 4 - gone + 1 - (kvt_stat(1, "regions_reclaimed") - before), j);
	ASSERT_EQ(0, find_name(f1, "r01", &e));
	ASSERT_EQ(0, find_name(f1, "in-use", &e));
	ASSERT_EQ(-1, check_name(1, "after", 2 * RSZ, 500));
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, RECLAIM_IMG);
}

/* Unlink @name on tier @id; 0 or -errno. */
static int unlink_on(int id, const char *name)
{
	int fd = tier_open(id), ret;

	if (fd < 0)
		return -errno;
	ret = kvt_unlink_name(fd, name);
	close(fd);
	return ret;
}

#define FRAG_IMG	"/tmp/kvt-frag.img"
#define FRAG_MAX	512

struct frag_region {
	char name[16];
	unsigned long long pages;
	int fd;
	bool refill;
};

/* Runs of consecutive slots of region @name in the committed checkpoint, or -1. */
static long frag_runs(const struct ckpt *c, const char *name)
{
	const struct kvtier_disk_page *pg;
	const struct kvtier_disk_region *r = ckpt_region(c, name, &pg);
	unsigned long long i, n;
	long runs = 0;

	if (!r)
		return -1;
	n = le64toh(r->nr_pages);
	for (i = 0; i < n; i++)
		if (!i || le64toh(pg[i].slot) != le64toh(pg[i - 1].slot) + 1 ||
		    le32toh(pg[i].index) != le32toh(pg[i - 1].index) + 1)
			runs++;
	return runs;
}

/*
 * Create persistent regions of seeded sizes (16 to 256 pages), each
 * written whole and fsync()ed, kept open (so none is reclaimed for space),
 * until one fails with ENOSPC: that one is unlinked. Returns the number
 * made, from *@n on.
 */
static int frag_fill(struct __test_metadata *_metadata, struct frag_region *v,
		     int n, unsigned long long *rng, bool refill)
{
	int ret, fd;

	for (; n < FRAG_MAX; n++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		v[n].pages = 16 + *rng % 241;
		v[n].refill = refill;
		snprintf(v[n].name, sizeof(v[n].name), "f%03d", n);
		fd = open_name(1, v[n].name, v[n].pages * PAGE, NEW_PERSIST, 0600);
		if (fd < 0 && fd != -ENOSPC)
			ASSERT_EQ(0, fd) TH_LOG("create %s", v[n].name);
		ret = fd < 0 ? fd : fill_fd(fd, 0, v[n].pages * PAGE, 1000 + n);
		if (!ret && fsync(fd))
			ret = -errno;
		if (ret) {
			ASSERT_EQ(-ENOSPC, ret) TH_LOG("%s: %s", v[n].name, strerror(-ret));
			if (fd >= 0)
				close(fd);
			unlink_on(1, v[n].name);
			return n;
		}
		v[n].fd = fd;
	}
	ASSERT_TRUE(false) TH_LOG("%d regions and the namespace is not full", n);
	return n;
}

/*
 * Fragmentation (issue #17): a 32 MiB namespace filled to 100% with
 * persistent regions of random sizes, a random half unlinked, filled to
 * 100% again. From the committed checkpoint, each region's runs of
 * consecutive slots: on the fresh namespace every region is one run (next
 * fit goes on where the last allocation ended); on the refill the runs
 * are at most one per write-back batch (writeback_batch_kb) plus one per
 * free extent there was to fill, as the policy promises (a batch lands in
 * one run when an extent is long enough for it, and is split only over
 * extents it uses up). The numbers are printed; every byte of every
 * region reads back after a detach and attach.
 */
TEST_F_TIMEOUT(persist, fragmentation_bounded, 600)
{
	static struct frag_region v[FRAG_MAX];
	unsigned long long rng = 0xf4a6, batch, batches = 0, pages = 0;
	long runs, fill_runs = 0, refill_runs = 0, max_runs = 0;
	long long extents, largest0, largest1;
	int lfd, n, n1, i, k, kept = 0, refilled;
	char dev[32];
	struct ckpt c;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(FRAG_IMG, 32 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	/* No eviction: write-back only by fsync, in batches of at least the knob. */
	ASSERT_EQ(0, kvt_knob(1, "host_budget_mb", 128));
	batch = kvt_tier_num(1, "writeback_batch_kb") / 4;
	ASSERT_LT(0, batch);

	n1 = frag_fill(_metadata, v, 0, &rng, false);
	ASSERT_LT(8, n1);
	ASSERT_EQ(0, ckpt_read(dev, &c));
	for (i = 0; i < n1; i++) {
		runs = frag_runs(&c, v[i].name);
		EXPECT_EQ(1, runs) TH_LOG("fresh namespace: %s (%llu pages) in %ld runs",
					  v[i].name, v[i].pages, runs);
		fill_runs += runs;
	}
	free(c.buf);

	/* A random half goes; a commit frees their slots. */
	for (i = 0; i < n1; i++) {
		if (rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17, rng % 2) {
			close(v[i].fd);
			v[i].fd = -1;
			ASSERT_EQ(0, unlink_on(1, v[i].name));
		} else {
			kept++;
		}
	}
	for (i = 0; i < n1 && v[i].fd < 0; i++)
		;
	ASSERT_LT(i, n1);
	ASSERT_EQ(0, fsync(v[i].fd));
	ASSERT_EQ(0, kvt_stat(1, "slots_deferred"));
	extents = kvt_stat(1, "slot_extents");
	largest0 = kvt_stat(1, "largest_free_slots");

	n = frag_fill(_metadata, v, n1, &rng, true);
	largest1 = kvt_stat(1, "largest_free_slots");
	ASSERT_EQ(0, ckpt_read(dev, &c));
	for (i = n1; i < n; i++) {
		runs = frag_runs(&c, v[i].name);
		ASSERT_LT(0, runs) TH_LOG("%s", v[i].name);
		refill_runs += runs;
		max_runs = runs > max_runs ? runs : max_runs;
		batches += (v[i].pages + batch - 1) / batch;
		pages += v[i].pages;
	}
	free(c.buf);
	refilled = n - n1;
	TH_LOG("fill: %d regions, %ld runs; unlinked %d: %lld free extents, largest %lld slots",
	       n1, fill_runs, n1 - kept, extents, largest0);
	TH_LOG("refill: %d regions, %llu pages, %llu batches of up to %llu pages: %ld runs (%.2f per region, at most %ld), largest free run after %lld",
	       refilled, pages, batches, batch, refill_runs,
	       refilled ? (double)refill_runs / refilled : 0.0, max_runs, largest1);
	ASSERT_LT(0, refilled);
	EXPECT_LE(refill_runs, (long)(batches + extents));

	/* Every byte, after a detach and attach (the checkpoint's mapping). */
	for (i = 0; i < n; i++)
		if (v[i].fd >= 0)
			close(v[i].fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	for (i = k = 0; i < n; i++) {
		if (v[i].fd < 0)
			continue;
		EXPECT_EQ(-1, check_name(1, v[i].name, v[i].pages * PAGE, 1000 + i))
			TH_LOG("%s", v[i].name);
		k++;
	}
	ASSERT_EQ(kept + refilled, k);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, FRAG_IMG);
}

#define ALICE		4001
#define BOB		4002

/*
 * In a child as @uid (gid @uid, no groups): make_persistent() of @name, or
 * with @pin, set PINNED on it. The child's status: 0, or 1 + the error.
 */
static int persistent_as(uid_t uid, const char *name, size_t len,
			 unsigned long long seed, bool pin)
{
	int status, fd, ret;
	pid_t pid = fork();

	if (pid == 0) {
		if (kvt_become(uid, uid, NULL, 0))
			_exit(99);
		if (!pin)
			_exit(make_persistent(1, name, len, 0600, seed) ? 1 : 0);
		fd = tier_open(1);
		ret = set_flags(fd, name, KVTIER_REGION_PINNED, 0, 0);
		_exit(ret ? 1 + (-ret & 0x3f) : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Space reclaim is fair: a full namespace takes the writer's own unused
 * regions first, least recently used first, and another user's only when
 * the writer has none; PINNED, which exempts a region at everyone else's
 * expense, needs CAP_SYS_RESOURCE. Alice's two regions are the oldest of
 * a full 32 MiB namespace, Bob's fill the rest, then Bob writes more.
 */
TEST_F_TIMEOUT(persist, reclaim_takes_writers_own_first, 600)
{
	struct kvtier_region_entry e;
	struct kvtier_disk_super sb;
	char dev[32], name[16];
	int lfd, f1, nfit, i, gone = 0;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(RECLAIM_IMG, 32 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_knob(1, "host_budget_mb", 4));
	ASSERT_EQ(0, chmod("/dev/kvtier1", 0666));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, NULL));
	nfit = le64toh(sb.nr_slots) * PAGE / RSZ;
	ASSERT_GE(nfit, 8);

	ASSERT_EQ(0, persistent_as(ALICE, "alice0", RSZ, 500, false));
	ASSERT_EQ(0, persistent_as(ALICE, "alice1", RSZ, 501, false));
	sleep(1);
	for (i = 0; i < nfit - 2; i++) {
		snprintf(name, sizeof(name), "bob%02d", i);
		ASSERT_EQ(0, persistent_as(BOB, name, RSZ, 600 + i, false));
	}
	/* Bob may not exempt his regions; root may. (EXPECT: go on to the reclaim.) */
	EXPECT_EQ(1 + EPERM, persistent_as(BOB, "bob02", 0, 0, true));
	f1 = tier_open(1);
	ASSERT_EQ(0, find_name(f1, "bob02", &e));
	EXPECT_EQ((__u32)PERSIST, e.flags);
	ASSERT_EQ(0, set_flags(f1, "bob02", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, kvt_stat(1, "regions_reclaimed"));

	/* Bob writes three more: his own oldest unpinned regions make room. */
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "bobnew%d", i);
		ASSERT_EQ(0, persistent_as(BOB, name, RSZ, 700 + i, false));
	}
	ASSERT_LE(3, kvt_stat(1, "regions_reclaimed"));
	for (i = 0; i < nfit - 2; i++) {
		snprintf(name, sizeof(name), "bob%02d", i);
		if (find_name(f1, name, &e))
			gone++;
	}
	TH_LOG("%lld regions reclaimed, %d of them Bob's", kvt_stat(1, "regions_reclaimed"),
	       gone);
	ASSERT_EQ(kvt_stat(1, "regions_reclaimed"), gone);
	ASSERT_EQ(0, find_name(f1, "bob02", &e));
	ASSERT_EQ(-ENOENT, find_name(f1, "bob00", &e));	/* the oldest went */
	ASSERT_EQ(-1, check_name(1, "alice0", RSZ, 500));
	ASSERT_EQ(-1, check_name(1, "alice1", RSZ, 501));
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "bobnew%d", i);
		ASSERT_EQ(-1, check_name(1, name, RSZ, 700 + i));
	}
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, RECLAIM_IMG);
}

#define DUR_IMG		"/tmp/kvt-durable.img"
#define DUR_DM		"kvt-durable"

/*
 * fsync and msync(MS_SYNC) are the durability points. A 16 MiB namespace
 * behind a device-mapper linear target is frozen (dmsetup suspend) at a
 * "crash" after: A written and synced everywhere, B written and msynced in
 * the first half, C written in the second half without a sync through a
 * 4 MiB pool (evicted pages are on the namespace, maybe committed). The
 * frozen image, put back after the detach, gives B in the first half and
 * A or C in each page of the second half, never anything else.
 */
TEST_F_TIMEOUT(persist, sync_is_the_durability_point, 300)
{
	const char *dm = "/dev/mapper/" DUR_DM;
	size_t size = 16 * MiB, len = 8 * MiB, half = len / 2, i;
	const char *why = kvt_dm_missing("linear");
	unsigned char *img, *p;
	long long a, c;
	char dev[32], buf[PAGE];
	int lfd, fd, stale = 0;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(DUR_IMG, size, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_dm_linear(DUR_DM, dev));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	ASSERT_EQ(0, kvt_knob(1, "host_budget_mb", 4));

	fd = open_name(1, "durable", len, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pfill(p, len, 0, 1);
	ASSERT_EQ(0, fsync(fd));
	pfill(p, half, 0, 2);
	ASSERT_EQ(0, msync(p, half, MS_SYNC));
	pfill(p + half, half, half, 3);
	TH_LOG("before the crash: writeback_pages %lld, commits %lld",
	       kvt_stat(1, "writeback_pages"), kvt_stat(1, "commits"));

	/* The crash: no I/O reaches the loop device while it is copied. */
	img = malloc(size);
	ASSERT_NE(NULL, img);
	ASSERT_EQ(0, kvt_run("dmsetup suspend " DUR_DM));
	i = kvt_dev_read(dev, img, size, 0);
	ASSERT_EQ(0, kvt_run("dmsetup resume " DUR_DM));
	ASSERT_EQ(0, i);

	/* Everything written back and committed; then back to the crash. */
	munmap(p, len);
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dev_write(dev, img, size, 0));
	free(img);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));

	fd = open_name(1, "durable", len, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, check_fd(fd, 0, half, 2));
	for (i = half; i < len; i += PAGE) {
		ASSERT_EQ((ssize_t)PAGE, pread(fd, buf, PAGE, i));
		a = pcheck(buf, PAGE, i, 1);
		c = pcheck(buf, PAGE, i, 3);
		if (a != -1 && c != -1)
			TH_LOG("page %zu is neither the synced nor the later bytes", i / PAGE);
		ASSERT_TRUE(a == -1 || c == -1);
		stale += a == -1;
	}
	TH_LOG("second half after the crash: %d pages as synced, %zu as written later",
	       stale, half / PAGE - stale);
	ASSERT_EQ(0, kvt_stat(1, "checksum_errors"));

	/* And the tier goes on: new bytes, synced, survive a detach. */
	ASSERT_EQ(0, fill_fd(fd, 0, len, 4));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	ASSERT_EQ(-1, check_name(1, "durable", len, 4));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_remove(DUR_DM));
	loop_detach(lfd, DUR_IMG);
}

#define CE_IMG		"/tmp/kvt-commiterr.img"
#define CE_DM		"kvt-commiterr"

/*
 * A commit that cannot reach the media: the namespace turns into a
 * device-mapper error target after a first successful fsync. The next
 * fsync fails with EIO, the tier's state is "error", the detach reports
 * EIO yet detaches, and once the device works again the namespace attaches
 * at the generation of the last commit that succeeded, with its bytes.
 * Version 2 (@version "2") has the commits in its journal: the attach
 * replays them.
 */
static void failed_commit(struct __test_metadata *_metadata, const char *version)
{
	const char *dm = "/dev/mapper/" CE_DM;
	size_t size = 16 * MiB, len = 2 * MiB;
	const char *why = kvt_dm_missing("error");
	long long gen;
	char dev[32];
	int lfd, fd;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(CE_IMG, size, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_dm_linear(CE_DM, dev));
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", version));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));

	fd = open_name(1, "committed", len, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 0, len, SEED(1)));
	ASSERT_EQ(0, fsync(fd));
	gen = kvt_stat(1, "generation");
	ASSERT_GT(gen, 0);

	ASSERT_EQ(0, fill_fd(fd, 0, len, SEED(2)));
	ASSERT_EQ(0, kvt_dm_table(CE_DM, dev, "error"));
	ASSERT_EQ(-1, fsync(fd));
	ASSERT_EQ(EIO, errno);
	ASSERT_TRUE(tier_state_is(1, "error"));
	ASSERT_GT(kvt_stat(1, "io_errors"), 0);
	ASSERT_EQ(gen, kvt_stat(1, "generation"));
	/* What the process wrote is still what it reads. */
	ASSERT_EQ(-1, check_fd(fd, 0, len, SEED(2)));
	close(fd);

	ASSERT_EQ(-EIO, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_TRUE(tier_state_is(1, "detached"));

	ASSERT_EQ(0, kvt_dm_table(CE_DM, dev, "linear %s 0", dev));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	ASSERT_EQ(gen, kvt_stat(1, "generation"));
	ASSERT_EQ(-1, check_name(1, "committed", len, SEED(1)));
	if (!strcmp(version, "2")) {
		/* Replayed, not checkpointed: the journal had it. */
		ASSERT_GT(kvt_stat(1, "journal_pos"), kvt_stat(1, "journal_head"));
	}
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_remove(CE_DM));
	loop_detach(lfd, CE_IMG);
}

TEST_F_TIMEOUT(persist, failed_commit_keeps_the_last_generation, 300)
{
	failed_commit(_metadata, "1");
}

TEST_F_TIMEOUT(persist, failed_journal_commit_keeps_the_last_generation, 300)
{
	failed_commit(_metadata, "2");
}

/*
 * Make blocks [@first, @first + @nr) of /dev/mapper/@name (over @dev)
 * fail every I/O; the rest maps @dev linearly. 0 or non-zero.
 */
static int error_blocks(const char *name, const char *dev, unsigned long long first,
			unsigned long long nr)
{
	unsigned long long s = first * 8, e = (first + nr) * 8, end = kvt_dev_size(dev) >> 9;
	char head[128] = "";

	if (s)
		snprintf(head, sizeof(head), "0 %llu linear %s 0\\n", s, dev);
	return kvt_run("printf '%s%llu %llu error\\n%llu %llu linear %s %llu\\n' | "
		       "dmsetup load %s 2>/dev/null && dmsetup suspend %s && dmsetup resume %s || "
		       "{ dmsetup resume %s; false; }",
		       head, s, e - s, e, end - e, dev, e, name, name, name, name);
}

/* The raw checkpoint of superblock copy @copy of @dev, whole; NULL on error. */
static struct kvtier_disk_ckpt *ckpt_raw(const char *dev, int copy,
					 struct kvtier_disk_super *sb)
{
	unsigned char blk[PAGE];
	unsigned long long room;
	void *buf;

	if (kvt_dev_read(dev, blk, PAGE, (unsigned long long)copy * PAGE))
		return NULL;
	memcpy(sb, blk, sizeof(*sb));
	room = (le64toh(sb->ckpt_bytes) + PAGE - 1) / PAGE * PAGE;
	buf = malloc(room + PAGE);
	if (buf && kvt_dev_read(dev, buf, room, (le64toh(sb->meta_start) +
			       copy * le64toh(sb->meta_blocks)) * PAGE)) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* The index of @name's record in @hdr, or -1. */
static int ckpt_find(const struct kvtier_disk_ckpt *hdr, const char *name)
{
	const struct kvtier_disk_region *rec = (const void *)(hdr + 1);
	unsigned long long i;

	for (i = 0; i < le64toh(hdr->nr_regions); i++)
		if (!strncmp(rec[i].name, name, sizeof(rec[i].name)))
			return (int)i;
	return -1;
}

/*
 * Version 4: bytes of the CRCs of the regions of @hdr (ckpt_raw()) that
 * their CRC runs do not hold (those in the CRC section); *@runs gets the
 * CRC run records.
 */
static unsigned long long ckpt_crcs_tail(const struct kvtier_disk_ckpt *hdr,
					 unsigned long long *runs)
{
	const struct kvtier_disk_region *rec = (const void *)(hdr + 1);
	const struct kvtier_disk_extent *e = (const void *)(rec + le64toh(hdr->nr_regions));
	unsigned long long i, k, tail = 0;

	*runs = 0;
	for (i = 0; i < le64toh(hdr->nr_regions); i++) {
		unsigned long long all = le64toh(rec[i].nr_pages) * 4, held = 0;

		e += le64toh(rec[i].nr_extents);
		for (k = 0; k < le32toh(rec[i].nr_crc_runs); k++, e++)
			held += le32toh(e->len) * (unsigned long long)PAGE;
		*runs += le32toh(rec[i].nr_crc_runs);
		tail += all > held ? all - held : 0;
	}
	return tail;
}

#define EX_IMG		"/tmp/kvt-extents.img"
#define EX_DM		"kvt-extents"


/*
 * Format version 3 maps pages by extents: a region written in one go is a
 * few extent records, one written a page at a time backwards (each page
 * on the slot after the one of the page after it) and one of every other
 * page have a record per page; the index holds nothing else (64 + 128 per
 * region + 16 per extent bytes), each region's CRCs in the CRC section
 * are every page's CRC32C, and every byte reads back after a reattach. An
 * extent record that overlaps the next one, with the checkpoint's CRC
 * made right again, is refused: the attach falls back to the older copy;
 * so does a version-3 superblock without INCOMPAT_EXTENTS.
 */
TEST_F_TIMEOUT(persist, extents_map_runs_of_pages, 300)
{
	const size_t seq = 8 * MiB, small = 256 * 1024, np = small / PAGE;
	static const char *const names[] = { "ex:seq", "ex:back", "ex:holes" };
	unsigned long long nr_ext[3], nr_pages[3], total_ext = 0, gen;
	char msg[64];
	int kfd;
	struct kvtier_disk_super sb;
	struct kvtier_disk_ckpt *hdr;
	struct kvtier_disk_region *rec;
	struct kvtier_disk_extent *ext;
	unsigned char *state, blk[PAGE];
	size_t state_len, i;
	char dev[32];
	int lfd, fd, copy, k;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(EX_IMG, 64 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", "3"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(3, kvt_tier_num(1, "upgrade"));

	ASSERT_EQ(0, make_persistent(1, "ex:seq", seq, 0600, 1));
	/* Backwards, a page per write-back: each page's slot follows the next's. */
	fd = open_name(1, "ex:back", small, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	for (i = np; i-- > 0;) {
		ASSERT_EQ(0, fill_fd(fd, i * PAGE, PAGE, 2));
		ASSERT_EQ(0, fsync(fd));
	}
	close(fd);
	/* Every other page: runs of slots, but not of indexes. */
	fd = open_name(1, "ex:holes", small, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	for (i = 0; i < np; i += 2)
		ASSERT_EQ(0, fill_fd(fd, i * PAGE, PAGE, 3));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	/* The detach checkpoints. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	ASSERT_EQ(0, kvt_super_read(dev, &sb, &copy));
	ASSERT_EQ(3U, le32toh(sb.version));
	ASSERT_EQ(0, kvt_ckpt_check(dev, copy));
	hdr = ckpt_raw(dev, copy, &sb);
	ASSERT_NE(NULL, hdr);
	rec = (void *)(hdr + 1);
	for (k = 0; k < 3; k++) {
		int r = ckpt_find(hdr, names[k]);

		ASSERT_GE(r, 0);
		nr_ext[k] = le64toh(rec[r].nr_extents);
		nr_pages[k] = le64toh(rec[r].nr_pages);
		total_ext += nr_ext[k];
		TH_LOG("%s: %llu pages in %llu extent records", names[k], nr_pages[k], nr_ext[k]);
	}
	EXPECT_EQ(seq / PAGE, nr_pages[0]);
	EXPECT_LE(1ULL, nr_ext[0]);
	EXPECT_GE(8ULL, nr_ext[0]);
	EXPECT_EQ(np, nr_pages[1]);
	EXPECT_EQ(np, nr_ext[1]);
	EXPECT_EQ(np / 2, nr_pages[2]);
	EXPECT_EQ(np / 2, nr_ext[2]);
	EXPECT_EQ(3ULL, le64toh(hdr->nr_regions));
	EXPECT_EQ(total_ext, le64toh(hdr->nr_extents));
	EXPECT_EQ(nr_pages[0] + nr_pages[1] + nr_pages[2], le64toh(hdr->nr_pages));
	EXPECT_EQ(64 + 3 * 128 + 16 * total_ext, le64toh(sb.ckpt_bytes));

	/* Every CRC (from the CRC section) is its slot's bytes' CRC32C. */
	ASSERT_EQ(0, kvt_state_read(dev, &sb, &state, &state_len));
	{
		const struct kvtier_disk_ckpt *sh = (const void *)state;
		const struct kvtier_disk_region *sr = (const void *)(sh + 1);
		const struct kvtier_disk_page *pg = (const void *)(sr + le64toh(sh->nr_regions));

		ASSERT_EQ(le64toh(hdr->nr_pages), le64toh(sh->nr_pages));
		for (i = 0; i < le64toh(sh->nr_pages); i++) {
			ASSERT_EQ(0, kvt_dev_read(dev, blk, PAGE,
						  kvt_slot_offset(&sb, le64toh(pg[i].slot))));
			ASSERT_EQ(le32toh(pg[i].crc), kvt_crc32c(~0U, blk, PAGE));
		}
	}
	free(state);

	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(-1, check_name(1, "ex:seq", seq, 1));
	ASSERT_EQ(-1, check_name(1, "ex:back", small, 2));
	fd = open_name(1, "ex:holes", 0, 0, 0);
	ASSERT_GE(fd, 0);
	for (i = 0; i < np; i++) {
		long long bad = i % 2 ? check_zero(fd, i * PAGE, PAGE) :
			       check_fd(fd, i * PAGE, PAGE, 3);

		ASSERT_EQ(-1, bad);
	}
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* ex:back's first extent stretched over its second: refused. */
	free(hdr);
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &copy));
	gen = le64toh(sb.generation);
	hdr = ckpt_raw(dev, copy, &sb);
	ASSERT_NE(NULL, hdr);
	rec = (void *)(hdr + 1);
	ext = (void *)(rec + le64toh(hdr->nr_regions));
	for (k = 0; k < ckpt_find(hdr, "ex:back"); k++)
		ext += le64toh(rec[k].nr_extents);
	ASSERT_EQ(1U, le32toh(ext->len));
	ext->len = htole32(2);
	ASSERT_EQ(0, kvt_dev_write(dev, hdr, (le64toh(sb.ckpt_bytes) + PAGE - 1) / PAGE * PAGE,
				   (le64toh(sb.meta_start) + copy * le64toh(sb.meta_blocks)) * PAGE));
	ASSERT_EQ(0, kvt_dev_read(dev, blk, PAGE, (unsigned long long)copy * PAGE));
	((struct kvtier_disk_super *)blk)->ckpt_crc =
		htole32(kvt_crc32c(~0U, hdr, le64toh(sb.ckpt_bytes)));
	kvt_super_seal(blk);
	ASSERT_EQ(0, kvt_dev_write(dev, blk, PAGE, (unsigned long long)copy * PAGE));
	free(hdr);
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ((long long)gen - 1, kvt_stat(1, "generation"));
	EXPECT_EQ(1, kvt_kmsg_scan(kfd, "names inconsistent regions or pages"));
	close(kfd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* A version-3 copy without INCOMPAT_EXTENTS (sealed again) is damage. */
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &copy));
	ASSERT_EQ(0, kvt_dev_read(dev, blk, PAGE, (unsigned long long)copy * PAGE));
	((struct kvtier_disk_super *)blk)->feature_incompat &=
		~htole64(KVTIER_FEATURE_INCOMPAT_EXTENTS);
	kvt_super_seal(blk);
	ASSERT_EQ(0, kvt_dev_write(dev, blk, PAGE, (unsigned long long)copy * PAGE));
	snprintf(msg, sizeof(msg), "superblock copy %d is damaged", copy);
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(1, kvt_kmsg_scan(kfd, msg));
	close(kfd);
	EXPECT_EQ(-1, check_name(1, "ex:seq", seq, 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, EX_IMG);
}

/*
 * A version-3 checkpoint first makes the checkpoint already in its area
 * fail its CRC (its header block, with FUA), so a checkpoint that fails
 * part-way never leaves that one whole over CRCs it did not write (they
 * are checked only when a region is read). Its area's first block failing
 * (that write fails): the area is untouched, whole as its superblock says.
 * Its CRC section failing: the old checkpoint fails its CRC. Either way
 * the detach reports EIO, and the next attach reads every byte of the
 * last commit.
 */
TEST_F_TIMEOUT(persist, extents_checkpoint_never_leaves_old_index_over_new_crcs, 300)
{
	const char *dm = "/dev/mapper/" EX_DM;
	const char *why = kvt_dm_missing("error");
	const size_t len = MiB;
	struct kvtier_disk_super sb;
	int lfd, fd, copy, next, pass;
	char dev[32];

	if (why)
		SKIP(return, "%s", why);
	lfd = loop_tier1(_metadata, EX_IMG, "3", EX_DM, dev, sizeof(dev));
	/* Both areas name the region, with other CRCs each. */
	ASSERT_EQ(0, make_persistent(1, "ex:r", len, 0600, 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	for (pass = 0; pass < 2; pass++) {
		ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
		fd = open_name(1, "ex:r", 0, 0, 0);
		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, fill_fd(fd, 0, len, 2 + pass));
		ASSERT_EQ(0, fsync(fd));
		close(fd);
		if (pass)
			break;
		ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	}
	/* The detach's checkpoint goes to the area the newest copy does not name. */
	ASSERT_EQ(0, kvt_super_read(dm, &sb, &copy));
	next = !copy;
	ASSERT_EQ(0, kvt_ckpt_check(dm, next));
	ASSERT_EQ(0, error_blocks(EX_DM, dev, le64toh(sb.meta_start) +
				  next * le64toh(sb.meta_blocks), 1));
	ASSERT_EQ(-EIO, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_table(EX_DM, dev, "linear %s 0", dev));
	/* Nothing was written there: its old checkpoint is whole. */
	EXPECT_EQ(0, kvt_ckpt_check(dm, next));

	/* Again, with the CRC section failing instead: it fails its CRC. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	ASSERT_EQ(-1, check_name(1, "ex:r", len, 3));
	ASSERT_EQ(0, kvt_super_read(dm, &sb, &copy));
	ASSERT_EQ(next, !copy);
	ASSERT_EQ(0, error_blocks(EX_DM, dev, le64toh(sb.crcs_block[next]),
				  (le64toh(sb.nr_slots) * 4 + PAGE - 1) / PAGE));
	fd = open_name(1, "ex:r", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 0, len, 4));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(-EIO, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_table(EX_DM, dev, "linear %s 0", dev));
	EXPECT_EQ(-EBADMSG, kvt_ckpt_check(dm, next));
	EXPECT_EQ(0, kvt_ckpt_check(dm, copy));

	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	ASSERT_EQ(-1, check_name(1, "ex:r", len, 4));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_remove(EX_DM));
	loop_detach(lfd, EX_IMG);
}

/*
 * One data block of a region changed on the raw device while the module
 * was unloaded (found by searching the device for the page's bytes, and
 * checked against the checkpoint's page record): that page is never handed
 * out (SIGBUS, EIO, checksum_errors, sticky -EBADMSG), every other page of
 * it and of another region is intact.
 */
TEST_F_TIMEOUT(persist, corrupt_block_after_reload, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	const unsigned long long bad_page = 5, seed = 60;
	const struct kvtier_disk_page *pages;
	const struct kvtier_disk_region *r;
	unsigned char *want, *chunk, *p;
	unsigned long long blk, first, last, found = 0, hits = 0, i;
	size_t chunk_len = 4 * MiB, len = MiB;
	char buf[64];
	struct ckpt c;
	int fd;

	ASSERT_EQ(0, make_persistent(0, "bad:region", len, 0600, seed));
	ASSERT_EQ(0, make_persistent(0, "good:region", len, 0600, seed + 1));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());

	want = malloc(PAGE);
	chunk = malloc(chunk_len);
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, chunk);
	pfill(want, PAGE, bad_page * PAGE, seed);
	ASSERT_EQ(0, ckpt_read(ns0, &c));
	first = le64toh(c.sb.data_start);
	last = first + le64toh(c.sb.nr_slots);
	for (blk = first; blk < last; blk += chunk_len / PAGE) {
		size_t n = (last - blk) * PAGE < chunk_len ? (last - blk) * PAGE : chunk_len;

		ASSERT_EQ(0, kvt_dev_read(ns0, chunk, n, blk * PAGE));
		for (i = 0; i < n / PAGE; i++) {
			if (!memcmp(chunk + i * PAGE, want, PAGE)) {
				found = blk + i;
				hits++;
			}
		}
	}
	r = ckpt_region(&c, "bad:region", &pages);
	ASSERT_NE(NULL, r);
	TH_LOG("page %llu: slot %llu, block %llu; %llu copies on the namespace",
	       bad_page, (unsigned long long)le64toh(pages[bad_page].slot), found, hits);
	ASSERT_EQ(1ULL, hits);	/* written once: one copy on the namespace */
	ASSERT_EQ(len / PAGE, le64toh(r->nr_pages));
	ASSERT_EQ(bad_page, le32toh(pages[bad_page].index));
	ASSERT_EQ(found, first + le64toh(pages[bad_page].slot));
	ASSERT_EQ(kvt_crc32c(~0U, want, PAGE), le32toh(pages[bad_page].crc));
	free(c.buf);

	memset(chunk, 0xa5, PAGE);
	ASSERT_EQ(0, kvt_dev_write(ns0, chunk, PAGE, found * PAGE));
	ASSERT_EQ(0, load_attach(ns0));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));

	fd = open_name(0, "bad:region", 0, 0, 0);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(1, kvt_touch_or_sigbus(p + bad_page * PAGE + 100));
	ASSERT_EQ(-1, pread(fd, buf, 8, bad_page * PAGE));
	ASSERT_EQ(EIO, errno);
	ASSERT_GT(kvt_stat(0, "checksum_errors"), 0);
	ASSERT_EQ(0, kvt_tier_read(0, "error", buf, sizeof(buf)));
	ASSERT_STREQ("-74", buf);
	ASSERT_TRUE(tier_state_is(0, "error"));
	for (i = 0; i < len / PAGE; i++) {
		if (i == bad_page)
			continue;
		if (check_fd(fd, i * PAGE, PAGE, seed) != -1)
			TH_LOG("page %llu of %llu", i, (unsigned long long)(len / PAGE));
		ASSERT_EQ(-1, check_fd(fd, i * PAGE, PAGE, seed));
	}
	ASSERT_EQ(-1, pcheck(p, bad_page * PAGE, 0, seed));
	ASSERT_EQ(-1, pcheck(p + (bad_page + 1) * PAGE, len - (bad_page + 1) * PAGE,
				(bad_page + 1) * PAGE, seed));
	ASSERT_EQ(-1, check_name(0, "good:region", len, seed + 1));
	munmap(p, len);
	close(fd);
	free(want);
	free(chunk);
}

/* Wait up to 5 s for tier @id's stat @name to be @want; returns the last value. */
static long long wait_stat(int id, const char *name, long long want)
{
	long long got = -1;
	int i;

	for (i = 0; i < 50; i++) {
		got = kvt_stat(id, name);
		if (got == want)
			break;
		usleep(100000);
	}
	return got;
}

/*
 * Unlink persistent region @name of tier @id, whose @pages pages are all
 * on the namespace (version 4: and its CRCs in one run, checkpointed), and
 * wait up to 5 s for the commit that frees its slots.
 * That commit is not the unlink's: it is kicked when the last holder lets
 * go of the region (the ioctl's lookup, or a short holder after it) and
 * runs on a worker, so without the wait it may come after any later one.
 */
static int unlink_settled(int id, const char *name, long long pages)
{
	char v[16] = "";
	/* Version 4: and its CRC runs, 4 bytes a page in whole blocks. */
	long long runs = !kvt_tier_read(id, "upgrade", v, sizeof(v)) && atoi(v) >= 4 ?
			 (pages * 4 + PAGE - 1) / PAGE : 0;
	long long want = kvt_stat(id, "slots_used") - pages - runs;
	int ret = unlink_on(id, name);

	if (ret)
		return ret;
	if (wait_stat(id, "slots_used", want) != want)
		return -ETIMEDOUT;
	return kvt_stat(id, "slots_deferred") ? -EBUSY : 0;
}

/* Wait up to 5 s for tier @id's CRCs in memory to be @want bytes. */
static long long wait_crcs(int id, long long want)
{
	long long got = -1;
	int i;

	for (i = 0; i < 50; i++) {
		got = kvt_meta_col(id, 3);
		if (got == want)
			break;
		usleep(100000);
	}
	return got;
}

/*
 * Open @name, check it is pattern @seed, drop its pages from the pool and
 * close it: -1 or as check_fd.
 */
static long long check_and_drop(const char *name, size_t len,
				unsigned long long seed)
{
	int fd = open_name(0, name, 0, 0, 0);
	long long bad;

	if (fd < 0)
		return fd;
	bad = check_fd(fd, 0, len, seed);
	if (posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED))
		bad = -4;
	close(fd);
	return bad;
}

/*
 * Where the map of a region is in the checkpoint the newest superblock of
 * a namespace names (the journal is empty after an attach): byte offsets
 * of its page records (version 3: extent records) and, version 3, of its
 * first CRC (in the CRC section; version 4: in its first CRC run, if it
 * has one); how many records (not the CRC run records), and pages.
 */
struct rec_place {
	unsigned long long off;
	unsigned long long n;
	unsigned long long pages;
	unsigned long long crcs;
	int extents;
};

static int records_at(const char *ns0, const char *name, struct rec_place *p)
{
	struct kvtier_disk_super sb;
	const struct kvtier_disk_region *rec;
	const struct kvtier_disk_ckpt *hdr;
	unsigned long long area, i, first = 0, sec = 0, recs;
	unsigned char *buf;
	int copy, ret, v4;

	ret = kvt_super_read(ns0, &sb, &copy);
	if (ret)
		return ret;
	p->extents = le32toh(sb.version) >= 3;
	v4 = le32toh(sb.version) >= 4;
	area = (le64toh(sb.meta_start) + copy * le64toh(sb.meta_blocks)) * PAGE;
	buf = malloc(MiB);
	if (!buf)
		return -ENOMEM;
	ret = kvt_dev_read(ns0, buf, MiB, area);
	hdr = (const void *)buf;
	rec = (const void *)(hdr + 1);
	recs = sizeof(*hdr) + le64toh(hdr->nr_regions) * sizeof(*rec);
	for (i = 0; !ret && i < le64toh(hdr->nr_regions); i++) {
		unsigned long long n = p->extents ? le64toh(rec[i].nr_extents) :
				       le64toh(rec[i].nr_pages);
		unsigned long long nr = v4 ? le32toh(rec[i].nr_crc_runs) : 0, k, blocks = 0;
		const struct kvtier_disk_extent *run = (const void *)(buf + recs +
					(first + n) * sizeof(struct kvtier_disk_page));
		unsigned long long all = le64toh(rec[i].nr_pages) * 4;

		if ((const unsigned char *)(run + nr) > buf + MiB) {
			ret = -E2BIG;
			break;
		}
		for (k = 0; k < nr; k++)
			blocks += le32toh(run[k].len);
		if (!strncmp(rec[i].name, name, sizeof(rec[i].name))) {
			p->off = area + recs + first * sizeof(struct kvtier_disk_page);
			p->n = n;
			p->pages = le64toh(rec[i].nr_pages);
			p->crcs = nr ? kvt_slot_offset(&sb, le64toh(run[0].slot)) :
				  le64toh(sb.crcs_block[copy]) * PAGE + sec;
			free(buf);
			return 0;
		}
		first += n + nr;
		sec += all > blocks * PAGE ? all - blocks * PAGE : 0;
	}
	free(buf);
	return ret ? ret : -ENOENT;
}

/* Flip bit 0 of byte @off of @dev. */
static int flip_byte(const char *dev, unsigned long long off)
{
	unsigned char blk[PAGE];
	int ret = kvt_dev_read(dev, blk, PAGE, off / PAGE * PAGE);

	if (ret)
		return ret;
	blk[off % PAGE] ^= 0x01;
	return kvt_dev_write(dev, blk, PAGE, off / PAGE * PAGE);
}

/*
 * Damage the map of @name (@len bytes, written in one go) on @dev, in the
 * checkpoint the attached tier loaded: flip a bit of the CRC of its first
 * page (@slot: of the slot of its first record instead). 0 or -errno.
 * damage_records(): on NS0.
 */
static int damage_records_on(const char *dev, const char *name, size_t len,
			     int slot)
{
	struct rec_place p;
	int ret = records_at(dev, name, &p);

	if (ret)
		return ret;
	/* Version 3: runs of pages are one record each. */
	if (p.pages != len / PAGE || !p.n || p.n > (p.extents ? p.pages / 8 : p.pages))
		return -EUCLEAN;
	if (slot)
		return flip_byte(dev, p.off);
	return flip_byte(dev, p.extents ? p.crcs : p.off + 12);
}

static int damage_records(const char *name, size_t len, int slot)
{
	return damage_records_on(kvt_ns("KVTIER_NS0"), name, len, slot);
}

/* Wait up to 5 s for @name to be unlinked: 0 or the open's result. */
static int wait_gone(const char *name)
{
	int i, fd = 0;

	for (i = 0; i < 50; i++) {
		fd = open_name(0, name, 0, 0, 0);
		if (fd == -ENOENT)
			return 0;
		if (fd >= 0)
			close(fd);
		usleep(100000);
	}
	return fd;
}

/*
 * Region @name of tier 0 (@len bytes, bound with @flags): pattern @seed
 * with @n pages from page @first rewritten as pattern @seed2. 0, or -1 if
 * a byte is wrong or the region cannot be opened.
 */
static int check_rewritten(const char *name, unsigned int flags, size_t len,
			   unsigned long long seed, size_t first, size_t n,
			   unsigned long long seed2)
{
	int fd = open_name(0, name, 0, flags, 0);
	int ok;

	if (fd < 0)
		return -1;
	ok = check_fd(fd, 0, first * PAGE, seed) == -1 &&
	     check_fd(fd, first * PAGE, n * PAGE, seed2) == -1 &&
	     check_fd(fd, (first + n) * PAGE, len - (first + n) * PAGE, seed) == -1;
	close(fd);
	return ok ? 0 : -1;
}

/* map:2 of closed_regions_leave_maps_on_namespace: pages 8 to 11 rewritten. */
static int check_map2(size_t len)
{
	return check_rewritten("map:2", 0, len, 72, 8, 4, 80);
}

/* Flip @name's PINNED flag (*@pinned says how it is): one commit. */
static int toggle_pinned(int fd, const char *name, int *pinned)
{
	*pinned = !*pinned;
	return set_flags(fd, name, *pinned ? KVTIER_REGION_PINNED : 0,
			 *pinned ? 0 : KVTIER_REGION_PINNED, 0);
}

/*
 * dr:c of damaged_map_in_replay_loses_only_that_region (sealed: bound
 * read-only): pages 4 to 7 rewritten.
 */
static int check_drc(size_t len)
{
	return check_rewritten("dr:c", KVTIER_OPEN_RDONLY, len, 112, 4, 4, 114);
}

/*
 * A journal replay that meets a region whose CRCs in the checkpoint are
 * damaged (version 3 checks them only when a map is read) loses that
 * region alone. After a checkpoint of dr:a, dr:b and dr:c, transactions
 * rewrite pages of dr:a and dr:c and seal both (so that a read-only
 * attach serves them), and unlink dr:b; then the tier "crashes" (the
 * metadata put back as it was before the detach) and the CRCs of dr:a
 * and dr:b in the checkpoint are damaged. A read-only attach applies the
 * newest generation, dr:c's rewrite with it, lists dr:a and refuses to
 * open it (EUCLEAN); a read-write attach does the same and unlinks dr:a.
 * Never a refused attach, nor a fallback to the older superblock copy,
 * which would lose every region's later transactions.
 */
TEST_F_TIMEOUT(persist, damaged_map_in_replay_loses_only_that_region, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	size_t len = 16 * PAGE;
	struct kvt_jsnap snap = {};
	long long ckpts, gen;
	int fd, kfd;

	ASSERT_EQ(0, make_persistent(0, "dr:a", len, 0600, 110));
	ASSERT_EQ(0, make_persistent(0, "dr:b", len, 0600, 111));
	ASSERT_EQ(0, make_persistent(0, "dr:c", len, 0600, 112));
	/* Their maps in a checkpoint, the journal empty. */
	ASSERT_EQ(0, reload(&self->fd));
	ckpts = kvt_stat(0, "commits") - kvt_stat(0, "journal_commits");

	fd = open_name(0, "dr:a", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 0, 4 * PAGE, 113));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, set_flags(self->fd, "dr:a", KVTIER_REGION_SEALED, 0, 0));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "dr:b"));
	fd = open_name(0, "dr:c", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 4 * PAGE, 4 * PAGE, 114));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, set_flags(self->fd, "dr:c", KVTIER_REGION_SEALED, 0, 0));
	/* Transactions, all of them. */
	ASSERT_EQ(ckpts, kvt_stat(0, "commits") - kvt_stat(0, "journal_commits"));
	gen = kvt_stat(0, "generation");
	ASSERT_EQ(0, kvt_jsnap_take(ns0, &snap));

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_jsnap_put(ns0, &snap));
	kvt_jsnap_free(&snap);
	ASSERT_EQ(0, damage_records("dr:a", len, 0));
	ASSERT_EQ(0, damage_records("dr:b", len, 0));
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);

	/* Read-only first: nothing is unlinked; dr:a is listed, lost. */
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "1"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns0));
	EXPECT_EQ(gen, kvt_stat(0, "generation"));
	EXPECT_EQ(-EUCLEAN, open_name(0, "dr:a", 0, KVTIER_OPEN_RDONLY, 0));
	EXPECT_EQ(-ENOENT, open_name(0, "dr:b", 0, KVTIER_OPEN_RDONLY, 0));
	EXPECT_EQ(0, check_drc(len));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "read_only", "0"));

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns0));
	/* dr:a's unlink commits on its own: later generations, never older. */
	EXPECT_LE(gen, kvt_stat(0, "generation"));
	ASSERT_EQ(0, wait_gone("dr:a"));
	EXPECT_EQ(-ENOENT, open_name(0, "dr:b", 0, KVTIER_OPEN_RDONLY, 0));
	EXPECT_EQ(0, check_drc(len));
	EXPECT_EQ(2, kvt_kmsg_scan(kfd, "page records of region 'dr:a' in the checkpoint are damaged"));
	close(kfd);

	/* And from the checkpoint the detach writes. */
	ASSERT_EQ(0, reload(&self->fd));
	EXPECT_EQ(-ENOENT, open_name(0, "dr:a", 0, KVTIER_OPEN_RDONLY, 0));
	EXPECT_EQ(-ENOENT, open_name(0, "dr:b", 0, KVTIER_OPEN_RDONLY, 0));
	EXPECT_EQ(0, check_drc(len));
}

/*
 * A region found damaged by an open is lost: in no commit from then on.
 * A detach at once (before the unload work unlinks it, which a detach
 * cancels) writes a checkpoint without it and no warning; it is gone
 * after the attach, and the other region, pinned by the transaction that
 * made the detach write a checkpoint, is whole.
 */
TEST_F_TIMEOUT(persist, detach_after_a_damaged_open, 300)
{
	struct kvtier_region_entry e;
	size_t len = 16 * PAGE;
	int pinned = 0;
	long long gen;

	ASSERT_EQ(0, make_persistent(0, "dd:a", len, 0600, 130));
	ASSERT_EQ(0, make_persistent(0, "dd:b", len, 0600, 131));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, damage_records("dd:a", len, 0));
	ASSERT_EQ(0, toggle_pinned(self->fd, "dd:b", &pinned));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(-EUCLEAN, open_name(0, "dd:a", 0, 0, 0));
	gen = kvt_stat(0, "generation");
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
	EXPECT_EQ(-ENOENT, open_name(0, "dd:a", 0, 0, 0));
	ASSERT_EQ(0, find_name(self->fd, "dd:b", &e));
	EXPECT_EQ((__u32)(PERSIST | KVTIER_REGION_PINNED), e.flags);
	EXPECT_EQ(-1, check_name(0, "dd:b", len, 131));
	/* One commit since the open, the detach's: dd:a was still linked. */
	if (kvt_stat(0, "generation") != gen + 1)
		SKIP(return, "the unload work unlinked dd:a before the detach (generation %lld, then %lld): nothing proved",
		     gen, kvt_stat(0, "generation"));
}

#define REUSE_IMG	"/tmp/kvt-reuse.img"

/*
 * The replay of a deletion frees the region's slots even when its CRCs
 * are damaged: a later transaction that gave them to another region (the
 * history did, with the namespace too full to leave them) replays too.
 * On a 32 MiB namespace, ru:b (8 MiB) is unlinked after a checkpoint and
 * ru:d (20 MiB) written, which only fits into ru:b's old slots; then a
 * "crash", ru:b's CRCs damaged, and an attach: every transaction applies.
 */
TEST_F_TIMEOUT(persist, damaged_map_in_replay_frees_slots_reused_later, 300)
{
	struct kvt_jsnap snap = {};
	long long ckpts, gen;
	char dev[32];
	int lfd;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(REUSE_IMG, 32 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, make_persistent(1, "ru:b", 8 * MiB, 0600, 120));
	ASSERT_EQ(0, make_persistent(1, "ru:c", 8 * MiB, 0600, 121));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ckpts = kvt_stat(1, "commits") - kvt_stat(1, "journal_commits");
	ASSERT_EQ(0, unlink_settled(1, "ru:b", 8 * MiB / PAGE));
	ASSERT_EQ(0, make_persistent(1, "ru:d", 20 * MiB, 0600, 122));
	ASSERT_EQ(ckpts, kvt_stat(1, "commits") - kvt_stat(1, "journal_commits"));
	gen = kvt_stat(1, "generation");
	ASSERT_EQ(0, kvt_jsnap_take(dev, &snap));

	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_jsnap_put(dev, &snap));
	kvt_jsnap_free(&snap);
	ASSERT_EQ(0, damage_records_on(dev, "ru:b", 8 * MiB, 0));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_LE(gen, kvt_stat(1, "generation"));
	EXPECT_EQ(-3, check_name(1, "ru:b", 8 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "ru:c", 8 * MiB, 121));
	EXPECT_EQ(-1, check_name(1, "ru:d", 20 * MiB, 122));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "ru:c", 8 * MiB, 121));
	EXPECT_EQ(-1, check_name(1, "ru:d", 20 * MiB, 122));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, REUSE_IMG);
}

/*
 * A closed persistent region's page map (its slots and CRCs) stays on the
 * namespace: none is in memory after an attach; opening a region reads
 * its map back from the checkpoint and every byte verifies; once closed
 * and out of the pool it is dropped again. A region written since the
 * checkpoint keeps its map until the next checkpoint takes it. Damaged
 * records fail the open with EUCLEAN (never zeros for the pages they
 * name) and the region, which can never be read again, is unlinked; the
 * others are whole, and checkpoints go on. On version 3 the damage is a
 * CRC in the CRC section (map:0) and an extent record (map:1); version 4
 * damages map:0's CRC run instead, which a checkpoint does not read (it
 * copies no CRC of an unchanged region): map:0's open finds it.
 */
TEST_F_TIMEOUT(persist, closed_regions_leave_maps_on_namespace, 300)
{
	const size_t len = 4 * MiB;
	/* Bytes of a region's CRCs: 256-byte chunks of 62 pages (crcs.c). */
	const long long crcs = (len / PAGE + 61) / 62 * 256;
	long long ckpts0, closed, nodes, used;
	int kfd;
	char name[32];
	int i, fd, ret, pinned = 0;

	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "map:%d", i);
		ASSERT_EQ(0, make_persistent(0, name, len, 0600, 70 + i));
	}
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, kvt_meta_col(0, 3));
	ASSERT_EQ(0, kvt_stat(0, "page_map_loads"));
	closed = kvt_meta_col(0, 1);	/* the regions, without inodes */

	/*
	 * Opened: read back, its runs of 64 pages as one entry each
	 * (kmod/mapext.c), not a 576-byte leaf each (16 here); closed and
	 * dropped from the pool: gone again.
	 */
	nodes = kvt_xa_nodes_settled();
	fd = open_name(0, "map:1", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, kvt_stat(0, "page_map_loads"));
	ASSERT_EQ(crcs, kvt_meta_col(0, 3));
	ASSERT_GT(kvt_meta_col(0, 1), closed);	/* and its inode */
	TH_LOG("map loaded: %lld xarray nodes more, page maps %lld bytes",
	       kvt_xa_nodes_settled() - nodes, kvt_meta_col(0, 2));
	if (nodes >= 0)
		ASSERT_LT(kvt_xa_nodes_settled() - nodes, 8);
	ASSERT_LT(kvt_meta_col(0, 2), 4 * 576);
	close(fd);
	ASSERT_EQ(-1, check_and_drop("map:1", len, 71));
	ASSERT_EQ(0, wait_crcs(0, 0));
	ASSERT_EQ(closed, kvt_meta_col(0, 1));
	ASSERT_GE(kvt_stat(0, "page_map_unloads"), 1);
	ASSERT_EQ(-1, check_and_drop("map:1", len, 71));
	ASSERT_EQ(0, wait_crcs(0, 0));

	/* Written since the checkpoint: its map stays until the next one. */
	fd = open_name(0, "map:2", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 8 * PAGE, 4 * PAGE, 80));
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED));
	close(fd);
	sleep(1);
	ASSERT_EQ(crcs, kvt_meta_col(0, 3));
	/* Flag changes are one-block transactions: until one is a checkpoint. */
	ckpts0 = kvt_stat(0, "commits") - kvt_stat(0, "journal_commits");
	for (i = 0; i < 70000; i++) {
		if (kvt_stat(0, "commits") - kvt_stat(0, "journal_commits") > ckpts0)
			break;
		ASSERT_EQ(0, toggle_pinned(self->fd, "map:0", &pinned));
	}
	TH_LOG("a checkpoint after %d transactions", i);
	ASSERT_EQ(0, wait_crcs(0, 0));
	ASSERT_EQ(0, check_map2(len));

	/*
	 * Damage map:0's CRCs on the media under the attached tier. Version
	 * 3: the checkpoint that would copy them fails, map:0 is unlinked,
	 * and the next checkpoint goes on without it. Version 4: checkpoints
	 * go on (none reads them), and map:0's open finds the damage.
	 */
	ASSERT_EQ(0, reload(&self->fd));
	used = kvt_tier_num(0, "used");
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	ASSERT_EQ(0, damage_records("map:0", len, 0));
	ckpts0 = kvt_stat(0, "commits") - kvt_stat(0, "journal_commits");
	ret = 0;
	for (i = 0; i < 70000 && !ret; i++) {
		if (kvt_tier_num(0, "format_version") >= 4 &&
		    kvt_stat(0, "commits") - kvt_stat(0, "journal_commits") > ckpts0)
			break;
		ret = toggle_pinned(self->fd, "map:2", &pinned);
	}
	TH_LOG("the commit after %d transactions: %d", i, ret);
	if (kvt_tier_num(0, "format_version") >= 4) {
		ASSERT_EQ(0, ret);
		ASSERT_EQ(-EUCLEAN, open_name(0, "map:0", 0, 0, 0));
	} else {
		ASSERT_EQ(-EUCLEAN, ret);
	}
	ASSERT_EQ(0, wait_gone("map:0"));
	ASSERT_EQ(1, kvt_kmsg_scan(kfd, "page records of region 'map:0' in the checkpoint are damaged"));
	ASSERT_EQ(0, set_flags(self->fd, "map:2", 0, KVTIER_REGION_PINNED, 0));
	/*
	 * Only its CRCs were: its extent records said which slots to free
	 * ("used" is in bytes), with version 4's CRC run (a block: 4 MiB of
	 * pages have 4 KiB of CRCs).
	 */
	if (kvt_tier_num(0, "format_version") >= 4)
		used -= PAGE;
	for (i = 0; i < 50 && kvt_tier_num(0, "used") != used - (long long)len; i++)
		usleep(100 * 1000);
	ASSERT_EQ(used - (long long)len, kvt_tier_num(0, "used"));
	ASSERT_EQ(-1, check_and_drop("map:1", len, 71));

	/* Damaged records of map:1: its open fails, and it goes. */
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-ENOENT, open_name(0, "map:0", 0, 0, 0));
	ASSERT_EQ(0, damage_records("map:1", len, 1));
	ASSERT_EQ(-EUCLEAN, open_name(0, "map:1", 0, 0, 0));
	ASSERT_EQ(0, wait_gone("map:1"));
	ASSERT_EQ(1, kvt_kmsg_scan(kfd, "page records of region 'map:1' in the checkpoint are damaged"));
	close(kfd);
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-ENOENT, open_name(0, "map:1", 0, 0, 0));
	ASSERT_EQ(0, check_map2(len));
}

/*
 * A checkpoint records an open region's pages from its xarray, where runs
 * of 64 pages on the namespace are one entry each (kmod/mapext.c), made
 * and split all the time by evictions and reads; the walk lets the lock go
 * now and then, and may come back inside a group that became an extent
 * meanwhile. Format version 1, where every commit is a checkpoint of
 * every page: a 48 MiB region read and evicted 256 KiB at a time by a
 * child while the parent rewrites a page and commits, 200 times; after
 * a reload, every page is what was written last, the first attach's
 * checkpoint whole (no EUCLEAN).
 */
TEST_F_TIMEOUT(persist, checkpoints_of_extents_being_made_and_split, 300)
{
	const size_t len = 48 * MiB, pages = len / PAGE;
	static unsigned short last[48 * MiB / PAGE];
	unsigned long long seed;
	unsigned int i, n;
	size_t pg;
	pid_t child;
	int fd, st;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "format_version", "1"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(0, make_persistent(0, "cx", len, 0600, 201));
	fd = open_name(0, "cx", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));

	child = fork();
	ASSERT_GE(child, 0);
	if (!child) {
		static unsigned char buf[256 * KiB];
		unsigned int r = 1;

		for (;;) {
			off_t off;

			r = r * 1103515245 + 12345;
			off = (off_t)(r % (len / sizeof(buf))) * sizeof(buf);
			if (pread(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
				_exit(1);
			posix_fadvise(fd, off, sizeof(buf), POSIX_FADV_DONTNEED);
		}
	}
	for (i = 0, n = 0; i < 200; i++) {
		pg = ((size_t)i * 7919 + 13) % pages;
		last[pg] = i + 1;
		if (fill_fd(fd, pg * PAGE, PAGE, 1000 + i) || fsync(fd))
			break;
		n++;
	}
	kill(child, SIGKILL);
	ASSERT_EQ(child, waitpid(child, &st, 0));
	EXPECT_TRUE(WIFSIGNALED(st));
	ASSERT_EQ(200, n);
	TH_LOG("%lld commits, %lld map loads, %lld page maps bytes",
	       kvt_stat(0, "commits"), kvt_stat(0, "page_map_loads"),
	       kvt_meta_col(0, 2));
	close(fd);

	ASSERT_EQ(0, reload(&self->fd));
	fd = open_name(0, "cx", 0, 0, 0);
	ASSERT_GE(fd, 0);
	for (pg = 0; pg < pages; pg++) {
		seed = last[pg] ? 1000 + last[pg] - 1 : 201;
		if (check_fd(fd, pg * PAGE, PAGE, seed) != -1) {
			TH_LOG("page %zu is not pattern %llu", pg, seed);
			ASSERT_TRUE(0);
		}
	}
	close(fd);
}

/*
 * Readers open a closed region, read a page, drop its pages and close it,
 * over and over, while the unload work and checkpoints (flag changes fill
 * the journal) drop and copy the maps under them: every page read is the
 * region's own (a file that saw an unloaded map would read zeros), and
 * maps were loaded and dropped many times, checkpoints among them.
 */
TEST_F_TIMEOUT(persist, page_maps_race_open_and_unload, 300)
{
	enum { NREG = 8, NPROC = 3, RUN_MS = 8000 };
	const size_t len = MiB;
	long long loads0, unloads0, ckpts0, deadline;
	int i, status, pinned = 0, bad = 0, flags_failed = 0;
	pid_t pids[NPROC];
	char name[32];

	for (i = 0; i < NREG; i++) {
		snprintf(name, sizeof(name), "race:%d", i);
		ASSERT_EQ(0, make_persistent(0, name, len, 0600, 90 + i));
	}
	ASSERT_EQ(0, reload(&self->fd));
	loads0 = kvt_stat(0, "page_map_loads");
	unloads0 = kvt_stat(0, "page_map_unloads");
	ckpts0 = kvt_stat(0, "commits") - kvt_stat(0, "journal_commits");
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		ASSERT_GE(pids[i], 0);
		if (!pids[i]) {
			unsigned int seed = i + 1;
			int errs = 0, fd, k;
			unsigned long long pg;

			deadline = kvt_now_ms() + RUN_MS;
			while (kvt_now_ms() < deadline && errs < 5) {
				k = rand_r(&seed) % NREG;
				pg = rand_r(&seed) % (len / PAGE);
				snprintf(name, sizeof(name), "race:%d", k);
				fd = open_name(0, name, 0, 0, 0);
				if (fd < 0) {
					fprintf(stderr, "# open %s: %d\n", name, fd);
					errs++;
					continue;
				}
				if (check_fd(fd, pg * PAGE, PAGE, 90 + k) != -1) {
					fprintf(stderr, "# %s page %llu is wrong\n", name, pg);
					errs++;
				}
				posix_fadvise(fd, 0, len, POSIX_FADV_DONTNEED);
				close(fd);
			}
			_exit(errs ? 1 : 0);
		}
	}
	deadline = kvt_now_ms() + RUN_MS;
	while (kvt_now_ms() < deadline)
		flags_failed += !!toggle_pinned(self->fd, "race:0", &pinned);
	for (i = 0; i < NPROC; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	TH_LOG("page maps loaded %lld and dropped %lld times, %lld checkpoints",
	       kvt_stat(0, "page_map_loads") - loads0,
	       kvt_stat(0, "page_map_unloads") - unloads0,
	       kvt_stat(0, "commits") - kvt_stat(0, "journal_commits") - ckpts0);
	ASSERT_EQ(0, bad);
	ASSERT_EQ(0, flags_failed);
	ASSERT_GT(kvt_stat(0, "page_map_loads") - loads0, 100);
	ASSERT_GT(kvt_stat(0, "page_map_unloads") - unloads0, 100);
	ASSERT_GT(kvt_stat(0, "commits") - kvt_stat(0, "journal_commits") - ckpts0, 0);
	for (i = 0; i < NREG; i++) {
		snprintf(name, sizeof(name), "race:%d", i);
		ASSERT_EQ(-1, check_name(0, name, len, 90 + i));
	}
}

/* 256 MiB through a 256 MiB pool (the default budget), fsync, reload: every byte. */
TEST_F_TIMEOUT(persist, reload_256mib, 600)
{
	size_t len = 256 * MiB;
	struct kvtier_region_entry e;
	unsigned char *p;
	long long ev;
	int fd;

	fd = open_name(0, "big", len, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	pfill(p, len, 0, 70);
	ASSERT_EQ(0, fsync(fd));
	ev = kvt_stat(0, "evictions_clean") + kvt_stat(0, "evictions_dirty");
	TH_LOG("evictions %lld, writeback_pages %lld", ev, kvt_stat(0, "writeback_pages"));
	ASSERT_GT(ev, 0);	/* the pool is the default 256 MiB: it had to evict */
	ASSERT_EQ(0, munmap(p, len));
	close(fd);

	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, find_name(self->fd, "big", &e));
	ASSERT_EQ(len, e.size);
	ASSERT_EQ(len, e.namespace);
	fd = open_name(0, "big", len, 0, 0);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, pcheck(p, len, 0, 70));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
}

/* WILLNEED on a reloaded region reads it ahead; the bytes are intact. */
TEST_F_TIMEOUT(persist, willneed_after_reload, 300)
{
	size_t len = 16 * MiB;
	long long pages = len / PAGE, pf = 0;
	struct kvtier_region_entry e;
	unsigned char *p;
	int fd, i;

	ASSERT_EQ(0, make_persistent(0, "warm", len, 0600, 80));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(0, kvt_stat(0, "prefetch_pages"));
	fd = open_name(0, "warm", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED));
	for (i = 0; i < 300; i++) {
		pf = kvt_stat(0, "prefetch_pages");
		if (pf >= pages)
			break;
		usleep(100000);
	}
	TH_LOG("prefetch_pages %lld after %d polls", pf, i);
	ASSERT_EQ(pages, pf);
	ASSERT_EQ(0, find_name(self->fd, "warm", &e));
	ASSERT_EQ(len, e.resident);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, pcheck(p, len, 0, 80));
	ASSERT_EQ(0, kvt_stat(0, "faults_major"));
	ASSERT_EQ(pages, kvt_stat(0, "read_pages"));
	munmap(p, len);
	close(fd);
}

#define DAMAGE_IMG	"/tmp/kvt-damage.img"

/*
 * Write @meta (the namespace's metadata blocks, changed) to @dev and
 * attach it to tier 1. On failure the device must be exactly as written.
 */
static int attach_meta(const char *dev, const unsigned char *meta, size_t len,
		       int *unchanged)
{
	unsigned char *now = malloc(len);
	int ret;

	*unchanged = 0;
	if (!now || kvt_dev_write(dev, meta, len, 0)) {
		free(now);
		return -EIO;
	}
	ret = kvt_tier_write(1, "backing_dev", dev);
	if (!kvt_dev_read(dev, now, len, 0))
		*unchanged = !memcmp(now, meta, len);
	free(now);
	return ret;
}

#define UPGRADE_IMG	"/tmp/kvt-upgrade.img"

/* Tier @id's sysfs upgrade (the attached namespace's format version). */
static bool upgrade_reads(int id, const char *want)
{
	char buf[16];

	return !kvt_tier_read(id, "upgrade", buf, sizeof(buf)) && !strcmp(buf, want);
}

/*
 * sysfs upgrade turns an attached version-2 namespace into version 3 in
 * place, in use: its CRC sections in two runs of data slots (its areas
 * have no room for them), never handed out; the checkpoint of the upgrade
 * makes the page records of closed regions (and of an open one) extent
 * records, a region written in one go a few; every byte reads back, after
 * a transaction and reattaches too. Too little free space refuses it and
 * changes nothing. Then on to version 4 with 2 slots free: CRCs in runs,
 * the rest left in the CRC section until slots are free.
 */
TEST_F_TIMEOUT(persist, upgrade_v2_through_v5_in_place, 300)
{
	const size_t np = 32;
	struct kvtier_disk_super sb;
	struct kvtier_disk_ckpt *hdr;
	struct kvtier_disk_region *rec;
	unsigned long long runs;
	long long used, crcs;
	size_t fill, fill0, i;
	char dev[32];
	int lfd, fd, newest, r;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(UPGRADE_IMG, 16 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", "2"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, make_persistent(1, "v:seq", 2 * MiB, 0600, 120));
	fd = open_name(1, "v:back", np * PAGE, NEW_PERSIST, 0600);
	ASSERT_GE(fd, 0);
	for (i = np; i-- > 0;) {
		ASSERT_EQ(0, fill_fd(fd, i * PAGE, PAGE, 121));
		ASSERT_EQ(0, fsync(fd));
	}
	close(fd);
	ASSERT_EQ(0, make_persistent(1, "v:open", MiB, 0600, 122));
	/* Closed and out of memory but v:open, which stays open. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	/* Two CRC sections of 4 bytes a slot, and as many left free. */
	crcs = (le64toh(sb.nr_slots) * 4 + PAGE - 1) / PAGE;
	used = kvt_stat(1, "slots_used");
	fill = (kvt_stat(1, "slots_total") - used - 4 * crcs + 1) * PAGE;
	ASSERT_EQ(0, make_persistent(1, "v:fill", fill, 0600, 123));
	EXPECT_EQ(-ENOSPC, kvt_tier_write(1, "upgrade", "3"));
	EXPECT_TRUE(upgrade_reads(1, "2"));
	ASSERT_EQ(0, unlink_on(1, "v:fill"));
	/* Its slots are free after a commit more: the detach's. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	fd = open_name(1, "v:open", 0, 0, 0);
	ASSERT_GE(fd, 0);

	used = kvt_stat(1, "slots_used");
	ASSERT_EQ(0, kvt_tier_write(1, "upgrade", "3"));
	EXPECT_TRUE(upgrade_reads(1, "3"));
	EXPECT_EQ(used + 2 * crcs, kvt_stat(1, "slots_used"));
	EXPECT_EQ(0, kvt_tier_write(1, "upgrade", "3"));
	EXPECT_EQ(0, kvt_tier_write(1, "upgrade", "2"));
	EXPECT_TRUE(upgrade_reads(1, "3"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(3U, le32toh(sb.version));
	EXPECT_EQ(KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS |
		  KVTIER_FEATURE_INCOMPAT_CRCS_RUN, le64toh(sb.feature_incompat));
	for (i = 0; i < 2; i++) {
		EXPECT_LE(le64toh(sb.data_start), le64toh(sb.crcs_block[i]));
		EXPECT_GE(le64toh(sb.data_start) + le64toh(sb.nr_slots),
			  le64toh(sb.crcs_block[i]) + crcs);
	}
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	hdr = ckpt_raw(dev, newest, &sb);
	ASSERT_NE(NULL, hdr);
	rec = (void *)(hdr + 1);
	r = ckpt_find(hdr, "v:seq");
	ASSERT_LE(0, r);
	EXPECT_EQ(2 * MiB / PAGE, le64toh(rec[r].nr_pages));
	EXPECT_GE(4ULL, le64toh(rec[r].nr_extents));
	r = ckpt_find(hdr, "v:back");
	ASSERT_LE(0, r);
	EXPECT_EQ(np, le64toh(rec[r].nr_extents));
	free(hdr);
	EXPECT_EQ(-1, check_fd(fd, 0, MiB, 122));
	EXPECT_EQ(-1, check_name(1, "v:seq", 2 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "v:back", np * PAGE, 121));
	/* A transaction after it, and a checkpoint (the detach). */
	ASSERT_EQ(0, fill_fd(fd, 0, MiB, 124));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));

	/* Attached again: all but a few free slots, never the CRC runs'. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_TRUE(upgrade_reads(1, "3"));
	fill = (kvt_stat(1, "slots_total") - kvt_stat(1, "slots_used") - 8) * PAGE;
	ASSERT_EQ(0, make_persistent(1, "v:fill", fill, 0600, 125));
	fill0 = fill;
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "v:seq", 2 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "v:back", np * PAGE, 121));
	EXPECT_EQ(-1, check_name(1, "v:open", MiB, 124));
	EXPECT_EQ(-1, check_name(1, "v:fill", fill, 125));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));

	/*
	 * On to version 4 with 2 free slots: the upgrade's checkpoint moves
	 * the CRCs of 4 regions (a block each or more) to runs, and what
	 * finds no slot stays in the CRC section. Every byte still reads,
	 * and once slots are free the next checkpoint moves the rest.
	 */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	fill = (kvt_stat(1, "slots_total") - kvt_stat(1, "slots_used") - 2) * PAGE;
	ASSERT_EQ(0, make_persistent(1, "v:last", fill, 0600, 126));
	ASSERT_EQ(0, kvt_tier_write(1, "upgrade", "4"));
	EXPECT_TRUE(upgrade_reads(1, "4"));
	EXPECT_EQ(kvt_stat(1, "slots_total"), kvt_stat(1, "slots_used"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(4U, le32toh(sb.version));
	EXPECT_EQ(KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS |
		  KVTIER_FEATURE_INCOMPAT_CRCS_RUN | KVTIER_FEATURE_INCOMPAT_CRC_RUNS,
		  le64toh(sb.feature_incompat));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	hdr = ckpt_raw(dev, newest, &sb);
	ASSERT_NE(NULL, hdr);
	EXPECT_LT(0ULL, ckpt_crcs_tail(hdr, &runs));
	EXPECT_LE(1ULL, runs);
	EXPECT_EQ(runs, le64toh(hdr->nr_crc_runs));
	free(hdr);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_TRUE(upgrade_reads(1, "4"));
	EXPECT_EQ(-1, check_name(1, "v:seq", 2 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "v:back", np * PAGE, 121));
	EXPECT_EQ(-1, check_name(1, "v:open", MiB, 124));
	EXPECT_EQ(-1, check_name(1, "v:fill", fill0, 125));
	EXPECT_EQ(-1, check_name(1, "v:last", fill, 126));
	ASSERT_EQ(0, unlink_on(1, "v:last"));
	/* The detach's checkpoint frees its slots; the next one has them. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	hdr = ckpt_raw(dev, newest, &sb);
	ASSERT_NE(NULL, hdr);
	EXPECT_EQ(0ULL, ckpt_crcs_tail(hdr, &runs));
	free(hdr);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "v:seq", 2 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "v:fill", fill0, 125));

	/* To version 5: one checkpoint; the sizes read as they were. */
	ASSERT_EQ(0, kvt_tier_write(1, "upgrade", "5"));
	EXPECT_TRUE(upgrade_reads(1, "5"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(5U, le32toh(sb.version));
	EXPECT_EQ(KVTIER_FEATURE_INCOMPAT_JOURNAL | KVTIER_FEATURE_INCOMPAT_EXTENTS |
		  KVTIER_FEATURE_INCOMPAT_CRCS_RUN | KVTIER_FEATURE_INCOMPAT_CRC_RUNS |
		  KVTIER_FEATURE_INCOMPAT_FILE_SIZES, le64toh(sb.feature_incompat));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_TRUE(upgrade_reads(1, "5"));
	EXPECT_EQ(-1, check_name(1, "v:seq", 2 * MiB, 120));
	EXPECT_EQ(-1, check_name(1, "v:back", np * PAGE, 121));
	EXPECT_EQ(-1, check_name(1, "v:fill", fill0, 125));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, UPGRADE_IMG);
}

#define ADJ_IMG		"/tmp/kvt-adjacent.img"

/*
 * Version 4: a region's CRC run records may name slots that follow each
 * other (its runs kept by a checkpoint, and the one that moved the rest
 * of its CRCs out of the CRC section into the next slot), and attach
 * takes them one for one, as the records count them. On a full 16 MiB
 * namespace with one free slot before region b's, the first checkpoint
 * gives a:big's CRCs that slot and leaves the rest in the section; b
 * unlinked, the next checkpoint puts the rest in b's old slot. Every
 * byte of a:big reads back after an attach, and again after one more.
 */
TEST_F_TIMEOUT(persist, crc_runs_side_by_side_load_one_for_one, 300)
{
	const size_t big = 8 * MiB;
	const struct kvtier_disk_extent *e;
	struct kvtier_disk_super sb;
	struct kvtier_disk_ckpt *hdr;
	struct kvtier_disk_region *rec;
	long long used;
	size_t fill;
	char dev[32];
	int lfd, newest, r;

	lfd = loop_tier1(_metadata, ADJ_IMG, "4", NULL, dev, sizeof(dev));
	ASSERT_EQ(0, make_persistent(1, "a:big", big, 0600, 130));
	ASSERT_EQ(0, make_persistent(1, "a:p", PAGE, 0600, 131));
	ASSERT_EQ(0, make_persistent(1, "a:b", PAGE, 0600, 132));
	fill = (kvt_stat(1, "slots_total") - kvt_stat(1, "slots_used")) * PAGE;
	ASSERT_EQ(0, make_persistent(1, "a:fill", fill, 0600, 133));
	ASSERT_EQ(kvt_stat(1, "slots_total"), kvt_stat(1, "slots_used"));
	/* One free slot, a:p's, just before a:b's: a commit frees it. */
	used = kvt_stat(1, "slots_used");
	ASSERT_EQ(0, unlink_on(1, "a:p"));
	ASSERT_EQ(used - 1, wait_stat(1, "slots_used", used - 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	hdr = ckpt_raw(dev, newest, &sb);
	ASSERT_NE(NULL, hdr);
	rec = (void *)(hdr + 1);
	r = ckpt_find(hdr, "a:big");
	ASSERT_LE(0, r);
	/* 2048 pages: two blocks of CRCs, one in the run, one in the section. */
	ASSERT_EQ(1U, le32toh(rec[r].nr_crc_runs));
	free(hdr);

	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	used = kvt_stat(1, "slots_used");
	ASSERT_EQ(0, unlink_on(1, "a:b"));
	ASSERT_EQ(used - 1, wait_stat(1, "slots_used", used - 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	hdr = ckpt_raw(dev, newest, &sb);
	ASSERT_NE(NULL, hdr);
	rec = (void *)(hdr + 1);
	r = ckpt_find(hdr, "a:big");
	ASSERT_LE(0, r);
	/* Its records: its extents, then the two runs, slot after slot. */
	e = (const void *)((const char *)hdr + sizeof(*hdr) +
			   le64toh(hdr->nr_regions) * sizeof(*rec));
	for (newest = 0; newest < r; newest++)
		e += le64toh(rec[newest].nr_extents) + le32toh(rec[newest].nr_crc_runs);
	e += le64toh(rec[r].nr_extents);
	ASSERT_EQ(2U, le32toh(rec[r].nr_crc_runs));
	EXPECT_EQ(le64toh(e[0].slot) + 1, le64toh(e[1].slot));
	EXPECT_EQ(1U, le32toh(e[1].index));
	free(hdr);

	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "a:big", big, 130));
	EXPECT_EQ(-1, check_name(1, "a:fill", fill, 133));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "a:big", big, 130));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	loop_detach(lfd, ADJ_IMG);
}

/*
 * Version 4: a checkpoint whose superblock cannot be written (its two
 * blocks fail, nothing else) has written fc:a's new CRC runs to free
 * slots by then: they are no region's. The detach reports EIO; once the
 * blocks work again the attach has the older checkpoint, its runs whole,
 * and the journal after it: every byte as the last fsync left it.
 */
TEST_F_TIMEOUT(persist, failed_checkpoint_leaves_older_runs_whole, 300)
{
	const char *why = kvt_dm_missing("error");
	long long crcs;
	char dev[32];
	int lfd, fd, i;

	if (why)
		SKIP(return, "%s", why);
	lfd = loop_tier1(_metadata, CE_IMG, "4", CE_DM, dev, sizeof(dev));
	ASSERT_EQ(0, make_persistent(1, "fc:a", 2 * MiB, 0600, 150));
	ASSERT_EQ(0, make_persistent(1, "fc:b", MiB, 0600, 151));
	/* The detach's checkpoint gives both their runs. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "/dev/mapper/" CE_DM));
	fd = open_name(1, "fc:a", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 0, MiB, 152));
	ASSERT_EQ(0, fsync(fd));
	close(fd);

	crcs = kvt_stat(1, "checkpoint_crc_bytes");
	ASSERT_EQ(0, error_blocks(CE_DM, dev, 0, 2));
	ASSERT_EQ(-EIO, kvt_tier_write(1, "backing_dev", "none"));
	/* fc:a changed: its 512 pages' CRCs went to new runs, fc:b's stayed. */
	EXPECT_EQ(512 * 4, kvt_stat(1, "checkpoint_crc_bytes") - crcs);

	/* Then once more from the checkpoint the clean detach writes. */
	ASSERT_EQ(0, kvt_dm_table(CE_DM, dev, "linear %s 0", dev));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "/dev/mapper/" CE_DM));
		fd = open_name(1, "fc:a", 0, 0, 0);
		ASSERT_GE(fd, 0);
		EXPECT_EQ(-1, check_fd(fd, 0, MiB, 152));
		EXPECT_EQ(-1, check_fd(fd, MiB, MiB, 150));
		close(fd);
		EXPECT_EQ(-1, check_name(1, "fc:b", MiB, 151));
		ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	}
	ASSERT_EQ(0, kvt_dm_remove(CE_DM));
	loop_detach(lfd, CE_IMG);
}

/*
 * An upgrade to version 3 whose commit fails (the superblocks cannot be
 * written; the log names the block): EIO, the namespace stays version 2
 * in memory and on the media, the detach that follows fails its commit
 * too but lets go of everything (the runs taken for the CRC sections
 * included), and once the device works the namespace attaches as version
 * 2 with its bytes and upgrades.
 */
TEST_F_TIMEOUT(persist, upgrade_v2_to_v3_failed_commit, 300)
{
	const char *dm = "/dev/mapper/" EX_DM;
	const char *why = kvt_dm_missing("error");
	struct kvtier_disk_super sb;
	char dev[32], msg[64];
	int lfd, newest, kfd;

	if (why)
		SKIP(return, "%s", why);
	lfd = loop_tier1(_metadata, UPGRADE_IMG, "2", EX_DM, dev, sizeof(dev));
	ASSERT_EQ(0, make_persistent(1, "f:a", MiB, 0600, 130));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));

	/* The upgrade's superblock goes to the copy the newest is not. */
	ASSERT_EQ(0, kvt_super_read(dm, &sb, &newest));
	snprintf(msg, sizeof(msg), "metadata write error -5 at block %d", !newest);
	kfd = kvt_kmsg_end();
	ASSERT_LE(0, kfd);
	ASSERT_EQ(0, error_blocks(EX_DM, dev, 0, 2));
	EXPECT_EQ(-EIO, kvt_tier_write(1, "upgrade", "3"));
	EXPECT_EQ(1, kvt_kmsg_scan(kfd, msg));
	close(kfd);
	EXPECT_TRUE(upgrade_reads(1, "2"));
	EXPECT_EQ(-1, check_name(1, "f:a", MiB, 130));
	EXPECT_EQ(-EIO, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_TRUE(tier_state_is(1, "detached"));

	ASSERT_EQ(0, kvt_dm_table(EX_DM, dev, "linear %s 0", dev));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	EXPECT_TRUE(upgrade_reads(1, "2"));
	EXPECT_EQ(-1, check_name(1, "f:a", MiB, 130));
	ASSERT_EQ(0, kvt_tier_write(1, "upgrade", "3"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dm));
	EXPECT_TRUE(upgrade_reads(1, "3"));
	EXPECT_EQ(-1, check_name(1, "f:a", MiB, 130));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_dm_remove(EX_DM));
	loop_detach(lfd, UPGRADE_IMG);
}

/*
 * sysfs upgrade turns an attached version-1 namespace into version 2 in
 * place: a journal in a free run of its data slots, its regions kept,
 * commits then transactions; every refusal (no run long enough, a bad
 * version, read-only, detached) changes nothing.
 */
TEST_F_TIMEOUT(persist, upgrade_v1_in_place, 300)
{
	struct kvtier_disk_super sb;
	unsigned long long jb, k;
	long long largest, commits, pos;
	unsigned char *run;
	size_t fill;
	char dev[32];
	int lfd, newest;

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(UPGRADE_IMG, 16 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_TRUE(upgrade_reads(1, "none"));
	EXPECT_EQ(-ENODEV, kvt_tier_write(1, "upgrade", "2"));
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", "1"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_TRUE(upgrade_reads(1, "1"));
	ASSERT_EQ(0, make_persistent(1, "u:a", MiB, 0600, 94));

	/* The journal needs a run of 256 slots: leave none that long. */
	largest = kvt_stat(1, "largest_free_slots");
	ASSERT_LT(512, largest);
	ASSERT_EQ(0, make_persistent(1, "u:fill", (largest - 200) * PAGE, 0600, 95));
	ASSERT_GT(256, kvt_stat(1, "largest_free_slots"));
	EXPECT_EQ(-ENOSPC, kvt_tier_write(1, "upgrade", "2"));
	EXPECT_TRUE(upgrade_reads(1, "1"));
	EXPECT_EQ(0, kvt_stat(1, "journal_blocks"));
	ASSERT_EQ(0, unlink_on(1, "u:fill"));
	EXPECT_EQ(-EINVAL, kvt_tier_write(1, "upgrade", "1"));
	EXPECT_EQ(-EINVAL, kvt_tier_write(1, "upgrade", "6"));
	EXPECT_EQ(-EINVAL, kvt_tier_write(1, "upgrade", "two"));
	EXPECT_TRUE(upgrade_reads(1, "1"));

	/* (Background commits may come and go: counts only grow.) */
	commits = kvt_stat(1, "commits");
	ASSERT_EQ(0, kvt_tier_write(1, "upgrade", "2"));
	EXPECT_TRUE(upgrade_reads(1, "2"));
	jb = kvt_stat(1, "journal_blocks");
	EXPECT_EQ(256, jb);
	EXPECT_LT(commits, kvt_stat(1, "commits"));
	/*
	 * The run held u:fill's pages: zeroed, but for transactions written
	 * since (read the run first, then how far the journal has come).
	 */
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	run = malloc(jb * PAGE);
	ASSERT_NE(NULL, run);
	ASSERT_EQ(0, kvt_dev_read(dev, run, jb * PAGE,
				  (le64toh(sb.data_start) + le64toh(sb.journal_start)) * PAGE));
	pos = kvt_stat(1, "journal_pos");
	ASSERT_GT((long long)jb, pos);
	for (k = pos * PAGE; k < jb * PAGE && !run[k]; k++)
		;
	EXPECT_EQ(jb * PAGE, k) TH_LOG("journal block %llu is not zero", k / PAGE);
	free(run);
	/* Again: nothing to do. */
	EXPECT_EQ(0, kvt_tier_write(1, "upgrade", "2"));
	EXPECT_EQ(jb, kvt_stat(1, "journal_blocks"));
	EXPECT_EQ(-1, check_name(1, "u:a", MiB, 94));
	/* A create and its fsync: transactions now. */
	commits = kvt_stat(1, "journal_commits");
	ASSERT_EQ(0, make_persistent(1, "u:b", MiB, 0600, 96));
	EXPECT_LT(commits, kvt_stat(1, "journal_commits"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(2, le32toh(sb.version));
	EXPECT_TRUE(le64toh(sb.feature_incompat) & KVTIER_FEATURE_INCOMPAT_JOURNAL);
	EXPECT_EQ(jb, le64toh(sb.journal_blocks));
	EXPECT_GE(le64toh(sb.nr_slots), le64toh(sb.journal_start) + jb);
	/* Not the last slots: older modules must refuse it. */
	EXPECT_EQ(le64toh(sb.journal_start) + jb != le64toh(sb.nr_slots),
		  !!(le64toh(sb.feature_incompat) & KVTIER_FEATURE_INCOMPAT_JOURNAL_RUN));
	TH_LOG("journal of %llu blocks at data slot %llu of %llu", jb,
	       (unsigned long long)le64toh(sb.journal_start),
	       (unsigned long long)le64toh(sb.nr_slots));
	/* Attached again: the journal's run is never handed out. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_TRUE(upgrade_reads(1, "2"));
	EXPECT_EQ(-1, check_name(1, "u:a", MiB, 94));
	EXPECT_EQ(-1, check_name(1, "u:b", MiB, 96));
	/*
	 * All but a few free slots: were the journal's free, this would
	 * write into it, and the next transactions over it.
	 */
	fill = (kvt_stat(1, "slots_total") - kvt_stat(1, "slots_used") - 8) * PAGE;
	ASSERT_EQ(0, make_persistent(1, "u:c", fill, 0600, 97));
	ASSERT_EQ(0, unlink_on(1, "u:b"));
	ASSERT_EQ(0, make_persistent(1, "u:b", MiB, 0600, 98));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "u:a", MiB, 94));
	EXPECT_EQ(-1, check_name(1, "u:b", MiB, 98));
	EXPECT_EQ(-1, check_name(1, "u:c", fill, 97));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* A read-only attach of a version-1 namespace is not upgraded. */
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", "1"));
	ASSERT_EQ(0, kvt_tier_write(1, "format", dev));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "read_only", "1"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-EROFS, kvt_tier_write(1, "upgrade", "2"));
	EXPECT_TRUE(upgrade_reads(1, "1"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "read_only", "0"));
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", "2"));
	loop_detach(lfd, UPGRADE_IMG);
}

/*
 * A damaged, newer or incompatible namespace is refused without writing
 * to it; one damaged superblock copy, or the checkpoint the newest copy
 * names, is survived from the other copy.
 */
TEST_F_TIMEOUT(persist, refuses_damaged_or_newer, 300)
{
	struct kvtier_region_entry entry;
	unsigned char *orig, *img;
	struct kvtier_disk_super *s0, *s1, sb;
	unsigned long long area[2];
	size_t meta_len;
	char dev[32];
	int lfd, f1, newest, unchanged, ret;

	/* Version 1: every commit below is a checkpoint in the other area. */
	lfd = loop_tier1(_metadata, DAMAGE_IMG, "1", NULL, dev, sizeof(dev));
	ASSERT_EQ(0, make_persistent(1, "d:r", MiB, 0600, 90));
	/* Two more commits: both copies name a checkpoint with the bytes. */
	f1 = tier_open(1);
	ASSERT_EQ(0, set_flags(f1, "d:r", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, set_flags(f1, "d:r", 0, KVTIER_REGION_PINNED, 0));
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	meta_len = le64toh(sb.data_start) * PAGE;
	area[0] = le64toh(sb.meta_start) * PAGE;
	area[1] = area[0] + le64toh(sb.meta_blocks) * PAGE;
	orig = malloc(meta_len);
	img = malloc(meta_len);
	ASSERT_NE(NULL, orig);
	ASSERT_NE(NULL, img);
	ASSERT_EQ(0, kvt_dev_read(dev, orig, meta_len, 0));
	ASSERT_TRUE(kvt_super_valid(orig));
	ASSERT_TRUE(kvt_super_valid(orig + PAGE));
	s0 = (void *)img;
	s1 = (void *)(img + PAGE);

	/* Both copies: kvtier magic, wrong crc. */
	memcpy(img, orig, meta_len);
	s0->uuid[3] ^= 0x40;
	s1->uuid[3] ^= 0x40;
	ASSERT_EQ(-EUCLEAN, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(unchanged);
	ASSERT_TRUE(tier_state_is(1, "detached"));

	/*
	 * One copy, then the other: attached from the valid one, "degraded"
	 * until commits have rewritten the damaged copy.
	 */
	memcpy(img, orig, meta_len);
	img[newest * PAGE + 30] ^= 0x01;	/* uuid */
	ASSERT_EQ(0, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(tier_state_is(1, "degraded"));
	ASSERT_EQ(-1, check_name(1, "d:r", MiB, 90));
	f1 = tier_open(1);
	ASSERT_EQ(0, set_flags(f1, "d:r", KVTIER_REGION_PINNED, 0, 0));
	ASSERT_EQ(0, set_flags(f1, "d:r", 0, KVTIER_REGION_PINNED, 0));
	close(f1);
	ASSERT_TRUE(tier_state_is(1, "attached"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	memcpy(img, orig, meta_len);
	img[(1 - newest) * PAGE + 30] ^= 0x01;
	ASSERT_EQ(0, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_EQ(-1, check_name(1, "d:r", MiB, 90));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/*
	 * The checkpoint the newest copy names: the older generation is used
	 * (its region is still pinned: the newest commit unpinned it). Both:
	 * refused.
	 */
	memcpy(img, orig, meta_len);
	img[area[newest] + 200] ^= 0x10;
	ASSERT_EQ(0, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(tier_state_is(1, "degraded"));
	ASSERT_EQ(-1, check_name(1, "d:r", MiB, 90));
	f1 = tier_open(1);
	ASSERT_GE(f1, 0);
	ASSERT_EQ(0, find_name(f1, "d:r", &entry));
	ASSERT_TRUE(entry.flags & KVTIER_REGION_PINNED);
	close(f1);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	memcpy(img, orig, meta_len);
	img[area[newest] + 200] ^= 0x10;
	img[area[1 - newest] + 200] ^= 0x10;
	ASSERT_EQ(-EUCLEAN, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(unchanged);

	/* A newer version, valid crc, in both copies. */
	memcpy(img, orig, meta_len);
	s0->version = htole32(KVTIER_FORMAT_VERSION + 1);
	s1->version = htole32(KVTIER_FORMAT_VERSION + 1);
	kvt_super_seal(s0);
	kvt_super_seal(s1);
	ASSERT_EQ(-EOPNOTSUPP, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(unchanged);

	/* An incompat feature this module does not know. */
	memcpy(img, orig, meta_len);
	s0->feature_incompat = htole64(1ULL << 63);
	s1->feature_incompat = htole64(1ULL << 63);
	kvt_super_seal(s0);
	kvt_super_seal(s1);
	ASSERT_EQ(-EOPNOTSUPP, attach_meta(dev, img, meta_len, &unchanged));
	ASSERT_TRUE(unchanged);
	ASSERT_TRUE(tier_state_is(1, "detached"));

	/* The original metadata: none of the refusals lost anything. */
	ret = attach_meta(dev, orig, meta_len, &unchanged);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(-1, check_name(1, "d:r", MiB, 90));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* format destroys it all and attaches. */
	ASSERT_EQ(0, kvt_tier_write(1, "format", dev));
	ASSERT_TRUE(tier_state_is(1, "attached"));
	f1 = tier_open(1);
	ASSERT_EQ(0, list_names(f1, NULL, 0));
	ASSERT_EQ(-ENOENT, kvt_bind_name(f1, "d:r", 0, 0, 0));
	close(f1);
	ASSERT_EQ(0, make_persistent(1, "after", MiB, 0600, 91));
	ASSERT_EQ(-1, check_name(1, "after", MiB, 91));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	free(orig);
	free(img);
	loop_detach(lfd, DAMAGE_IMG);
}

/*
 * A device with another signature (an MBR, ext4) is refused with
 * EMEDIUMTYPE and left as it was; format takes it over.
 */
TEST_F_TIMEOUT(persist, refuses_foreign_signature, 300)
{
	const char *img = "/tmp/kvt-mbr.img", *ns1 = kvt_ns("KVTIER_NS1");
	size_t span = 4 * MiB;
	unsigned char *before, *after;
	struct kvtier_disk_super sb;
	char dev[32], cmd[256];
	int lfd, f1;

	before = calloc(1, span);
	after = malloc(span);
	ASSERT_NE(NULL, before);
	ASSERT_NE(NULL, after);

	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(img, 8 * MiB, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	before[510] = 0x55;
	before[511] = 0xaa;
	ASSERT_EQ(0, kvt_dev_write(dev, before, PAGE, 0));
	ASSERT_EQ(-EMEDIUMTYPE, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_TRUE(tier_state_is(1, "detached"));
	ASSERT_EQ(0, kvt_dev_read(dev, after, span, 0));
	ASSERT_EQ(0, memcmp(before, after, span));
	ASSERT_EQ(0, kvt_tier_write(1, "format", dev));
	ASSERT_TRUE(tier_state_is(1, "attached"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, NULL));
	ASSERT_EQ(0, make_persistent(1, "over-mbr", MiB, 0600, 95));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(-1, check_name(1, "over-mbr", MiB, 95));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	loop_detach(lfd, img);

	if (!ns1)
		SKIP(return, "no second namespace in KVTIER_NS1 (ext4 part)");
	if (system("command -v mkfs.ext4 >/dev/null"))
		SKIP(return, "mkfs.ext4 not installed (ext4 part)");
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F %s >/dev/null 2>&1", ns1);
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, kvt_dev_read(ns1, before, span, 0));
	ASSERT_EQ(-EMEDIUMTYPE, kvt_tier_write(1, "backing_dev", ns1));
	ASSERT_TRUE(tier_state_is(1, "detached"));
	ASSERT_EQ(0, kvt_dev_read(ns1, after, span, 0));
	ASSERT_EQ(0, memcmp(before, after, span));
	ASSERT_EQ(0, kvt_tier_write(1, "format", ns1));
	f1 = tier_open(1);
	ASSERT_EQ(0, list_names(f1, NULL, 0));
	close(f1);
	ASSERT_EQ(0, make_persistent(1, "over-ext4", MiB, 0600, 96));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", ns1));
	ASSERT_EQ(-1, check_name(1, "over-ext4", MiB, 96));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	free(before);
	free(after);
}

/* format on a namespace with regions: none are left, even after a reload. */
TEST_F_TIMEOUT(persist, format_destroys_regions, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	struct kvtier_disk_super sb0, sb1;
	struct kvtier_region_entry e;

	ASSERT_EQ(0, make_persistent(0, "doomed", MiB, 0600, 97));
	ASSERT_EQ(0, kvt_super_read(ns0, &sb0, NULL));
	close(self->fd);
	self->fd = -1;
	/* Attached: format is refused (detach first). */
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "format", ns0));
	ASSERT_EQ(-1, check_name(0, "doomed", MiB, 97));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", ns0));
	ASSERT_TRUE(tier_state_is(0, "attached"));
	ASSERT_EQ(0, kvt_super_read(ns0, &sb1, NULL));
	ASSERT_NE(0, memcmp(sb0.uuid, sb1.uuid, sizeof(sb0.uuid)));
	self->fd = tier_open(0);
	ASSERT_EQ(0, list_names(self->fd, NULL, 0));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-ENOENT, find_name(self->fd, "doomed", &e));
	ASSERT_EQ(0, make_persistent(0, "doomed", MiB, 0600, 98));
	ASSERT_EQ(0, reload(&self->fd));
	ASSERT_EQ(-1, check_name(0, "doomed", MiB, 98));
}

/* @len bytes of xorshift64 output from @seed: no structure a CRC could share. */
static void rfill(unsigned char *p, size_t len, unsigned long long seed)
{
	unsigned long long x = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = x >> 56;
	}
}

/* A new persistent region @name of bytes @data, synced and closed. 0 or -errno. */
static int put_bytes(const char *name, const unsigned char *data, size_t len)
{
	int fd = open_name(0, name, len, NEW_PERSIST, 0600), ret = 0;

	if (fd < 0)
		return fd;
	if (pwrite(fd, data, len, 0) != (ssize_t)len || fsync(fd))
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

/* 0 if region @name reads back as @want (pread, CRCs checked), else -1 or -errno. */
static int get_bytes(const char *name, const unsigned char *want, size_t len)
{
	unsigned char *got = malloc(len);
	int fd = open_name(0, name, 0, 0, 0), ret = -1;

	if (fd >= 0 && got && pread(fd, got, len, 0) == (ssize_t)len)
		ret = memcmp(got, want, len) ? -1 : 0;
	else if (fd < 0)
		ret = fd;
	if (fd >= 0)
		close(fd);
	free(got);
	return ret;
}

/* The crc32c= the loaded module reports. */
static int crc_in_use(char *buf, size_t len)
{
	return kvt_read("/sys/module/kvtier/parameters/crc32c", buf, len);
}

/*
 * Every CRC on the namespace (page records, superblock, checkpoint) has
 * one value whatever computes it (kmod/crc.c): regions written under the
 * crypto API's fastest crc32c are read back, CRCs checked, under the
 * kernel library's (crc32c=lib, what modules before crc.c used) and the
 * other way round; the page CRCs recorded by both are a user-space
 * CRC32C's; crc32c-generic reads both. A crc32c= that names no usable
 * crc32c driver fails the load.
 */
TEST_F_TIMEOUT(persist, crc_implementations_agree, 300)
{
	const char *ns0 = kvt_ns("KVTIER_NS0");
	const char *names[2] = { "crc:best", "crc:lib" };
	const size_t len = 4 * MiB + 3 * PAGE;
	const struct kvtier_disk_page *pages;
	const struct kvtier_disk_region *r;
	unsigned char *data[2];
	char best[64], buf[256];
	unsigned long long i;
	struct ckpt c;
	int k, ret;

	ASSERT_EQ(0, crc_in_use(best, sizeof(best)));
	TH_LOG("crc32c by %s", best);
	if (!strcmp(best, "lib"))
		SKIP(return, "the crypto API has no crc32c here: nothing to compare the library with");
	for (k = 0; k < 2; k++) {
		data[k] = malloc(len);
		ASSERT_NE(NULL, data[k]);
		rfill(data[k], len, 100 + k);
	}

	/* Written under the best driver, read under the library. */
	ASSERT_EQ(0, put_bytes(names[0], data[0], len));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());
	ASSERT_EQ(0, kvt_load("num_tiers=2 crc32c=lib"));
	ASSERT_EQ(0, crc_in_use(buf, sizeof(buf)));
	ASSERT_STREQ("lib", buf);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns0));
	ASSERT_EQ(0, get_bytes(names[0], data[0], len));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	ASSERT_EQ(0, put_bytes(names[1], data[1], len));
	ASSERT_EQ(0, kvt_unload());

	/* Both implementations recorded the format's CRC of every page. */
	ASSERT_EQ(0, ckpt_read(ns0, &c));
	for (k = 0; k < 2; k++) {
		r = ckpt_region(&c, names[k], &pages);
		ASSERT_NE(NULL, r);
		ASSERT_EQ(len / PAGE, le64toh(r->nr_pages));
		for (i = 0; i < len / PAGE; i++) {
			unsigned long long idx = le32toh(pages[i].index);

			ASSERT_LT(idx, len / PAGE);
			ASSERT_EQ(kvt_crc32c(~0U, data[k] + idx * PAGE, PAGE),
				  le32toh(pages[i].crc));
		}
	}
	free(c.buf);

	/* Written under the library, read under the best driver again. */
	ASSERT_EQ(0, load_attach(ns0));
	ASSERT_EQ(0, crc_in_use(buf, sizeof(buf)));
	ASSERT_STREQ(best, buf);
	for (k = 0; k < 2; k++)
		ASSERT_EQ(0, get_bytes(names[k], data[k], len));
	ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
	ASSERT_EQ(0, kvt_unload());

	/* The generic crypto driver, where there is one, reads both. */
	ret = kvt_load("num_tiers=2 crc32c=crc32c-generic");
	if (ret == -ENOENT) {
		TH_LOG("no crc32c-generic driver here: that step skipped");
	} else {
		ASSERT_EQ(0, ret);
		ASSERT_EQ(0, crc_in_use(buf, sizeof(buf)));
		ASSERT_STREQ("crc32c-generic", buf);
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns0));
		for (k = 0; k < 2; k++)
			ASSERT_EQ(0, get_bytes(names[k], data[k], len));
		ASSERT_EQ(0, kvt_stat(0, "checksum_errors"));
		ASSERT_EQ(0, kvt_unload());
	}

	/* Names of no usable crc32c driver: the load fails, nothing is left. */
	ASSERT_EQ(-ENOENT, kvt_load("crc32c=no-such-crc"));
	ASSERT_FALSE(kvt_loaded());
	ret = kvt_load("crc32c=sha256-generic");	/* a hash, not a crc32c */
	ASSERT_TRUE(ret == -EINVAL || ret == -ENOENT);
	ASSERT_FALSE(kvt_loaded());
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "crc32c=", 7);
	buf[200] = '\0';
	ASSERT_EQ(-EINVAL, kvt_load(buf));
	ASSERT_FALSE(kvt_loaded());

	ASSERT_EQ(0, load_attach(ns0));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
	for (k = 0; k < 2; k++)
		free(data[k]);
}

/*
 * Format version 2: the metadata journal, crashed with kvt_jsnap_take() and
 * kvt_jsnap_put() (discard off, so the slots freed later keep their bytes).
 */
#define JR_IMG		"/tmp/kvt-journal.img"
#define JR_SIZE		(64 * MiB)

static int is_pinned(int id, const char *name)
{
	struct kvtier_region_entry e;
	int fd = tier_open(id), ret;

	if (fd < 0)
		return -errno;
	ret = find_name(fd, name, &e);
	close(fd);
	return ret ? ret : !!(e.flags & KVTIER_REGION_PINNED);
}

/* Attach a loop device of JR_SIZE to tier 1, formatted as version 2. */
static int journal_attach(char *dev, size_t len, int *lfd)
{
	int ret;

	if (system("modprobe -q loop"))
		return -ENODEV;
	*lfd = kvt_loop_attach(JR_IMG, JR_SIZE, dev, len);
	if (*lfd < 0)
		return *lfd;
	ret = kvt_tier_write(1, "format_version", "2");
	if (!ret)
		ret = kvt_tier_write(1, "discard", "0");
	return ret ? ret : kvt_tier_write(1, "format", dev);
}

/*
 * A version-2 namespace: its superblock says so; create, fsync, setflags
 * and unlink each commit one transaction; a crash keeps exactly what the
 * last transaction on the media says, and a torn last transaction is
 * ignored (the state before it).
 */
TEST_F_TIMEOUT(persist, journal_replays_to_the_last_transaction, 300)
{
	unsigned long long nr_slots, jb, gen;
	struct kvtier_disk_txn *last;
	long long commits, jcommits;
	struct kvt_jsnap snap = {};
	char dev[32];
	int lfd;

	ASSERT_EQ(0, journal_attach(dev, sizeof(dev), &lfd));
	ASSERT_TRUE(tier_state_is(1, "attached"));
	ASSERT_EQ(0, kvt_super_read(dev, &snap.sb, NULL));
	EXPECT_EQ(2U, le32toh(snap.sb.version));
	EXPECT_EQ(KVTIER_FEATURE_INCOMPAT_JOURNAL, le64toh(snap.sb.feature_incompat));
	nr_slots = le64toh(snap.sb.nr_slots);
	jb = le64toh(snap.sb.journal_blocks);
	EXPECT_EQ(nr_slots / 256 < 256 ? 256 : nr_slots / 256, jb);
	EXPECT_EQ(nr_slots, le64toh(snap.sb.journal_start) + jb);
	EXPECT_EQ(0ULL, le64toh(snap.sb.journal_head));

	commits = kvt_stat(1, "commits");
	jcommits = kvt_stat(1, "journal_commits");
	ASSERT_GE(jcommits, 0);
	ASSERT_EQ(0, make_persistent(1, "j:a", MiB, 0600, SEED(1)));
	ASSERT_EQ(0, make_persistent(1, "j:b", 2 * MiB, 0600, SEED(2)));
	ASSERT_EQ(0, make_persistent(1, "j:c", MiB + PAGE, 0640, SEED(3)));
	/* Its slots freed too, so that the pin below is the last transaction. */
	ASSERT_EQ(0, unlink_settled(1, "j:b", 2 * MiB / PAGE));
	{
		int fd = tier_open(1);

		ASSERT_GE(fd, 0);
		ASSERT_EQ(0, set_flags(fd, "j:a", KVTIER_REGION_PINNED, 0, 0));
		close(fd);
	}
	/* Every commit since the format was a transaction. */
	EXPECT_GE(kvt_stat(1, "journal_commits") - jcommits, 5);
	EXPECT_EQ(kvt_stat(1, "commits") - commits,
		  kvt_stat(1, "journal_commits") - jcommits);
	gen = kvt_stat(1, "generation");
	/* The superblock is the format's: the journal holds all of that. */
	ASSERT_EQ(0, kvt_jsnap_take(dev, &snap));
	EXPECT_EQ(1ULL, le64toh(snap.sb.generation));
	ASSERT_NE(NULL, jsnap_txn(&snap, gen));
	ASSERT_EQ(NULL, jsnap_txn(&snap, gen + 1));

	/* After the "crash": changes that must not survive it. */
	ASSERT_EQ(0, make_persistent(1, "j:d", MiB, 0600, SEED(4)));
	ASSERT_EQ(0, unlink_on(1, "j:c"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	/* Detach wrote a checkpoint: the journal is empty after it. */
	{
		struct kvtier_disk_super sb;

		ASSERT_EQ(0, kvt_super_read(dev, &sb, NULL));
		EXPECT_GT(le64toh(sb.generation), gen);
		EXPECT_GT(le64toh(sb.journal_head), 0ULL);
	}

	ASSERT_EQ(0, kvt_jsnap_put(dev, &snap));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ((long long)gen, kvt_stat(1, "generation"));
	EXPECT_EQ(-1, check_name(1, "j:a", MiB, SEED(1)));
	EXPECT_EQ(1, is_pinned(1, "j:a"));
	EXPECT_EQ(-3, check_name(1, "j:b", 2 * MiB, SEED(2)));
	EXPECT_EQ(-1, check_name(1, "j:c", MiB + PAGE, SEED(3)));
	EXPECT_EQ(-3, check_name(1, "j:d", MiB, SEED(4)));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* The last transaction torn: the state before it (not pinned). */
	last = jsnap_txn(&snap, gen);
	ASSERT_NE(NULL, last);
	((unsigned char *)last)[sizeof(*last) + 40] ^= 0x01;
	ASSERT_EQ(0, kvt_jsnap_put(dev, &snap));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ((long long)gen - 1, kvt_stat(1, "generation"));
	EXPECT_EQ(-1, check_name(1, "j:a", MiB, SEED(1)));
	EXPECT_EQ(0, is_pinned(1, "j:a"));
	EXPECT_EQ(-1, check_name(1, "j:c", MiB + PAGE, SEED(3)));
	/* The next transaction goes where the torn one was, and counts. */
	ASSERT_EQ(0, make_persistent(1, "j:e", MiB, 0600, SEED(5)));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "j:a", MiB, SEED(1)));
	EXPECT_EQ(-1, check_name(1, "j:e", MiB, SEED(5)));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* A journal block of another format (another uuid) is not replayed. */
	((unsigned char *)last)[sizeof(*last) + 40] ^= 0x01;
	last->uuid[0] ^= 0x80;
	last->crc = 0;
	last->crc = htole32(kvt_crc32c(~0U, last, le32toh(last->bytes)));
	ASSERT_EQ(0, kvt_jsnap_put(dev, &snap));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ((long long)gen - 1, kvt_stat(1, "generation"));
	EXPECT_EQ(0, is_pinned(1, "j:a"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	kvt_jsnap_free(&snap);
	loop_detach(lfd, JR_IMG);
}

/*
 * Commits fill the journal: the one that does not fit is a checkpoint,
 * which empties it (journal_head moves on), and transactions go on after
 * it. One that would not fit before the journal's end starts at its block
 * 0 instead: a crash after it replays across the skip. A name unlinked and
 * created again replays as the new region.
 */
TEST_F_TIMEOUT(persist, journal_wraps_into_checkpoints, 300)
{
	long long jb, ckpts0, gen, head, pos;
	struct kvt_jsnap snap = {};
	char dev[32];
	int lfd, fd, i, pinned = 0;

	ASSERT_EQ(0, journal_attach(dev, sizeof(dev), &lfd));
	ASSERT_EQ(0, make_persistent(1, "w:a", MiB, 0600, SEED(11)));
	ASSERT_EQ(0, make_persistent(1, "w:b", MiB, 0600, SEED(12)));
	ASSERT_EQ(0, unlink_settled(1, "w:b", MiB / PAGE));
	ASSERT_EQ(0, make_persistent(1, "w:b", 3 * MiB, 0600, SEED(13)));
	jb = kvt_stat(1, "journal_blocks");
	ASSERT_GE(jb, 256);
	ckpts0 = kvt_stat(1, "commits") - kvt_stat(1, "journal_commits");

	/* One-block transactions: a journal of them, then to its end - 4. */
	fd = tier_open(1);
	ASSERT_GE(fd, 0);
	for (i = 0; i < 3 * jb; i++) {
		if (i >= jb && kvt_stat(1, "journal_pos") % jb == jb - 4)
			break;
		ASSERT_EQ(0, toggle_pinned(fd, "w:a", &pinned));
	}
	close(fd);
	ASSERT_LT(i, 3 * jb);
	/* The one that did not fit was a checkpoint; all others transactions. */
	EXPECT_GE(kvt_stat(1, "commits") - kvt_stat(1, "journal_commits") - ckpts0, 1);
	EXPECT_LE(kvt_stat(1, "commits") - kvt_stat(1, "journal_commits") - ckpts0, 3);
	EXPECT_GT(kvt_stat(1, "journal_head"), 0);

	/* Detach checkpoints: the journal starts empty at its end - 4. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	head = kvt_stat(1, "journal_head");
	EXPECT_EQ(head, kvt_stat(1, "journal_pos"));
	EXPECT_EQ(jb - 4, head % jb);
	EXPECT_EQ(pinned, is_pinned(1, "w:a"));
	fd = tier_open(1);
	ASSERT_GE(fd, 0);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, toggle_pinned(fd, "w:a", &pinned));
	close(fd);
	pos = kvt_stat(1, "journal_pos");
	ASSERT_EQ(jb - 1, pos % jb);
	/* 600 pages rewritten: a 3-block transaction, at the next lap. */
	fd = open_name(1, "w:b", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 0, 600 * PAGE, SEED(14)));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	EXPECT_EQ(pos + 1 + 3, kvt_stat(1, "journal_pos"));
	EXPECT_EQ(head, kvt_stat(1, "journal_head"));
	gen = kvt_stat(1, "generation");
	ASSERT_EQ(0, kvt_jsnap_take(dev, &snap));
	ASSERT_NE(NULL, jsnap_txn(&snap, gen));
	EXPECT_EQ(0U, le64toh(jsnap_txn(&snap, gen)->pos) % jb);

	/* After the crash point: undone by it. */
	ASSERT_EQ(0, unlink_on(1, "w:a"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_jsnap_put(dev, &snap));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(gen, kvt_stat(1, "generation"));
	EXPECT_EQ(pinned, is_pinned(1, "w:a"));
	EXPECT_EQ(-1, check_name(1, "w:a", MiB, SEED(11)));
	EXPECT_EQ(-1, check_name(1, "w:b", 600 * PAGE, SEED(14)));
	fd = open_name(1, "w:b", 0, 0, 0);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, check_fd(fd, 600 * PAGE, 3 * MiB - 600 * PAGE, SEED(13)));
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	kvt_jsnap_free(&snap);
	loop_detach(lfd, JR_IMG);
}

#define FREEZE_AT	"/sys/kernel/debug/kvtier/kvtier0/freeze_at"

/* Wait up to 30 s for debugfs freeze_at @path to read @want. */
static int freeze_wait_at(const char *path, const char *want)
{
	char got[64] = "";
	int i;

	for (i = 0; i < 3000; i++) {
		if (!kvt_read(path, got, sizeof(got)) && !strcmp(got, want))
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "%s reads '%s', not '%s'\n", path, got, want);
	return -ETIMEDOUT;
}

static int freeze_wait(const char *want)
{
	return freeze_wait_at(FREEZE_AT, want);
}

/*
 * Crash points (debugfs freeze_at, for tests/persist/run.sh crash): the
 * detach's checkpoint, which compacts a journal holding transactions,
 * stops at the armed point; arming another releases it to the next one;
 * "none" lets it finish, and what it recorded is there after an attach.
 */
TEST_F_TIMEOUT(persist, crash_points_stop_and_release, 300)
{
	long long gen;
	char got[64];
	pid_t pid;
	int st;

	ASSERT_EQ(0, make_persistent(0, "frozen", MiB, 0600, SEED(21)));
	ASSERT_GT(kvt_stat(0, "journal_pos"), kvt_stat(0, "journal_head"));
	gen = kvt_stat(0, "generation");
	ASSERT_EQ(0, kvt_read(FREEZE_AT, got, sizeof(got)));
	ASSERT_STREQ("none", got);
	ASSERT_EQ(-EINVAL, kvt_write(FREEZE_AT, "ckpt"));
	ASSERT_EQ(-EINVAL, kvt_write(FREEZE_AT, "ckpt-area-and-more"));
	ASSERT_EQ(0, kvt_write(FREEZE_AT, "ckpt-area"));
	ASSERT_EQ(0, kvt_read(FREEZE_AT, got, sizeof(got)));
	ASSERT_STREQ("armed ckpt-area", got);

	close(self->fd);
	self->fd = -1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(kvt_tier_write(0, "backing_dev", "none") ? 1 : 0);
	ASSERT_EQ(0, freeze_wait("frozen ckpt-area"));
	usleep(100000);
	ASSERT_EQ(0, waitpid(pid, &st, WNOHANG));
	/* Another point releases this one; the commit stops at that. */
	ASSERT_EQ(0, kvt_write(FREEZE_AT, "ckpt-super"));
	ASSERT_EQ(0, freeze_wait("frozen ckpt-super"));
	ASSERT_EQ(0, waitpid(pid, &st, WNOHANG));
	ASSERT_EQ(0, kvt_write(FREEZE_AT, "none"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(0, freeze_wait("none"));

	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	EXPECT_EQ(gen + 1, kvt_stat(0, "generation"));
	EXPECT_EQ(kvt_stat(0, "journal_head"), kvt_stat(0, "journal_pos"));
	EXPECT_EQ(-1, check_name(0, "frozen", MiB, SEED(21)));
	self->fd = tier_open(0);
	ASSERT_GE(self->fd, 0);
}

#define FREEZE_AT1	"/sys/kernel/debug/kvtier/kvtier1/freeze_at"

/*
 * One cut of upgrade_crash_points: format @from, a region, the upgrade to
 * @to stopped at crash point @point (@n of them), the image taken there
 * as the power going off.
 */
static void upgrade_cut(struct __test_metadata *_metadata, const char *from,
			const char *to, const char *point, int n, unsigned char *img,
			size_t len)
{
	struct kvtier_disk_super sb;
	char dev[32], want[64];
	int lfd, st, newest;
	pid_t pid;

	TH_LOG("version %s to %s, cut at %s", from, to, point);
	lfd = kvt_loop_attach(UPGRADE_IMG, len, dev, sizeof(dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(1, "format_version", from));
	ASSERT_EQ(0, kvt_tier_write(1, "format", dev));
	ASSERT_EQ(0, make_persistent(1, "x:a", MiB, 0600, 100 + n));
	/* Closed and out of memory: the upgrade's checkpoint copies it. */
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	ASSERT_EQ(0, kvt_write(FREEZE_AT1, point));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(kvt_tier_write(1, "upgrade", to) ? 1 : 0);
	snprintf(want, sizeof(want), "frozen %s", point);
	ASSERT_EQ(0, freeze_wait_at(FREEZE_AT1, want));
	ASSERT_EQ(0, kvt_dev_read(dev, img, len, 0));
	ASSERT_EQ(0, kvt_write(FREEZE_AT1, "none"));
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	EXPECT_TRUE(upgrade_reads(1, to));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));

	/* The power went off there: the superblock of the upgrade or not. */
	ASSERT_EQ(0, kvt_dev_write(dev, img, len, 0));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_TRUE(upgrade_reads(1, strcmp(point, "ckpt-super") ? from : to));
	if (!strcmp(to, "2"))
		EXPECT_EQ(strcmp(point, "ckpt-super") ? 0 : 256, kvt_stat(1, "journal_blocks"));
	EXPECT_EQ(-1, check_name(1, "x:a", MiB, 100 + n));
	/* Either way the namespace goes on: a region, a reattach. */
	ASSERT_EQ(0, make_persistent(1, "x:b", MiB, 0600, 110 + n));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev));
	EXPECT_EQ(-1, check_name(1, "x:a", MiB, 100 + n));
	EXPECT_EQ(-1, check_name(1, "x:b", MiB, 110 + n));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(dev, &sb, &newest));
	EXPECT_EQ(0, kvt_ckpt_check(dev, newest));
	loop_detach(lfd, UPGRADE_IMG);
}

/*
 * The upgrades from version 1 to 2 and from 2 to 3 cut at each crash
 * point: the namespace as it was when the upgrade's checkpoint stopped
 * there is copied (every prior write had completed), the upgrade
 * finishes, and the copy is put back as the power cut would have left it.
 * Before the superblock: the old version with its bytes; after: the new
 * one with its bytes (version 2: a journal that works; version 3: the
 * region's page records made extents, its CRCs in a run of data slots).
 */
TEST_F_TIMEOUT(persist, upgrade_crash_points, 300)
{
	static const char *const points[] = { "ckpt-area", "ckpt-super" };
	const size_t len = 16 * MiB;
	unsigned char *img;
	unsigned int i;

	ASSERT_EQ(0, system("modprobe -q loop"));
	img = malloc(len);
	ASSERT_NE(NULL, img);
	for (i = 0; i < 4; i++)
		upgrade_cut(_metadata, i < 2 ? "1" : "2", i < 2 ? "2" : "3",
			    points[i % 2], i, img, len);
	free(img);
}

/*
 * Version 4: a checkpoint writes the CRCs of the regions whose pages
 * changed since the last one, not every region's (checkpoint_crc_bytes):
 * closed regions and an open one that was only read copy their records
 * and keep their CRC runs (version 3 writes all eight here, 32 KiB).
 * Every byte reads back after, and the namespace checks whole.
 */
TEST_F_TIMEOUT(persist, checkpoints_write_crcs_of_changed_regions_only, 300)
{
	const size_t len = 4 * MiB;
	long long crc0, ckpts0;
	int i, fd, pinned = 0;
	struct kvtier_disk_super sb;
	char name[32];

	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "cw:%d", i);
		ASSERT_EQ(0, make_persistent(0, name, len, 0600, 90 + i));
	}
	/* The detach's checkpoint gives each its CRC run. */
	ASSERT_EQ(0, reload(&self->fd));
	if (!upgrade_reads(0, "4"))
		SKIP(return, "NS0 is not format version 4");
	crc0 = kvt_stat(0, "checkpoint_crc_bytes");
	ASSERT_EQ(0, crc0);

	/* cw:3 gets one page new; cw:5 is read, and open across the checkpoint. */
	fd = open_name(0, "cw:3", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fill_fd(fd, 5 * PAGE, PAGE, 99));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	fd = open_name(0, "cw:5", 0, 0, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, check_fd(fd, 0, len, 95));
	/* Flag changes are one-block transactions: until one is a checkpoint. */
	ckpts0 = kvt_stat(0, "commits") - kvt_stat(0, "journal_commits");
	for (i = 0; i < 70000; i++) {
		if (kvt_stat(0, "commits") - kvt_stat(0, "journal_commits") > ckpts0)
			break;
		ASSERT_EQ(0, toggle_pinned(self->fd, "cw:0", &pinned));
	}
	TH_LOG("a checkpoint after %d transactions: %lld bytes of CRCs", i,
	       kvt_stat(0, "checkpoint_crc_bytes") - crc0);
	ASSERT_LT(i, 70000);
	/* cw:3's 1024 pages, 4 bytes each; nothing of the seven others. */
	EXPECT_EQ((long long)(len / PAGE * 4), kvt_stat(0, "checkpoint_crc_bytes") - crc0);
	EXPECT_EQ(-1, check_fd(fd, 0, len, 95));
	close(fd);
	ASSERT_EQ(0, set_flags(self->fd, "cw:0", 0, KVTIER_REGION_PINNED, 0));

	ASSERT_EQ(0, reload(&self->fd));
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "cw:%d", i);
		if (i == 3)
			continue;
		EXPECT_EQ(-1, check_name(0, name, len, 90 + i));
	}
	fd = open_name(0, "cw:3", 0, 0, 0);
	ASSERT_GE(fd, 0);
	EXPECT_EQ(-1, check_fd(fd, 0, 5 * PAGE, 93));
	EXPECT_EQ(-1, check_fd(fd, 5 * PAGE, PAGE, 99));
	EXPECT_EQ(-1, check_fd(fd, 6 * PAGE, len - 6 * PAGE, 93));
	close(fd);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_super_read(kvt_ns("KVTIER_NS0"), &sb, &i));
	EXPECT_EQ(0, kvt_ckpt_check(kvt_ns("KVTIER_NS0"), i));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
}

TEST_HARNESS_MAIN
