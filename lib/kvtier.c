// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier: opening tiers, querying them, attaching and formatting
 * namespaces, listing and changing named regions.
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
#include <unistd.h>

#include "kvtier.h"

#define KVTIER_EXPORT __attribute__((visibility("default")))

/* The most entries one KVTIER_IOC_REGION_LIST copies. */
#define REGION_LIST_MAX	4096U

struct kvtier_tier {
	unsigned int id;
	int fd;
};

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
