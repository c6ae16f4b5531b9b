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

/*
 * The path of sysfs attribute @attr of tier @id into @path; -EINVAL for a
 * name that is empty or would leave the tier's directory.
 */
static int attr_path(char *path, size_t len, unsigned int id, const char *attr)
{
	if (!attr || !*attr || strchr(attr, '/') || !strcmp(attr, "..") ||
	    !strcmp(attr, "."))
		return -EINVAL;
	if ((size_t)snprintf(path, len, "/sys/class/kvtier/kvtier%u/%s", id,
			     attr) >= len)
		return -ENAMETOOLONG;
	return 0;
}

KVTIER_EXPORT int kvtier_tier_attr_get(unsigned int id, const char *attr,
				       char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, ret;

	if (!buf || !len)
		return -EINVAL;
	ret = attr_path(path, sizeof(path), id, attr);
	if (ret)
		return ret;
	buf[0] = '\0';		/* an error leaves an empty string */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* sysfs hands out the whole value on the first read. */
	n = read(fd, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n == len) {
		buf[0] = '\0';
		return -ERANGE;
	}
	if (n && buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return 0;
}

KVTIER_EXPORT int kvtier_tier_attr_set(unsigned int id, const char *attr,
				       const char *value)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd, ret;

	if (!value)
		return -EINVAL;
	ret = attr_path(path, sizeof(path), id, attr);
	if (ret)
		return ret;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* One write(): sysfs stores take the value in one call. */
	n = write(fd, value, strlen(value));
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != strlen(value))
		ret = -EIO;
	close(fd);
	return ret;
}

KVTIER_EXPORT int kvtier_attach(unsigned int id, const char *path)
{
	/* "none" is the detach keyword of backing_dev, not a path. */
	if (!path || !*path || !strcmp(path, "none"))
		return -EINVAL;
	return kvtier_tier_attr_set(id, "backing_dev", path);
}

KVTIER_EXPORT int kvtier_detach(unsigned int id)
{
	return kvtier_tier_attr_set(id, "backing_dev", "none");
}

KVTIER_EXPORT int kvtier_format(unsigned int id, const char *path)
{
	if (!path || !*path || !strcmp(path, "none"))
		return -EINVAL;
	return kvtier_tier_attr_set(id, "format", path);
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

/*
 * The columns of /sys/class/kvtier/kvtierN/stat, in their order
 * (Documentation/ABI/testing/sysfs-class-kvtier). The module only ever
 * appends columns: those past this list are a newer module's, skipped;
 * those past the first STAT_COLUMNS_MIN an older module's line lacks, and
 * they are left out.
 */
static const char *const stat_columns[] = {
	"faults_minor", "faults_major", "faults_zero_fill", "refaults",
	"evictions_clean", "evictions_dirty", "writeback_pages",
	"writeback_bytes", "read_pages", "read_bytes", "readahead_pages",
	"prefetch_pages", "budget_stalls", "checksum_errors", "io_errors",
	"inflight_bytes", "writeback_background", "writeback_unchecked",
	"direct_read_pages", "pages_reused",
};

/* The columns every module has written (up to inflight_bytes). */
#define STAT_COLUMNS_MIN	16

#define NR_STAT_COLUMNS	(sizeof(stat_columns) / sizeof(stat_columns[0]))

/* Gauges from the tier's other attributes, all readable without root. */
static const struct { const char *name, *attr; int64_t scale; } stat_gauges[] = {
	{ "resident_bytes", "resident", 1 },
	{ "pinned_bytes", "pinned", 1 },
	{ "used_bytes", "used", 1 },
	{ "capacity_bytes", "capacity", 1 },
	{ "budget_bytes", "host_budget_mb", 1 << 20 },
};

#define NR_STAT_GAUGES	(sizeof(stat_gauges) / sizeof(stat_gauges[0]))

/* The next decimal number of *@p (after blanks) into @v; -EPROTO if none. */
static int next_number(char **p, int64_t *v)
{
	long long x;
	char *end;

	while (**p == ' ')
		(*p)++;
	/* A gauge read while it changes may be negative for a moment. */
	if ((**p < '0' || **p > '9') && **p != '-')
		return -EPROTO;
	errno = 0;
	x = strtoll(*p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -EPROTO;
	*v = x;
	*p = end;
	return 0;
}

static void stat_set(struct kvtier_stat *st, const char *name, int64_t v)
{
	memset(st->name, 0, sizeof(st->name));
	memcpy(st->name, name, strlen(name));
	st->value = v;
}

KVTIER_EXPORT int kvtier_tier_stats(unsigned int id, struct kvtier_stat **statsp,
				    size_t *countp)
{
	struct kvtier_stat *st;
	char buf[1024], *p;
	size_t i, n = 0;
	int64_t v;
	int ret;

	if (!statsp || !countp)
		return -EINVAL;
	ret = kvtier_tier_attr_get(id, "stat", buf, sizeof(buf));
	if (ret)
		return ret;
	st = calloc(NR_STAT_COLUMNS + NR_STAT_GAUGES, sizeof(*st));
	if (!st)
		return -ENOMEM;
	p = buf;
	for (i = 0; i < NR_STAT_COLUMNS; i++) {
		if (i >= STAT_COLUMNS_MIN && !p[strspn(p, " \n")])
			break;
		ret = next_number(&p, &v);
		if (ret)
			goto out;
		stat_set(&st[n++], stat_columns[i], v);
	}
	for (i = 0; i < NR_STAT_GAUGES; i++) {
		ret = kvtier_tier_attr_get(id, stat_gauges[i].attr, buf,
					   sizeof(buf));
		if (ret)
			goto out;
		p = buf;
		ret = next_number(&p, &v);
		if (ret)
			goto out;
		stat_set(&st[n++], stat_gauges[i].name, v * stat_gauges[i].scale);
	}
out:
	if (ret) {
		free(st);
		return ret;
	}
	*statsp = st;
	*countp = n;
	return 0;
}
