// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: is a block device safe to hand to a tier? `attach` refuses a
 * device that is mounted, held by someone else, carries a filesystem,
 * RAID/LVM or partition-table signature (libblkid), or is too small to be
 * useful; `attach --format`, which destroys what the device holds, names
 * the signature it destroys. libblkid does not know kvtier's own format:
 * its superblocks are read here (include/uapi/linux/kvtier_format.h).
 */
#define _GNU_SOURCE
#include <blkid/blkid.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/kvtier_format.h>
#include <stddef.h>
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

/* CRC32C as the kernel's crc32c(): reflected, no final inversion. */
static uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return crc;
}

/* One superblock copy, judged as the module judges it (kmod/store.c). */
static enum kvt_format_state super_state(const struct kvtier_disk_super *sb)
{
	struct kvtier_disk_super tmp;

	if (le64toh(sb->magic) != KVTIER_SB_MAGIC)
		return KVT_FORMAT_NONE;
	if (le32toh(sb->version) > KVTIER_FORMAT_VERSION ||
	    (le64toh(sb->feature_incompat) & ~KVTIER_FEATURE_INCOMPAT_SUPP) ||
	    (le64toh(sb->feature_ro_compat) & ~KVTIER_FEATURE_RO_COMPAT_SUPP))
		return KVT_FORMAT_NEWER;
	tmp = *sb;
	tmp.crc = 0;
	if (!le32toh(sb->version) ||
	    le32toh(sb->header_size) != sizeof(*sb) ||
	    le32toh(sb->crc) != crc32c(~0U, &tmp, sizeof(tmp)) ||
	    (le32toh(sb->version) == 1 ? le64toh(sb->feature_incompat) != 0 :
	     !(le64toh(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_JOURNAL) ||
	     !(le64toh(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_EXTENTS) !=
	     (le32toh(sb->version) == 2) ||
	     (le32toh(sb->version) == 2 &&
	      (le64toh(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_CRCS_RUN)) ||
	     !(le64toh(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_CRC_RUNS) !=
	     (le32toh(sb->version) < 4) ||
	     !(le64toh(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_FILE_SIZES) !=
	     (le32toh(sb->version) < 5)))
		return KVT_FORMAT_DAMAGED;
	return KVT_FORMAT_OK;
}

/* Read block @blk of @fd (opened O_DIRECT) into the aligned @buf. */
static int read_block(int fd, uint64_t blk, void *buf)
{
	ssize_t n = pread(fd, buf, KVTIER_BLOCK_SIZE,
			  (off_t)(blk * KVTIER_BLOCK_SIZE));

	if (n < 0)
		return -errno;
	return n == KVTIER_BLOCK_SIZE ? 0 : -EIO;
}

/*
 * Whether version-2 superblock @sb's journal holds a transaction after its
 * checkpoint (the one the module would replay first, at journal_head or
 * at the next lap's block 0); @buf is a block-sized aligned buffer.
 */
static int journal_pending(int fd, const struct kvtier_disk_super *sb,
			   unsigned char *buf)
{
	const struct kvtier_disk_txn *t = (const void *)buf;
	uint64_t jb = le64toh(sb->journal_blocks), pos = le64toh(sb->journal_head);
	int i;

	for (i = 0; jb && i < 2; i++) {
		if (!read_block(fd, le64toh(sb->data_start) + le64toh(sb->journal_start) +
				pos % jb, buf) &&
		    le64toh(t->magic) == KVTIER_TXN_MAGIC &&
		    le64toh(t->seq) == le64toh(sb->generation) + 1 &&
		    le64toh(t->pos) == pos && !memcmp(t->uuid, sb->uuid, sizeof(t->uuid)))
			return 1;
		if (!(pos % jb))
			break;
		pos = (pos / jb + 1) * jb;
	}
	return 0;
}

int kvt_format_probe(const char *path, struct kvt_format *f)
{
	const struct kvtier_disk_super *best = NULL;
	const struct kvtier_disk_ckpt *ck;
	unsigned char *buf;
	int fd, i, ret, copy = 0;
	uint64_t blk;

	memset(f, 0, sizeof(*f));
	f->nr_regions = -1;
	f->lease_state = -1;
	/* O_DIRECT: the module writes with bios, around the page cache. */
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (posix_memalign((void **)&buf, KVTIER_BLOCK_SIZE, 3 * KVTIER_BLOCK_SIZE)) {
		close(fd);
		return -ENOMEM;
	}
	ret = read_block(fd, 0, buf);
	if (!ret)
		ret = read_block(fd, 1, buf + KVTIER_BLOCK_SIZE);
	for (i = 0; !ret && i < 2; i++) {
		const struct kvtier_disk_super *sb =
			(const void *)(buf + i * KVTIER_BLOCK_SIZE);
		enum kvt_format_state st = super_state(sb);

		if (st == KVT_FORMAT_NEWER) {
			f->state = st;
			f->version = le32toh(sb->version);
		} else if (st == KVT_FORMAT_DAMAGED && f->state == KVT_FORMAT_NONE) {
			f->state = st;
		} else if (st == KVT_FORMAT_OK &&
			   (!best || le64toh(sb->generation) > le64toh(best->generation))) {
			best = sb;
			copy = i;
		}
	}
	/* A newer copy wins, as in the module: it refuses to attach. */
	if (best && f->state != KVT_FORMAT_NEWER) {
		f->state = KVT_FORMAT_OK;
		f->version = le32toh(best->version);
		f->generation = le64toh(best->generation);
		f->format_time = (int64_t)le64toh(best->format_time);
		f->commit_time = (int64_t)le64toh(best->commit_time);
	}
	/* Checkpoint area i goes with superblock copy i (v1: gen % 2, the same). */
	if (f->state == KVT_FORMAT_OK) {
		blk = le64toh(best->meta_start) +
		      copy * le64toh(best->meta_blocks);
		ck = (const void *)(buf + 2 * KVTIER_BLOCK_SIZE);
		if (!read_block(fd, blk, buf + 2 * KVTIER_BLOCK_SIZE) &&
		    le64toh(ck->magic) == KVTIER_CKPT_MAGIC &&
		    le64toh(ck->generation) == f->generation)
			f->nr_regions = (int64_t)le64toh(ck->nr_regions);
	}
	if (f->state == KVT_FORMAT_OK && f->version >= 2)
		f->journal_pending = journal_pending(fd, best, buf + 2 * KVTIER_BLOCK_SIZE);
	if (f->state == KVT_FORMAT_OK &&
	    (le64toh(best->feature_ro_compat) & KVTIER_FEATURE_RO_COMPAT_LEASE)) {
		const struct kvtier_disk_lease *l = (const void *)(buf + 2 * KVTIER_BLOCK_SIZE);
		struct kvtier_disk_lease tmp;
		char uuid[16];

		memcpy(uuid, best->uuid, sizeof(uuid));
		f->lease_state = 2;
		if (!read_block(fd, le64toh(best->lease_block), buf + 2 * KVTIER_BLOCK_SIZE)) {
			tmp = *l;
			tmp.crc = 0;
			if (le64toh(l->magic) == KVTIER_LEASE_MAGIC &&
			    le32toh(l->crc) == crc32c(~0U, &tmp, sizeof(tmp)) &&
			    !memcmp(l->uuid, uuid, sizeof(uuid))) {
				f->lease_state = le32toh(l->state) == KVTIER_LEASE_FREE ?
						 KVTIER_LEASE_FREE : KVTIER_LEASE_HELD;
				memcpy(f->lease_host, l->host, sizeof(l->host));
				f->lease_tier = le32toh(l->tier);
				f->lease_interval_ms = le32toh(l->interval_ms);
				f->lease_renewed = (int64_t)le64toh(l->renewed);
			}
		}
	}
	free(buf);
	close(fd);
	return ret;
}

const char *kvt_format_describe(char *buf, size_t len, const struct kvt_format *f)
{
	char t[32], n[112] = "";

	switch (f->state) {
	case KVT_FORMAT_NONE:
		snprintf(buf, len, "no kvtier format");
		break;
	case KVT_FORMAT_DAMAGED:
		snprintf(buf, len, "a damaged kvtier format (no superblock copy with a valid checksum)");
		break;
	case KVT_FORMAT_NEWER:
		snprintf(buf, len, "a kvtier format newer than this kvtierctl knows (version %u)",
			 f->version);
		break;
	case KVT_FORMAT_OK:
		if (f->nr_regions >= 0)
			snprintf(n, sizeof(n), ", %lld persistent region%s%s",
				 (long long)f->nr_regions, f->nr_regions == 1 ? "" : "s",
				 f->journal_pending ? " at its last checkpoint, later commits in its journal" : "");
		snprintf(buf, len, "a kvtier format (version %u%s, last commit %s)",
			 f->version, n, fmt_time(t, sizeof(t), f->commit_time));
		break;
	}
	return buf;
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
	/*
	 * A kvtier superblock in block 0 is the device's format whatever
	 * libblkid still finds elsewhere (a backup GPT header at the end, an
	 * md superblock): the module is the judge of it.
	 */
	kvt_format_probe(path, &c->kvtier);
	if (find_signature(path, c->signature, sizeof(c->signature)) &&
	    c->kvtier.state == KVT_FORMAT_NONE)
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
		fprintf(stderr, "kvtierctl: %s%s carries %s; if its data is not needed, attach --format destroys it\n",
			p, path, c->signature);
	if (c->problems & KVT_DEV_TOO_SMALL)
		fprintf(stderr, "kvtierctl: %s%s is too small: %s, smaller than the minimum of 16 MiB\n",
			p, path, fmt_size(sz, sizeof(sz), c->bytes));
}
