// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD shim for tools/testdata/check.sh: /dev/kvtierN without the
 * module, for the region ioctls of `kvtierctl persist`. open() of a path
 * starting with /dev/kvtier gives a descriptor of /dev/null that the
 * ioctls below answer; everything else goes to libc.
 *
 * Environment:
 *   KVT_FAKE_REGIONS     file of regions, one a line (# comments):
 *                        name size resident namespace created last_used
 *                        owner mode users flags   (numbers as strtoull, base 0)
 *   KVT_FAKE_LOG         file to which each UNLINK and SETFLAGS is appended
 *                        as "unlink NAME" or "setflags NAME SET CLEAR" (hex)
 *   KVT_FAKE_ERRNO       errno number UNLINK and SETFLAGS fail with
 *   KVT_FAKE_LIST_ERRNO  errno number REGION_LIST fails with
 *   KVT_FAKE_OPEN_ERRNO  errno number open() of /dev/kvtierN fails with
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/kvtier.h>

#define MAX_FD		1024
#define MAX_REGIONS	256

static unsigned char fake[MAX_FD];

static int env_errno(const char *var)
{
	const char *v = getenv(var);

	return v && *v ? atoi(v) : 0;
}

static int fake_open(const char *path, int flags, mode_t mode,
		     int (*real)(const char *, int, ...))
{
	int fd, err = env_errno("KVT_FAKE_OPEN_ERRNO");

	if (strncmp(path, KVTIER_DEV_PREFIX, strlen(KVTIER_DEV_PREFIX)))
		return real(path, flags, mode);
	if (err) {
		errno = err;
		return -1;
	}
	fd = real("/dev/null", O_RDWR | (flags & O_CLOEXEC));
	if (fd >= 0 && fd < MAX_FD)
		fake[fd] = 1;
	return fd;
}

typedef int (*open_fn)(const char *, int, ...);

/* The mode argument, present only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode) do {					\
	va_list ap;							\
									\
	va_start(ap, flags);						\
	mode = (flags) & (O_CREAT | O_TMPFILE) ? va_arg(ap, mode_t) : 0; \
	va_end(ap);							\
} while (0)

int open(const char *path, int flags, ...)
{
	static open_fn real;
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (!real)
		real = (open_fn)dlsym(RTLD_NEXT, "open");
	return fake_open(path, flags, mode, real);
}

int open64(const char *path, int flags, ...)
{
	static open_fn real;
	mode_t mode;

	OPEN_MODE(flags, mode);
	if (!real)
		real = (open_fn)dlsym(RTLD_NEXT, "open64");
	return fake_open(path, flags, mode, real);
}

int close(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (fd >= 0 && fd < MAX_FD)
		fake[fd] = 0;
	return real(fd);
}

static size_t load_regions(struct kvtier_region_entry *e, size_t max)
{
	const char *path = getenv("KVT_FAKE_REGIONS");
	long long v[9];
	char line[512], name[KVTIER_NAME_MAX];
	size_t n = 0;
	FILE *f;

	if (!path)
		return 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (line[0] == '#' ||
		    sscanf(line, "%63s %lli %lli %lli %lli %lli %lli %lli %lli %lli",
			   name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7], &v[8]) != 10)
			continue;
		memset(&e[n], 0, sizeof(e[n]));
		snprintf(e[n].name, sizeof(e[n].name), "%s", name);
		e[n].size = v[0];
		e[n].resident = v[1];
		e[n].namespace = v[2];
		e[n].created = (int64_t)v[3];
		e[n].last_used = (int64_t)v[4];
		e[n].owner = (uint32_t)v[5];
		e[n].mode = (uint32_t)v[6];
		e[n].users = (uint32_t)v[7];
		e[n].flags = (uint32_t)v[8];
		n++;
	}
	fclose(f);
	return n;
}

static void log_call(const char *fmt, ...)
{
	const char *path = getenv("KVT_FAKE_LOG");
	va_list ap;
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "ae");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int fake_ioctl(unsigned long req, void *arg)
{
	static struct kvtier_region_entry e[MAX_REGIONS];
	struct kvtier_region_list *l = arg;
	struct kvtier_region_flags *fl = arg;
	struct kvtier_region_name *nm = arg;
	int err = env_errno("KVT_FAKE_ERRNO");
	size_t n, copy;

	switch (req) {
	case KVTIER_IOC_REGION_LIST:
		err = env_errno("KVT_FAKE_LIST_ERRNO");
		if (err)
			break;
		n = load_regions(e, MAX_REGIONS);
		copy = n < l->count ? n : l->count;
		memcpy((void *)(uintptr_t)l->entries, e, copy * sizeof(e[0]));
		l->count = (uint32_t)n;
		return 0;
	case KVTIER_IOC_REGION_UNLINK:
		log_call("unlink %.*s", KVTIER_NAME_MAX, nm->name);
		break;
	case KVTIER_IOC_REGION_SETFLAGS:
		log_call("setflags %.*s %#x %#x", KVTIER_NAME_MAX, fl->name,
			 fl->set, fl->clear);
		break;
	default:
		err = ENOTTY;
		break;
	}
	if (!err)
		return 0;
	errno = err;
	return -1;
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd >= 0 && fd < MAX_FD && fake[fd])
		return fake_ioctl(req, arg);
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	return real(fd, req, arg);
}
