// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: is a block device safe to hand to a tier? A tier overwrites
 * its namespace without asking, so `attach` refuses a device that is
 * mounted, held by someone else, carries a filesystem, RAID/LVM or
 * partition-table signature (libblkid), or is too small to be useful.
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ctl.h"

int kvt_dev_is_block(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return fail("%s: %s", path, strerror(errno));
	if (!S_ISBLK(st.st_mode))
		return fail("%s is not a block device", path);
	return 0;
}

/* /sys/dev/block/MAJ:MIN resolved: the device's place in the sysfs tree. */
static bool sysfs_dev(unsigned int maj, unsigned int min, char *buf)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", maj, min);
	return realpath(path, buf) != NULL;
}

/* Is @other the device @self or one of its partitions? */
static bool same_or_partition(const char *self, const char *other)
{
	size_t n = strlen(self);

	return !strcmp(self, other) ||
	       (!strncmp(self, other, n) && other[n] == '/' &&
		!strchr(other + n + 1, '/'));
}

/* Mount point of @dev or a partition of it from mountinfo, if any. */
static bool find_mount(dev_t dev, char *mnt, size_t len)
{
	char self[PATH_MAX], other[PATH_MAX], point[PATH_MAX];
	unsigned int maj, min;
	bool found = false;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (!sysfs_dev(major(dev), minor(dev), self))
		return false;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		/* id parent MAJ:MIN root mountpoint ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, point) != 3)
			continue;
		if (sysfs_dev(maj, min, other) && same_or_partition(self, other)) {
			snprintf(mnt, len, "%s", point);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* Someone holds the device exclusively (a mount, md, dm, another tier). */
static bool in_use(const char *path)
{
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EBUSY;
}

/* libblkid: a filesystem/RAID/LVM superblock or a partition table. */
static bool find_signature(const char *path, char *what, size_t len)
{
	const char *type = NULL;
	blkid_probe pr;
	int ret;

	pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return false;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	ret = blkid_do_safeprobe(pr);
	if (ret == -2) {
		snprintf(what, len, "several conflicting signatures");
	} else if (ret == 0 && !blkid_probe_lookup_value(pr, "TYPE", &type, NULL)) {
		snprintf(what, len, "a%s %s signature",
			 strchr("aeiou", type[0]) ? "n" : "", type);
	} else if (ret == 0 && !blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL)) {
		snprintf(what, len, "a %s partition table", type);
	}
	blkid_free_probe(pr);
	return ret == -2 || type;
}

static int device_bytes(const char *path, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLKGETSIZE64, bytes))
		ret = -errno;
	close(fd);
	return ret;
}

void kvt_dev_check(const char *path, struct kvt_devcheck *c)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->error = stat(path, &st) ? -errno : device_bytes(path, &c->bytes);
	if (c->error) {
		c->problems |= KVT_DEV_UNREADABLE;
		return;
	}
	if (find_mount(st.st_rdev, c->mountpoint, sizeof(c->mountpoint)))
		c->problems |= KVT_DEV_MOUNTED;
	else if (in_use(path))
		c->problems |= KVT_DEV_IN_USE;
	if (find_signature(path, c->signature, sizeof(c->signature)))
		c->problems |= KVT_DEV_SIGNATURE;
	if (c->bytes < KVT_MIN_DEVICE_BYTES)
		c->problems |= KVT_DEV_TOO_SMALL;
}

void kvt_dev_report(const char *path, const struct kvt_devcheck *c,
		    const char *prefix)
{
	const char *p = prefix;
	char sz[32];

	if (c->problems & KVT_DEV_UNREADABLE)
		fprintf(stderr, "kvtierctl: %s%s: cannot read: %s\n", p, path,
			strerror(-c->error));
	if (c->problems & KVT_DEV_NOT_NVME)
		fprintf(stderr, "kvtierctl: %s%s is not an NVMe namespace\n", p, path);
	if (c->problems & KVT_DEV_MOUNTED)
		fprintf(stderr, "kvtierctl: %s%s is mounted on %s\n", p, path,
			c->mountpoint);
	if (c->problems & KVT_DEV_IN_USE)
		fprintf(stderr, "kvtierctl: %s%s is in use (held open exclusively: a mount, md/dm, another tier)\n",
			p, path);
	if (c->problems & KVT_DEV_SIGNATURE)
		fprintf(stderr, "kvtierctl: %s%s carries %s; erase it first (wipefs -a) if its data is not needed\n",
			p, path, c->signature);
	if (c->problems & KVT_DEV_TOO_SMALL)
		fprintf(stderr, "kvtierctl: %s%s is too small: %s, smaller than the minimum of 16 MiB\n",
			p, path, fmt_size(sz, sizeof(sz), c->bytes));
}
