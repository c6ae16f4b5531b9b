/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kvtier kselftests (kvtier_util.c, compiled once and
 * linked into each test, as selftests/mm does with vm_util): sizes, loading
 * the module under test, sysfs access, the tier's device and mappings,
 * device-mapper tables, the on-namespace format, and the namespaces the VM
 * provides.
 *
 * Environment (set by tests/run-suite.sh in the VM):
 *   KVTIER_KO    path of the kvtier.ko built for the running kernel
 *   KVTIER_NS0   first dedicated namespace (e.g. /dev/nvme0n1)
 *   KVTIER_NS1   second one, for tests that need two
 */
#ifndef KVTIER_TEST_UTIL_H
#define KVTIER_TEST_UTIL_H

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <limits.h>
#include <linux/loop.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Sizes. The tests assume 4 KiB pages (x86_64), as the module's
 * documentation does.
 */
#define KiB		1024ULL
#define MiB		(1024ULL * KiB)
#define GiB		(1024ULL * MiB)
#define PAGE		4096ULL

/* Load kvtier.ko with @params. Returns 0 or -errno. */
int kvt_load(const char *params);

/* Unload kvtier. Returns 0 or -errno (-EAGAIN while in use). */
int kvt_unload(void);

int kvt_loaded(void);

int kvt_exists(const char *path);

/* Write @val to sysfs file @path in one write(). Returns 0 or -errno. */
int kvt_write(const char *path, const char *val);

/* Read sysfs file @path into @buf without the trailing newline. */
int kvt_read(const char *path, char *buf, size_t len);

/* Path of sysfs attribute @attr of tier @id, in @buf. */
const char *kvt_attr(char *buf, size_t len, int id,
		     const char *attr);

int kvt_tier_write(int id, const char *attr, const char *val);

int kvt_tier_read(int id, const char *attr, char *buf, size_t len);

/*
 * Tier @id's sysfs metadata, in bytes, into @v (the total, regions, page
 * maps, CRCs, allocator, buffer): the columns read, 6 when all were.
 */
int kvt_meta_read(int id, unsigned long long v[6]);

/* Column @col of tier @id's sysfs metadata (kvt_meta_read()), or -1. */
long long kvt_meta_col(int id, int col);

/*
 * Xarray nodes in use in the kernel (radix_tree_node objects, the cache
 * shrunk first), once the count stops falling; -1 if it cannot be read.
 */
long long kvt_xa_nodes_settled(void);

/* The namespace named by environment variable @var if it is a block device. */
const char *kvt_ns(const char *var);

/*
 * A loop device over a fresh @size-byte @file (a small namespace for tests
 * that fill one). Puts its path in @dev; returns its fd (LOOP_CLR_FD and
 * close it when done) or -1.
 */
int kvt_loop_attach(const char *file, size_t size, char *dev,
		    size_t len);

/* Why the tier tests cannot run here (module or namespace missing), or NULL. */
const char *kvt_missing(void);

/*
 * Load the module with @params, attach KVTIER_NS0 to tier 0 with a host
 * budget of @budget_mb and open /dev/kvtier0. Returns the fd or -errno.
 */
int kvt_start(const char *params, int budget_mb);

/* Counter @name of tier @id from debugfs stats, or -1. */
long long kvt_stat(int id, const char *name);

/*
 * Poll counter @name of tier @id every 10 ms, @secs at most, until it has
 * grown by @want from @from: by how much it grew (less than @want when
 * the time ran out).
 */
long long kvt_wait_stat(int id, const char *name, long long from,
			long long want, int secs);

/* Numeric sysfs attribute of tier @id, or -1. */
long long kvt_tier_num(int id, const char *attr);

/* Set a numeric knob; returns 0 or -errno. */
int kvt_knob(int id, const char *attr, long long v);

/*
 * The byte pattern the tests write: every 8-byte word names its region
 * offset and a seed, so a page read back from the wrong slot, a stale
 * copy or a zero page is caught.
 */
static inline __attribute__((optimize("O2"))) unsigned long long
kvt_pattern(unsigned long long off, unsigned long long seed)
{
	/* The seed is spread before mixing: seeds differing in bit 0 differ. */
	unsigned long long x = (off + seed * 0xd1b54a32d192ed03ULL) *
			       0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	return x ? x : 1;	/* never zero: zero-fill is detectable */
}

#define KVT_FAST __attribute__((optimize("O2")))

KVT_FAST void kvt_fill(void *p, size_t len, unsigned long long base,
		       unsigned long long seed);

/* Offset of the first wrong word, or -1 if all match. */
KVT_FAST long long kvt_check(const void *p, size_t len,
			     unsigned long long base,
			     unsigned long long seed);

/* Run a shell command built from @fmt; system()'s status. */
__attribute__((format(printf, 1, 2))) int kvt_run(const char *fmt, ...);

/*
 * /dev/kmsg opened (O_NONBLOCK) at its end, for kvt_kmsg_scan(); or -1.
 * What an action logged is read from before it, not counted before and
 * after: the log is a ring, and old records go when it fills.
 */
int kvt_kmsg_end(void);

/*
 * Records containing @needle read from @fd (/dev/kmsg, O_NONBLOCK) until
 * none is left; opened and moved to its end (lseek SEEK_END), the records
 * logged since.
 */
int kvt_kmsg_scan(int fd, const char *needle);

/* Is tier @id's sysfs state @want? */
int kvt_state_is(int id, const char *want);

int kvt_region_info(int fd, struct kvtier_region_info *ri);

/* A fresh file of tier 0 with a mapped region of @len, filled with @seed. */
unsigned char *kvt_map_filled(int *fd, size_t len,
			      unsigned long long seed);

/*
 * @n reads of @block bytes of @fd, read i at offset @off + i * @block into
 * @buf + i * @block, all submitted at once and waited for, through aio
 * (io_submit) or io_uring (raw system calls: the guest has no liburing).
 * res[i] gets each read's result (bytes or -errno). Returns 0, or -errno
 * when they could not be submitted (-ENOSYS etc.: no such interface).
 * kvt_uring_preads() counts in *@workers (unless NULL) the io-wq workers
 * of this process once every read completed ("iou-wrk-*" threads, made
 * only for a request the file could not serve inline with IOCB_NOWAIT;
 * they stay a few seconds idle before they exit).
 */
int kvt_aio_preads(int fd, void *buf, size_t block, unsigned int n,
		   off_t off, long long *res);
int kvt_uring_preads(int fd, void *buf, size_t block, unsigned int n,
		     off_t off, long long *res, int *workers);
/* The same, writing @buf + i * @block at @off + i * @block. */
int kvt_aio_pwrites(int fd, void *buf, size_t block, unsigned int n,
		    off_t off, long long *res);
int kvt_uring_pwrites(int fd, void *buf, size_t block, unsigned int n,
		      off_t off, long long *res, int *workers);

/* pread page @off of @fd: 0 (right bytes), -errno, 1 (wrong bytes), 2 (short). */
int kvt_pread_page(int fd, unsigned long long off,
		   unsigned long long seed);

/*
 * CRC32C as the kernel's crc32c() computes it: reflected polynomial
 * 0x82f63b78, @crc is the seed (the format uses ~0), no final inversion.
 */
KVT_FAST uint32_t kvt_crc32c(uint32_t crc, const void *buf,
			     size_t len);

/*
 * @len bytes at byte @off of block device (or file) @dev, with O_DIRECT
 * where the device takes it, so neither side sees a stale page cache.
 * @off and @len are multiples of 512. Return 0 or -errno.
 */
int kvt_dev_io(const char *dev, void *buf, size_t len, off_t off,
	       int wr);

int kvt_dev_read(const char *dev, void *buf, size_t len, off_t off);

int kvt_dev_write(const char *dev, const void *buf, size_t len,
		  off_t off);

/* Size of block device (or file) @dev in bytes, or 0. */
unsigned long long kvt_dev_size(const char *dev);

/*
 * CRC32C of the superblock copy in the 4096-byte block @blk as the format
 * defines it: over its first header_size bytes with the crc field zero.
 */
uint32_t kvt_super_crc(const void *blk);

/* Recompute the crc of the superblock copy in the 4096-byte block @blk. */
void kvt_super_seal(void *blk);

/* The 4096-byte block @blk holds kvtier magic and a matching crc. */
int kvt_super_valid(const void *blk);

/*
 * The superblock a kvtier namespace on @dev is attached from: of blocks 0
 * and 1, the copy with the kvtier magic and a valid crc and the higher
 * generation. Puts it in @sb (and its block number in @copy if non-NULL).
 * Returns 0, -EUCLEAN if neither copy is valid, or -errno.
 */
int kvt_super_read(const char *dev, struct kvtier_disk_super *sb,
		   int *copy);

/*
 * The committed state of the namespace on @dev as one checkpoint image
 * (struct kvtier_disk_ckpt, region records, page records; its generation
 * the last commit's): the newest valid superblock's checkpoint (CRC
 * checked; version 3: its extent records made page records again, with
 * each region's CRCs from the CRC section, checked; version 4: from its
 * CRC runs, then the section) with, from version 2 on, the journal's
 * transactions applied as the module replays them (kmod/journal.c); the
 * image's region records have nr_extents, crcs_crc and nr_crc_runs zero. *@buf (malloc'ed)
 * and *@len get it, @sb the superblock. 0, -EBADMSG (CRC), -EUCLEAN,
 * -ENOMEM or -errno.
 */
int kvt_state_read(const char *dev, struct kvtier_disk_super *sb,
		   unsigned char **buf, size_t *len);

/*
 * Whether superblock copy @copy (0 or 1) of @dev names a whole checkpoint:
 * 0; -EBADMSG if its CRC or (version 3) a region's CRCs (in the CRC
 * section; version 4: its CRC runs, then the section) fail; -EUCLEAN if the copy is no superblock or the checkpoint
 * contradicts itself; -errno. The copy's own CRC is not checked.
 */
int kvt_ckpt_check(const char *dev, int copy);

/* Byte offset on the namespace of data slot @slot (block data_start + slot). */
unsigned long long kvt_slot_offset(const struct kvtier_disk_super *sb,
				   unsigned long long slot);

/*
 * The metadata of the namespace on @dev as it is now: the superblocks and
 * checkpoint areas, and on version 2 the journal. Written back after later
 * changes (the module unloaded or the tier detached), the next attach has
 * only what was committed at that moment, as after a power cut then: a
 * "crash". The data slots need no copy: a commit never overwrites a slot
 * the previous one names (and freed slots keep their bytes where discard
 * is off or the device does not zero them).
 */
struct kvt_jsnap {
	struct kvtier_disk_super sb;
	unsigned char *meta, *jr;
	size_t meta_len, jr_len;
	off_t jr_off;
};

/* Take the copy; 0 or -errno. */
int kvt_jsnap_take(const char *dev, struct kvt_jsnap *j);
/* Write it back over @dev (the tier detached); 0 or -errno. */
int kvt_jsnap_put(const char *dev, const struct kvt_jsnap *j);
void kvt_jsnap_free(struct kvt_jsnap *j);

/*
 * Bind @fd to the region called @name (KVTIER_IOC_REGION_OPEN): 0 or
 * -errno. The name is copied unterminated when it fills the field, so
 * tests can pass an overlong one.
 */
int kvt_bind_name(int fd, const char *name, unsigned long long size,
		  unsigned int flags, unsigned int mode);

/* Unlink the region called @name (KVTIER_IOC_REGION_UNLINK): 0 or -errno. */
int kvt_unlink_name(int fd, const char *name);

/* CLOCK_MONOTONIC in milliseconds. */
long long kvt_now_ms(void);

/* Wait for the child @pid up to @secs: 0 and its *@status, or -1 (running). */
int kvt_reap(pid_t pid, double secs, int *status);

/* The repository: /proc/self/exe is <repo>/build/tests/<program>. */
const char *kvt_repo_root(void);

/* A kept fuzz seed (tests/fuzz-seeds.txt) and its iterations. */
struct kvt_seed {
	unsigned long long seed, iters;
};

#define KVT_MAX_SEEDS	64

/*
 * Every seed tests/fuzz-seeds.txt keeps for @test, in file order, into
 * @out (KVT_MAX_SEEDS at most): how many, or -1 after saying why on stderr
 * (no list, a line that does not parse, no seed for @test). The list is
 * $KVTIER_FUZZ_SEEDS (tests/run-suite.sh sets it), else found from the
 * executable.
 */
int kvt_kept_seeds(const char *test, struct kvt_seed *out);

/*
 * Column @col of debugfs "regions" (tier 0) for the region with id @id, or
 * for the first region when @id is 0; -1 if the file, the column or the
 * region is not there. Columns are found by the header's names: new ones
 * are only ever added at the end.
 */
long long kvt_region_column(unsigned long long id, const char *col);

/*
 * How much slower than a Debian kernel this guest's kernel runs: the
 * whole number in $KVTIER_TIME_SCALE (make check-debug sets it to its
 * KVTIER_VM_TIMEOUT_SCALE, 4 by default), else 1. Time bounds and rates a
 * test asserts are scaled by it; nothing else is.
 */
long long kvt_time_scale(void);

/* Read one byte at @p: 1 if that raised SIGBUS, 0 if it did not. */
int kvt_touch_or_sigbus(volatile unsigned char *p);

/* Store @v at @p: 1 if that raised SIGBUS, 0 if it did not. */
int kvt_store_or_sigbus(volatile unsigned char *p, unsigned char v);

/*
 * In a forked child: become @uid with primary group @gid and the
 * @ngroups supplementary @groups (none with 0; the current ones kept with
 * a negative @ngroups). 0, or -errno.
 */
int kvt_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups);

/*
 * Run @fn(@arg) in a child that kvt_become()s (@uid, @gid, @groups,
 * @ngroups) first: the child's exit status, 99 if it could not change
 * ids, -1 if it did not exit.
 */
int kvt_as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		int (*fn)(void *), void *arg);

/* /dev/kvtier<@id> opened with @flags (O_CLOEXEC added): a fd, or -1 and errno, as open(2). */
int kvt_tier_open(int id, int flags);

/* mmap(MAP_SHARED) of @len bytes of @fd at offset 0: the address or MAP_FAILED. */
void *kvt_map_region(int fd, size_t len, int prot);

/*
 * Device-mapper devices over a namespace, made with dmsetup: why dm-@target
 * ("linear", "error", "flakey", "delay"...) cannot be used here (for SKIP),
 * or NULL.
 */
const char *kvt_dm_missing(const char *target);

/* Create /dev/mapper/@name, all of @dev, linear. 0 or system()'s status. */
int kvt_dm_linear(const char *name, const char *dev);

/*
 * Swap the live table of @name to "0 <sectors of @dev> <target>", the
 * target line from @fmt (suspend, load, resume; resumed on failure too).
 * 0, or non-zero when the kernel refused the table.
 */
__attribute__((format(printf, 3, 4)))
int kvt_dm_table(const char *name, const char *dev, const char *fmt, ...);

/* Remove /dev/mapper/@name. 0 or system()'s status. */
int kvt_dm_remove(const char *name);

/*
 * The fixture most tests share, "tier": the module loaded with @params,
 * KVTIER_NS0 attached to tier 0 with a host budget of @budget_mb, and
 * /dev/kvtier0 open in self->fd. @before runs first (it may SKIP: nothing
 * is loaded yet); @after runs once the tier is up (a SKIP there must
 * unload first: a skipped setup gets no teardown). After the test, in the
 * parent, @teardown runs while the module is still loaded (it may unload
 * it), then the module is unloaded. Use after kselftest_harness.h.
 */
#define KVT_TIER_FIXTURE(params, budget_mb, before, after, teardown)	\
FIXTURE(tier) {								\
	int fd;								\
};									\
FIXTURE_SETUP(tier)							\
{									\
	const char *why = kvt_missing();				\
									\
	self->fd = -1;							\
	if (why)							\
		SKIP(return, "%s", why);				\
	before;								\
	ASSERT_FALSE(kvt_loaded());					\
	self->fd = kvt_start(params, budget_mb);			\
	ASSERT_GE(self->fd, 0);						\
	after;								\
}									\
FIXTURE_TEARDOWN_PARENT(tier)						\
{									\
	if (!kvt_loaded())						\
		return;							\
	teardown;							\
	if (kvt_loaded())						\
		EXPECT_EQ(0, kvt_unload());				\
}

/*
 * The harness's default time limit (30 s) is a hang guard sized for real
 * hardware; under TCG on a loaded CI host an ordinary test has taken
 * longer. TEST_F expands it where a test is defined, so this applies to
 * every TEST_F without its own limit.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 120
#endif

#endif /* KVTIER_TEST_UTIL_H */
