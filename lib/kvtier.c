// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier: opening tiers, querying them, attaching and formatting
 * namespaces, listing and changing named regions; regions (create, open by
 * name, map, read and write, hints, pins, sync, info), GPU ranges and the
 * debugfs statistics. The block-offload API is in xfer.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

/* The most entries one KVTIER_IOC_REGION_LIST copies. */
#define REGION_LIST_MAX	4096U

/* The package's version (dkms.conf), as modinfo kvtier and kvtierctl --version say. */
KVTIER_EXPORT const char *kvtier_version(void)
{
	return KVTIER_VERSION;
}

KVTIER_EXPORT int kvtier_tier_open(unsigned int id, struct kvtier_tier **tierp)
{
	struct kvtier_tier *tier;
	char path[64];

	if (!tierp)
		return -EINVAL;
	snprintf(path, sizeof(path), KVTIER_DEV_PREFIX "%u", id);
	tier = calloc(1, sizeof(*tier));
	if (!tier)
		return -ENOMEM;
	tier->id = id;
	tier->fd = open(path, O_RDWR | O_CLOEXEC);
	if (tier->fd < 0) {
		int ret = -errno;

		free(tier);
		return ret;
	}
	*tierp = tier;
	return 0;
}

KVTIER_EXPORT void kvtier_tier_close(struct kvtier_tier *tier)
{
	if (!tier)
		return;
	close(tier->fd);
	free(tier);
}

KVTIER_EXPORT int kvtier_tier_fd(const struct kvtier_tier *tier)
{
	return tier ? tier->fd : -EINVAL;
}

KVTIER_EXPORT int kvtier_tier_info(struct kvtier_tier *tier,
				   struct kvtier_tier_info *info)
{
	if (!tier || !info)
		return -EINVAL;
	if (ioctl(tier->fd, KVTIER_IOC_TIER_INFO, info))
		return -errno;
	return 0;
}

/* Write @val to the tier's sysfs attribute @attr in one write(). */
static int write_attr(unsigned int id, const char *attr, const char *val)
{
	char path[128];
	ssize_t n;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/class/kvtier/kvtier%u/%s", id, attr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(val))
		ret = -EIO;
	close(fd);
	return ret;
}

KVTIER_EXPORT int kvtier_attach(unsigned int id, const char *path)
{
	/* "none" is the detach keyword of backing_dev, not a path. */
	if (!path || !*path || !strcmp(path, "none"))
		return -EINVAL;
	return write_attr(id, "backing_dev", path);
}

KVTIER_EXPORT int kvtier_detach(unsigned int id)
{
	return write_attr(id, "backing_dev", "none");
}

KVTIER_EXPORT int kvtier_format(unsigned int id, const char *path)
{
	if (!path || !*path || !strcmp(path, "none"))
		return -EINVAL;
	return write_attr(id, "format", path);
}

KVTIER_EXPORT int kvtier_region_list(struct kvtier_tier *tier,
				     struct kvtier_region_entry **entriesp,
				     size_t *countp)
{
	struct kvtier_region_entry *e = NULL, *grown;
	struct kvtier_region_list arg;
	unsigned int room = 16;

	if (!tier || !entriesp || !countp)
		return -EINVAL;
	for (;;) {
		grown = realloc(e, room * sizeof(*e));
		if (!grown) {
			free(e);
			return -ENOMEM;
		}
		e = grown;
		memset(&arg, 0, sizeof(arg));
		arg.entries = (uintptr_t)e;
		arg.count = room;
		if (ioctl(tier->fd, KVTIER_IOC_REGION_LIST, &arg)) {
			int ret = -errno;

			free(e);
			return ret;
		}
		if (arg.count <= room || room == REGION_LIST_MAX)
			break;
		/* Some slack: regions may be created between the calls. */
		room = arg.count < REGION_LIST_MAX - 16 ? arg.count + 16 :
							  REGION_LIST_MAX;
	}
	*entriesp = e;
	*countp = arg.count < room ? arg.count : room;
	return arg.count > INT_MAX ? INT_MAX : (int)arg.count;
}

/* Copy a region name into a zeroed KVTIER_NAME_MAX array: 1..63 bytes. */
static int copy_name(char *dst, const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strnlen(name, KVTIER_NAME_MAX);
	if (!n || n == KVTIER_NAME_MAX)
		return -EINVAL;
	memcpy(dst, name, n);
	return 0;
}

KVTIER_EXPORT int kvtier_region_unlink(struct kvtier_tier *tier,
				       const char *name)
{
	struct kvtier_region_name arg;
	int ret;

	if (!tier)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	ret = copy_name(arg.name, name);
	if (ret)
		return ret;
	if (ioctl(tier->fd, KVTIER_IOC_REGION_UNLINK, &arg))
		return -errno;
	return 0;
}

KVTIER_EXPORT int kvtier_region_setflags(struct kvtier_tier *tier,
					 const char *name, unsigned int set,
					 unsigned int clear)
{
	struct kvtier_region_flags arg;
	int ret;

	if (!tier)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	ret = copy_name(arg.name, name);
	if (ret)
		return ret;
	arg.set = set;
	arg.clear = clear;
	if (ioctl(tier->fd, KVTIER_IOC_REGION_SETFLAGS, &arg))
		return -errno;
	return 0;
}

/* A fresh file of the tier @tier is open on, or -errno. */
static int tier_reopen(const struct kvtier_tier *tier)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), KVTIER_DEV_PREFIX "%u", tier->id);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static uint64_t page_round(uint64_t size)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) & ~(page - 1);
}

static int region_new(struct kvtier_tier *tier, int fd, uint64_t size,
		      int readonly, struct kvtier_region **regionp)
{
	struct kvtier_region *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->tier = tier;
	r->fd = fd;
	r->size = size;
	r->readonly = readonly;
	*regionp = r;
	return 0;
}

/* The largest region size the API accepts: offsets must fit an off_t. */
#define REGION_SIZE_MAX	((uint64_t)INT64_MAX & ~(uint64_t)0xfffff)

KVTIER_EXPORT int kvtier_region_create(struct kvtier_tier *tier, uint64_t size,
				       struct kvtier_region **regionp)
{
	struct kvtier_region_create arg = { 0 };
	int fd, ret;

	if (!tier || !regionp || !size || size > REGION_SIZE_MAX)
		return -EINVAL;
	fd = tier_reopen(tier);
	if (fd < 0)
		return fd;
	arg.size = size;
	if (ioctl(fd, KVTIER_IOC_REGION_CREATE, &arg)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = region_new(tier, fd, page_round(size), 0, regionp);
	if (ret)
		close(fd);
	return ret;
}

/*
 * Size of the region @fd (bound to @name) is bound to: from REGION_INFO,
 * or where the module predates it from the list of named regions.
 */
static int bound_size(int fd, const char *name, uint64_t *sizep)
{
	struct kvtier_region_entry *e = NULL;
	struct kvtier_region_info info;
	struct kvtier_tier t = { .fd = fd };
	size_t n = 0, i;
	int ret;

	memset(&info, 0, sizeof(info));
	if (!ioctl(fd, KVTIER_IOC_REGION_INFO, &info)) {
		*sizep = info.size;
		return 0;
	}
	if (errno != ENOTTY)
		return -errno;
	ret = kvtier_region_list(&t, &e, &n);
	if (ret < 0)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < n; i++) {
		if (!strncmp(e[i].name, name, KVTIER_NAME_MAX)) {
			*sizep = e[i].size;
			ret = 0;
			break;
		}
	}
	free(e);
	return ret;
}

#define OPEN_FLAGS	(KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | \
			 KVTIER_OPEN_PERSISTENT | KVTIER_OPEN_RDONLY | \
			 KVTIER_OPEN_SHARED)

KVTIER_EXPORT int kvtier_region_open(struct kvtier_tier *tier, const char *name,
				     uint64_t size, unsigned int flags,
				     unsigned int mode,
				     struct kvtier_region **regionp)
{
	struct kvtier_region_open arg;
	uint64_t bound = 0;
	int fd, ret;

	if (!tier || !regionp || (flags & ~OPEN_FLAGS) || size > REGION_SIZE_MAX)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	ret = copy_name(arg.name, name);
	if (ret)
		return ret;
	arg.size = size;
	arg.flags = flags;
	arg.mode = mode;
	fd = tier_reopen(tier);
	if (fd < 0)
		return fd;
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &arg)) {
		ret = -errno;
		goto fail;
	}
	ret = bound_size(fd, arg.name, &bound);
	if (ret)
		goto fail;
	ret = region_new(tier, fd, bound, !!(flags & KVTIER_OPEN_RDONLY), regionp);
	if (ret)
		goto fail;
	return 0;
fail:
	close(fd);
	return ret;
}

KVTIER_EXPORT void kvtier_region_close(struct kvtier_region *region)
{
	if (!region)
		return;
	if (region->addr)
		munmap(region->addr, region->size);
	close(region->fd);
	free(region);
}

KVTIER_EXPORT int kvtier_region_fd(const struct kvtier_region *region)
{
	return region ? region->fd : -EINVAL;
}

KVTIER_EXPORT int kvtier_region_map(struct kvtier_region *region, int prot,
				    void **addrp)
{
	void *p;

	if (!region || !addrp || !prot || (prot & ~(PROT_READ | PROT_WRITE)) ||
	    region->size > SIZE_MAX)
		return -EINVAL;
	if (region->addr)
		return -EBUSY;
	p = mmap(NULL, (size_t)region->size, prot, MAP_SHARED, region->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	region->addr = p;
	*addrp = p;
	return 0;
}

KVTIER_EXPORT int kvtier_region_unmap(struct kvtier_region *region)
{
	if (!region || !region->addr)
		return -EINVAL;
	if (munmap(region->addr, (size_t)region->size))
		return -errno;
	region->addr = NULL;
	return 0;
}

int kvt_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;	/* the region ended early */
		done += (size_t)n;
	}
	return 0;
}

int kvt_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, (const char *)buf + done, len - done,
			   (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* Arguments of read/write: @len bytes at @offset fit the types involved. */
static int rw_args(const struct kvtier_region *region, const void *buf,
		   size_t len, uint64_t offset)
{
	if (!region || (!buf && len) || len > SSIZE_MAX ||
	    offset > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - offset)
		return -EINVAL;
	return 0;
}

KVTIER_EXPORT ssize_t kvtier_region_read(struct kvtier_region *region,
					 void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;
	ssize_t n;
	int ret;

	ret = rw_args(region, buf, len, offset);
	if (ret)
		return ret;
	while (done < len) {
		n = pread(region->fd, (char *)buf + done, len - done,
			  (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (ssize_t)done : -errno;
		if (!n)
			break;		/* the end of the region */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

KVTIER_EXPORT ssize_t kvtier_region_write(struct kvtier_region *region,
					  const void *buf, size_t len,
					  uint64_t offset)
{
	size_t done = 0;
	ssize_t n;
	int ret;

	ret = rw_args(region, buf, len, offset);
	if (ret)
		return ret;
	while (done < len) {
		n = pwrite(region->fd, (const char *)buf + done, len - done,
			   (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (ssize_t)done : -errno;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int advise(struct kvtier_region *region, uint64_t offset, uint64_t len,
		  int advice)
{
	int ret;

	if (!region || offset > (uint64_t)INT64_MAX ||
	    len > (uint64_t)INT64_MAX - offset)
		return -EINVAL;
	/* posix_fadvise returns the error number; it does not set errno. */
	ret = posix_fadvise(region->fd, (off_t)offset, (off_t)len, advice);
	return -ret;
}

KVTIER_EXPORT int kvtier_region_prefetch(struct kvtier_region *region,
					 uint64_t offset, uint64_t len)
{
	return advise(region, offset, len, POSIX_FADV_WILLNEED);
}

KVTIER_EXPORT int kvtier_region_cold(struct kvtier_region *region,
				     uint64_t offset, uint64_t len)
{
	return advise(region, offset, len, POSIX_FADV_DONTNEED);
}

static int pin_ioctl(struct kvtier_region *region, uint64_t offset,
		     uint64_t len, unsigned long cmd)
{
	struct kvtier_pin arg = { .offset = offset, .length = len };

	if (!region)
		return -EINVAL;
	if (ioctl(region->fd, cmd, &arg))
		return -errno;
	return 0;
}

KVTIER_EXPORT int kvtier_region_pin(struct kvtier_region *region,
				    uint64_t offset, uint64_t len)
{
	return pin_ioctl(region, offset, len, KVTIER_IOC_PIN);
}

KVTIER_EXPORT int kvtier_region_unpin(struct kvtier_region *region,
				      uint64_t offset, uint64_t len)
{
	return pin_ioctl(region, offset, len, KVTIER_IOC_UNPIN);
}

KVTIER_EXPORT int kvtier_region_sync(struct kvtier_region *region)
{
	if (!region)
		return -EINVAL;
	while (fsync(region->fd)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

KVTIER_EXPORT int kvtier_region_info(struct kvtier_region *region,
				     struct kvtier_region_info *info)
{
	if (!region || !info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	if (ioctl(region->fd, KVTIER_IOC_REGION_INFO, info))
		return -errno;
	return 0;
}

KVTIER_EXPORT int kvtier_gpu_register(struct kvtier_tier *tier,
				      const struct kvtier_gpu_range *range)
{
	if (!tier || !range)
		return -EINVAL;
	if (ioctl(tier->fd, KVTIER_IOC_GPU_REGISTER, range))
		return -errno;
	return 0;
}

KVTIER_EXPORT int kvtier_gpu_unregister(struct kvtier_tier *tier, uint64_t va)
{
	struct kvtier_gpu_range arg;

	if (!tier)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	arg.va = va;
	if (ioctl(tier->fd, KVTIER_IOC_GPU_UNREGISTER, &arg))
		return -errno;
	return 0;
}

#define STATS_MAGIC	"kvtier-stats"
#define STATS_VERSION	1
#define STATS_MAX	4096U

/* "name value" of one stats line into @st: 1 parsed, 0 skipped, -EPROTO. */
static int parse_stat(char *line, struct kvtier_stat *st)
{
	char *save = NULL, *name, *val, *end;
	long long v;

	name = strtok_r(line, " \t\n", &save);
	if (!name)
		return 0;	/* an empty line */
	val = strtok_r(NULL, " \t\n", &save);
	if (!val || strtok_r(NULL, " \t\n", &save))
		return -EPROTO;
	errno = 0;
	v = strtoll(val, &end, 10);
	if (*end || end == val || errno)
		return -EPROTO;
	/* A name longer than the field: a newer counter this ABI cannot hold. */
	if (strlen(name) >= sizeof(st->name))
		return 0;
	memset(st->name, 0, sizeof(st->name));
	memcpy(st->name, name, strlen(name));
	st->value = v;
	return 1;
}

KVTIER_EXPORT int kvtier_tier_stats(unsigned int id, struct kvtier_stat **statsp,
				    size_t *countp)
{
	struct kvtier_stat *st = NULL, *grown;
	size_t n = 0, room = 0, cap = 0;
	char path[96], *line = NULL, *save = NULL, *tok;
	unsigned long long ver;
	int ret = 0;
	FILE *f;

	if (!statsp || !countp)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/kernel/debug/kvtier/kvtier%u/stats", id);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (getline(&line, &cap, f) < 0) {
		ret = ferror(f) ? -EIO : -EPROTO;
		goto out;
	}
	tok = strtok_r(line, " \t\n", &save);
	if (!tok || strcmp(tok, STATS_MAGIC) ||
	    !(tok = strtok_r(NULL, " \t\n", &save)) ||
	    strtok_r(NULL, " \t\n", &save) || *tok < '0' || *tok > '9') {
		ret = -EPROTO;
		goto out;
	}
	ver = strtoull(tok, &save, 10);
	if (*save) {
		ret = -EPROTO;
		goto out;
	}
	if (ver != STATS_VERSION) {
		ret = -EPROTONOSUPPORT;
		goto out;
	}
	while (getline(&line, &cap, f) >= 0) {
		if (n == room) {
			if (room == STATS_MAX) {
				ret = -E2BIG;
				goto out;
			}
			room = room ? room * 2 : 64;
			grown = realloc(st, room * sizeof(*st));
			if (!grown) {
				ret = -ENOMEM;
				goto out;
			}
			st = grown;
		}
		ret = parse_stat(line, &st[n]);
		if (ret < 0)
			goto out;
		n += (size_t)ret;
		ret = 0;
	}
	if (ferror(f))
		ret = -EIO;
out:
	free(line);
	fclose(f);
	if (ret) {
		free(st);
		return ret;
	}
	*statsp = st;
	*countp = n;
	return 0;
}
