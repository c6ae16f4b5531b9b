/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kvtier kselftests: loading the module under test,
 * sysfs access, and the namespaces the VM provides.
 *
 * Environment (set by tests/run-suite.sh in the VM):
 *   KVTIER_KO    path of the kvtier.ko built for the running kernel
 *   KVTIER_NS0   first dedicated namespace (e.g. /dev/nvme0n1)
 *   KVTIER_NS1   second one, for tests that need two
 */
#ifndef KVTIER_TEST_UTIL_H
#define KVTIER_TEST_UTIL_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

static inline int kvt_write(const char *path, const char *val);

/* Load kvtier.ko with @params. Returns 0 or -errno. */
static inline int kvt_load(const char *params)
{
	const char *ko = getenv("KVTIER_KO");
	int fd, ret = 0;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		ret = -errno;
	close(fd);
	/*
	 * Every read-write attach waits one lease interval before it trusts
	 * the ownership lease it wrote (kmod/lease.c): the shortest interval
	 * keeps the suite's hundreds of attaches fast. Tests of the lease
	 * set the knob themselves.
	 */
	for (int i = 0; !ret && i < 64; i++) {
		char p[96];

		snprintf(p, sizeof(p), "/sys/class/kvtier/kvtier%d/lease_interval_ms", i);
		if (access(p, F_OK) || kvt_write(p, "100"))
			break;
	}
	return ret;
}

/* Unload kvtier. Returns 0 or -errno (-EAGAIN while in use). */
static inline int kvt_unload(void)
{
	if (syscall(SYS_delete_module, "kvtier", O_NONBLOCK))
		return -errno;
	return 0;
}

static inline int kvt_loaded(void)
{
	struct stat st;

	return stat("/sys/module/kvtier", &st) == 0;
}

static inline int kvt_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Write @val to sysfs file @path in one write(). Returns 0 or -errno. */
static inline int kvt_write(const char *path, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : 0;
}

/* Read sysfs file @path into @buf without the trailing newline. */
static inline int kvt_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

/* Path of sysfs attribute @attr of tier @id, in @buf. */
static inline const char *kvt_attr(char *buf, size_t len, int id,
				   const char *attr)
{
	snprintf(buf, len, "/sys/class/kvtier/kvtier%d/%s", id, attr);
	return buf;
}

static inline int kvt_tier_write(int id, const char *attr, const char *val)
{
	char p[128];

	return kvt_write(kvt_attr(p, sizeof(p), id, attr), val);
}

static inline int kvt_tier_read(int id, const char *attr, char *buf, size_t len)
{
	char p[128];

	return kvt_read(kvt_attr(p, sizeof(p), id, attr), buf, len);
}

/* The namespace named by environment variable @var if it is a block device. */
static inline const char *kvt_ns(const char *var)
{
	const char *ns = getenv(var);
	struct stat st;

	if (!ns || stat(ns, &st) || !S_ISBLK(st.st_mode))
		return NULL;
	return ns;
}

/*
 * A loop device over a fresh @size-byte @file (a small namespace for tests
 * that fill one). Puts its path in @dev; returns its fd (LOOP_CLR_FD and
 * close it when done) or -1.
 */
static inline int kvt_loop_attach(const char *file, size_t size, char *dev,
				  size_t len)
{
	int ctl, fd, lfd, n;

	fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size))
		return -1;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -1;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -1;
	snprintf(dev, len, "/dev/loop%d", n);
	lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0 || ioctl(lfd, LOOP_SET_FD, fd))
		return -1;
	close(fd);
	return lfd;
}

/* Why the tier tests cannot run here (module or namespace missing), or NULL. */
static inline const char *kvt_missing(void)
{
	if (!getenv("KVTIER_KO"))
		return "KVTIER_KO not set";
	if (!kvt_ns("KVTIER_NS0"))
		return "no namespace in KVTIER_NS0";
	return NULL;
}

static inline int kvt_knob(int id, const char *attr, long long v);

/*
 * Load the module with @params, attach KVTIER_NS0 to tier 0 with a host
 * budget of @budget_mb and open /dev/kvtier0. Returns the fd or -errno.
 */
static inline int kvt_start(const char *params, int budget_mb)
{
	int ret, fd;

	ret = kvt_load(params);
	if (!ret)
		ret = kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0"));
	if (!ret)
		ret = kvt_knob(0, "host_budget_mb", budget_mb);
	if (ret)
		return ret;
	fd = open("/dev/kvtier0", O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Counter @name of tier @id from debugfs stats, or -1. */
static inline long long kvt_stat(int id, const char *name)
{
	char path[128], key[64];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvtier/kvtier%d/stats", id);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2) {
		if (!strcmp(key, name)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Numeric sysfs attribute of tier @id, or -1. */
static inline long long kvt_tier_num(int id, const char *attr)
{
	char buf[64];

	if (kvt_tier_read(id, attr, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 0);
}

/* Set a numeric knob; returns 0 or -errno. */
static inline int kvt_knob(int id, const char *attr, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	return kvt_tier_write(id, attr, buf);
}

/*
 * The byte pattern the tests write: every 8-byte word names its region
 * offset and a seed, so a page read back from the wrong slot, a stale
 * copy or a zero page is caught.
 */
static inline __attribute__((optimize("O2"))) unsigned long long kvt_pattern(unsigned long long off,
					     unsigned long long seed)
{
	/* The seed is spread before mixing: seeds differing in bit 0 differ. */
	unsigned long long x = (off + seed * 0xd1b54a32d192ed03ULL) *
			       0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	return x ? x : 1;	/* never zero: zero-fill is detectable */
}

#define KVT_FAST __attribute__((optimize("O2")))

static inline KVT_FAST void kvt_fill(void *p, size_t len, unsigned long long base,
			    unsigned long long seed)
{
	unsigned long long *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = kvt_pattern(base + i * 8, seed);
}

/* Offset of the first wrong word, or -1 if all match. */
static inline KVT_FAST long long kvt_check(const void *p, size_t len,
				  unsigned long long base,
				  unsigned long long seed)
{
	const unsigned long long *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != kvt_pattern(base + i * 8, seed))
			return (long long)(base + i * 8);
	return -1;
}

/* Run a shell command built from @fmt; system()'s status. */
static inline __attribute__((format(printf, 1, 2))) int kvt_run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Kernel log records containing @needle so far, or -1. */
static inline int kvt_kmsg_count(const char *needle)
{
	char rec[4096];
	int fd, count = 0;
	ssize_t n;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten while reading: go on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (strstr(rec, needle))
			count++;
	}
	close(fd);
	return count;
}

/* Is tier @id's sysfs state @want? */
static inline int kvt_state_is(int id, const char *want)
{
	char buf[64];

	return !kvt_tier_read(id, "state", buf, sizeof(buf)) && !strcmp(buf, want);
}

static inline int kvt_region_info(int fd, struct kvtier_region_info *ri)
{
	return ioctl(fd, KVTIER_IOC_REGION_INFO, ri) ? -errno : 0;
}

/* A fresh file of tier 0 with a mapped region of @len, filled with @seed. */
static inline unsigned char *kvt_map_filled(int *fd, size_t len,
					    unsigned long long seed)
{
	unsigned char *p;

	*fd = open("/dev/kvtier0", O_RDWR | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	kvt_fill(p, len, 0, seed);
	return p;
}

/* pread page @off of @fd: 0 (right bytes), -errno, 1 (wrong bytes), 2 (short). */
static inline int kvt_pread_page(int fd, unsigned long long off,
				 unsigned long long seed)
{
	unsigned char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf), off);

	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(buf))
		return 2;
	return kvt_check(buf, sizeof(buf), off, seed) == -1 ? 0 : 1;
}

/*
 * CRC32C as the kernel's crc32c() computes it: reflected polynomial
 * 0x82f63b78, @crc is the seed (the format uses ~0), no final inversion.
 */
static inline KVT_FAST uint32_t kvt_crc32c(uint32_t crc, const void *buf,
					   size_t len)
{
	static uint32_t table[256];
	const unsigned char *p = buf;
	uint32_t c;
	int i, j;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			c = i;
			for (j = 0; j < 8; j++)
				c = (c >> 1) ^ (c & 1 ? 0x82f63b78U : 0);
			table[i] = c;
		}
	}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * @len bytes at byte @off of block device (or file) @dev, with O_DIRECT
 * where the device takes it, so neither side sees a stale page cache.
 * @off and @len are multiples of 512. Return 0 or -errno.
 */
static inline int kvt_dev_io(const char *dev, void *buf, size_t len, off_t off,
			     int wr)
{
	void *bounce;
	ssize_t n;
	int fd, ret = 0;

	fd = open(dev, (wr ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL)
		fd = open(dev, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * Small pages only: an O_DIRECT bio merges physically adjacent
	 * transparent huge pages into one segment, and on 6.1 an nvme-tcp
	 * target on loopback copies such a segment out of the sender's pages
	 * in one piece, which hardened usercopy stops with a kernel BUG (seen
	 * in kvtier_persist_test over fabrics). kvtier's own I/O is in small
	 * pages; this keeps the test's raw writes the same.
	 */
	bounce = mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bounce == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	madvise(bounce, len ? len : 4096, MADV_NOHUGEPAGE);
	if (wr)
		memcpy(bounce, buf, len);
	n = wr ? pwrite(fd, bounce, len, off) : pread(fd, bounce, len, off);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	else if (!wr)
		memcpy(buf, bounce, len);
	if (!ret && wr && fsync(fd))
		ret = -errno;
	munmap(bounce, len ? len : 4096);
	close(fd);
	return ret;
}

static inline int kvt_dev_read(const char *dev, void *buf, size_t len, off_t off)
{
	return kvt_dev_io(dev, buf, len, off, 0);
}

static inline int kvt_dev_write(const char *dev, const void *buf, size_t len,
				off_t off)
{
	return kvt_dev_io(dev, (void *)buf, len, off, 1);
}

/* Size of block device (or file) @dev in bytes, or 0. */
static inline unsigned long long kvt_dev_size(const char *dev)
{
	off_t end;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	end = lseek(fd, 0, SEEK_END);
	close(fd);
	return end < 0 ? 0 : (unsigned long long)end;
}

/*
 * CRC32C of the superblock copy in the 4096-byte block @blk as the format
 * defines it: over its first header_size bytes with the crc field zero.
 */
static inline uint32_t kvt_super_crc(const void *blk)
{
	const struct kvtier_disk_super *sb = blk;
	unsigned char tmp[KVTIER_BLOCK_SIZE];
	uint32_t hs = le32toh(sb->header_size);

	if (hs < offsetof(struct kvtier_disk_super, reserved0) || hs > sizeof(tmp))
		hs = sizeof(*sb);
	memcpy(tmp, blk, sizeof(tmp));
	memset(tmp + offsetof(struct kvtier_disk_super, crc), 0, 4);
	return kvt_crc32c(~0U, tmp, hs);
}

/* Recompute the crc of the superblock copy in the 4096-byte block @blk. */
static inline void kvt_super_seal(void *blk)
{
	struct kvtier_disk_super *sb = blk;

	sb->crc = htole32(kvt_super_crc(blk));
}

/* The 4096-byte block @blk holds kvtier magic and a matching crc. */
static inline int kvt_super_valid(const void *blk)
{
	const struct kvtier_disk_super *sb = blk;

	return le64toh(sb->magic) == KVTIER_SB_MAGIC &&
	       le32toh(sb->crc) == kvt_super_crc(blk);
}

/*
 * The superblock a kvtier namespace on @dev is attached from: of blocks 0
 * and 1, the copy with the kvtier magic and a valid crc and the higher
 * generation. Puts it in @sb (and its block number in @copy if non-NULL).
 * Returns 0, -EUCLEAN if neither copy is valid, or -errno.
 */
static inline int kvt_super_read(const char *dev, struct kvtier_disk_super *sb,
				 int *copy)
{
	unsigned char blk[2][KVTIER_BLOCK_SIZE];
	const struct kvtier_disk_super *s[2];
	int ret, best = -1, i;

	ret = kvt_dev_read(dev, blk, sizeof(blk), 0);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		s[i] = (const struct kvtier_disk_super *)blk[i];
		if (!kvt_super_valid(blk[i]))
			continue;
		if (best < 0 || le64toh(s[i]->generation) > le64toh(s[best]->generation))
			best = i;
	}
	if (best < 0)
		return -EUCLEAN;
	memcpy(sb, s[best], sizeof(*sb));
	if (copy)
		*copy = best;
	return 0;
}

/* Byte offset on the namespace of data slot @slot (block data_start + slot). */
static inline unsigned long long kvt_slot_offset(const struct kvtier_disk_super *sb,
						 unsigned long long slot)
{
	return (le64toh(sb->data_start) + slot) * KVTIER_BLOCK_SIZE;
}

/*
 * Bind @fd to the region called @name (KVTIER_IOC_REGION_OPEN): 0 or
 * -errno. The name is copied unterminated when it fills the field, so
 * tests can pass an overlong one.
 */
static inline int kvt_bind_name(int fd, const char *name, unsigned long long size,
				unsigned int flags, unsigned int mode)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = mode };

	strncpy(ro.name, name, sizeof(ro.name));
	return ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro) ? -errno : 0;
}

/* Unlink the region called @name (KVTIER_IOC_REGION_UNLINK): 0 or -errno. */
static inline int kvt_unlink_name(int fd, const char *name)
{
	struct kvtier_region_name rn = { { 0 } };

	strncpy(rn.name, name, sizeof(rn.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn) ? -errno : 0;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long kvt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The repository: /proc/self/exe is <repo>/build/tests/<program>. */
static inline const char *kvt_repo_root(void)
{
	static char repo[PATH_MAX];
	ssize_t n;
	int i;

	if (*repo)
		return repo;
	n = readlink("/proc/self/exe", repo, sizeof(repo) - 1);
	if (n <= 0)
		return NULL;
	repo[n] = '\0';
	for (i = 0; i < 3; i++)
		*strrchr(repo, '/') = '\0';
	return repo;
}

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
static inline int kvt_kept_seeds(const char *test, struct kvt_seed *out)
{
	const char *path = getenv("KVTIER_FUZZ_SEEDS");
	char buf[PATH_MAX], line[512], name[64];
	unsigned long long seed, iters;
	unsigned int lineno = 0;
	int n = 0, len;
	FILE *f;

	if (!path || !*path) {
		snprintf(buf, sizeof(buf), "%s/tests/fuzz-seeds.txt", kvt_repo_root());
		path = buf;
	}
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "# %s: %s (the kept fuzz seeds)\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		len = 0;
		sscanf(line, " %n", &len);
		if (!line[len] || line[len] == '#')
			continue;
		if (sscanf(line, "%63s %llu %llu", name, &seed, &iters) != 3 || !seed) {
			fprintf(stderr, "# %s:%u: not 'TEST SEED ITERATIONS WHY'\n", path, lineno);
			n = -1;
			break;
		}
		if (strcmp(name, test))
			continue;
		if (n == KVT_MAX_SEEDS) {
			fprintf(stderr, "# %s: more than %d seeds for %s\n", path,
				KVT_MAX_SEEDS, test);
			n = -1;
			break;
		}
		out[n].seed = seed;
		out[n++].iters = iters;
	}
	fclose(f);
	if (!n)
		fprintf(stderr, "# %s keeps no seed for %s\n", path, test);
	return n ? n : -1;
}

/*
 * Column @col of debugfs "regions" (tier 0) for the region with id @id, or
 * for the first region when @id is 0; -1 if the file, the column or the
 * region is not there. Columns are found by the header's names: new ones
 * are only ever added at the end.
 */
static inline long long kvt_region_column(unsigned long long id, const char *col)
{
	char line[1024], *tok, *save;
	int want = -1, i;
	long long v = -1;
	FILE *f = fopen("/sys/kernel/debug/kvtier/kvtier0/regions", "re");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || !fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	line[strcspn(line, "\n")] = 0;
	for (i = 0, tok = strtok_r(line, " ", &save); tok;
	     i++, tok = strtok_r(NULL, " ", &save))
		if (!strcmp(tok, col))
			want = i;
	while (want >= 0 && v < 0 && fgets(line, sizeof(line), f)) {
		if (id && strtoull(line, NULL, 10) != id)
			continue;
		for (i = 0, tok = strtok_r(line, " \n", &save); tok && i < want;
		     i++, tok = strtok_r(NULL, " \n", &save))
			;
		if (tok)
			v = strtoll(tok, NULL, 10);
		if (!id)
			break;
	}
	fclose(f);
	return v;
}

/*
 * How much slower than a Debian kernel this guest's kernel runs: the
 * whole number in $KVTIER_TIME_SCALE (make check-debug sets it to its
 * KVTIER_VM_TIMEOUT_SCALE, 4 by default), else 1. Time bounds and rates a
 * test asserts are scaled by it; nothing else is.
 */
static inline long long kvt_time_scale(void)
{
	const char *v = getenv("KVTIER_TIME_SCALE");
	long long s = v ? atoll(v) : 1;

	return s >= 1 ? s : 1;
}

static sigjmp_buf kvt_sigbus_jmp;

static inline void kvt_on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(kvt_sigbus_jmp, 1);
}

/* Read one byte at @p: 1 if that raised SIGBUS, 0 if it did not. */
static inline int kvt_touch_or_sigbus(volatile unsigned char *p)
{
	static volatile int got;

	got = 0;
	signal(SIGBUS, kvt_on_sigbus);
	if (!sigsetjmp(kvt_sigbus_jmp, 1))
		(void)p[0];
	else
		got = 1;
	signal(SIGBUS, SIG_DFL);
	return got;
}

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

#endif /* KVTIER_TEST_UTIL_H */
