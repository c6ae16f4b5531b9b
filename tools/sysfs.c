// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: the module's parameters, the tiers' directories and the paths
 * of their debugfs files. Attributes are read and written by libkvtier
 * (kvtier_tier_attr_get(3)).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

/* Read a small text file into @buf without its trailing newline. */
static int read_text(const char *path, char *buf, size_t len)
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
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int tier_attr_u64(unsigned int id, const char *attr, uint64_t *v)
{
	char buf[64];
	int ret = kvtier_tier_attr_get(id, attr, buf, sizeof(buf));

	if (ret)
		return ret;
	return parse_u64(buf, v) ? -EIO : 0;
}

int read_num_tiers(unsigned int *n)
{
	char buf[32];
	uint64_t v;
	int ret;

	ret = read_text("/sys/module/kvtier/parameters/num_tiers", buf,
			sizeof(buf));
	if (ret)
		return ret;
	if (parse_u64(buf, &v) || v > KVT_MAX_TIERS)
		return -EIO;
	*n = (unsigned int)v;
	return 0;
}

int tier_check(unsigned int id)
{
	char path[512];
	unsigned int n;
	struct stat st;

	snprintf(path, sizeof(path), "/sys/class/kvtier/kvtier%u", id);
	if (!stat(path, &st))
		return 0;
	if (read_num_tiers(&n))
		return fail("the kvtier module is not loaded");
	return fail("no tier %u: the module has %u (num_tiers)", id, n);
}

FILE *tier_debugfs_open(unsigned int id, const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvtier/kvtier%u/%s", id,
		 file);
	return fopen(path, "re");
}

int debugfs_error(unsigned int id, const char *file, int err)
{
	switch (err) {
	case -ENOENT:
		return fail("kvtier%u: no debugfs %s file (is debugfs mounted on /sys/kernel/debug? does this module have it?)",
			    id, file);
	case -EACCES:
	case -EPERM:
		return fail("kvtier%u: %s: %s (debugfs needs root)", id, file,
			    strerror(-err));
	case -EPROTONOSUPPORT:
		return fail("kvtier%u: %s: format version not supported (a newer module? a newer kvtierctl reads it)",
			    id, file);
	case -EPROTO:
		return fail("kvtier%u: %s: malformed line", id, file);
	}
	return fail("kvtier%u: %s: %s", id, file, strerror(-err));
}
