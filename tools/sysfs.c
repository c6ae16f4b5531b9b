// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: the module's sysfs attributes and parameters, and the paths of
 * its debugfs files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"

const char *sys_path(char *buf, size_t len, const char *fmt, ...)
{
	const char *root = getenv("KVTIERCTL_SYSROOT");
	size_t n = 0;
	va_list ap;

	if (root && *root)
		n = (size_t)snprintf(buf, len, "%s", root);
	if (n >= len)
		n = len - 1;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	return buf;
}

static const char *tier_path(char *buf, size_t len, unsigned int id,
			     const char *attr)
{
	return sys_path(buf, len, "/sys/class/kvtier/kvtier%u/%s", id, attr);
}

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

int tier_attr_str(unsigned int id, const char *attr, char *buf, size_t len)
{
	char path[512];

	return read_text(tier_path(path, sizeof(path), id, attr), buf, len);
}

int tier_attr_u64(unsigned int id, const char *attr, uint64_t *v)
{
	char buf[64];
	int ret = tier_attr_str(id, attr, buf, sizeof(buf));

	if (ret)
		return ret;
	return parse_u64(buf, v) ? -EIO : 0;
}

int tier_attr_write(unsigned int id, const char *attr, const char *val)
{
	char path[512];
	ssize_t n;
	int fd, ret = 0;

	fd = open(tier_path(path, sizeof(path), id, attr), O_WRONLY | O_CLOEXEC);
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

int read_num_tiers(unsigned int *n)
{
	char path[512], buf[32];
	uint64_t v;
	int ret;

	ret = read_text(sys_path(path, sizeof(path),
				 "/sys/module/kvtier/parameters/num_tiers"),
			buf, sizeof(buf));
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

	if (!stat(tier_path(path, sizeof(path), id, ""), &st))
		return 0;
	if (read_num_tiers(&n))
		return fail("the kvtier module is not loaded");
	return fail("no tier %u: the module has %u (num_tiers)", id, n);
}

FILE *tier_debugfs_open(unsigned int id, const char *file)
{
	char path[512];

	return fopen(sys_path(path, sizeof(path),
			      "/sys/kernel/debug/kvtier/kvtier%u/%s", id, file),
		     "re");
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
