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

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

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
	unsigned long long x = off * 0x9e3779b97f4a7c15ULL + seed;

	x ^= x >> 29;
	return x | 1;	/* never zero: zero-fill is detectable */
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

#endif /* KVTIER_TEST_UTIL_H */
