// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierfs: a tier's persistent named regions as the files of a mount.
 * Bytes round-trip between the ioctl API and the mount both ways, through
 * read/write, mmap and fio's own verify, across unmount, detach and
 * attach; names, modes, unlink and every documented error.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <dirent.h>
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define MNT	"/tmp/kvtierfs"
#define KVTIERFS_MAGIC	0x6b767466

static int kvtierfs_mount(const char *src, unsigned long flags,
			  const char *opts)
{
	mkdir(MNT, 0755);
	return mount(src, MNT, "kvtierfs", flags, opts) ? -errno : 0;
}

/* Make persistent region @name of @len bytes, filled with @seed. */
static int make_region(const char *name, size_t len, unsigned int mode,
		       unsigned long long seed)
{
	int fd = kvt_tier_open(0, O_RDWR), ret;
	unsigned char *p;

	if (fd < 0)
		return -errno;
	ret = kvt_bind_name(fd, name, len, KVTIER_OPEN_CREATE |
			    KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT, mode);
	if (!ret) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
		} else {
			kvt_fill(p, len, 0, seed);
			ret = msync(p, len, MS_SYNC) ? -errno : 0;
			munmap(p, len);
		}
	}
	close(fd);
	return ret;
}

/* The names of the mount's root, sorted into @out ("a,b,"); the count. */
static int list_dir(char *out, size_t len)
{
	struct dirent **ents;
	int n, i, files = 0;

	out[0] = '\0';
	n = scandir(MNT, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, "..")) {
			if (ents[i]->d_type != DT_REG)
				files = -1000;
			files++;
			/* As many names as fit, each with its comma. */
			if (strlen(out) + strlen(ents[i]->d_name) + 2 <= len) {
				strcat(out, ents[i]->d_name);
				strcat(out, ",");
			}
		}
		free(ents[i]);
	}
	free(ents);
	return files;
}

/* Read all @len bytes of @path into a fresh buffer and check @seed. */
static long long check_file(const char *path, size_t len,
			    unsigned long long seed)
{
	unsigned char *buf = malloc(len);
	long long bad = -2;
	int fd = open(path, O_RDONLY);

	if (fd >= 0 && buf && pread(fd, buf, len, 0) == (ssize_t)len)
		bad = kvt_check(buf, len, 0, seed);
	if (fd >= 0)
		close(fd);
	free(buf);
	return bad;
}

/*
 * Wait up to 5 s for the tier's namespace use to be @want bytes: an unlink
 * frees its region's slots at the commit after the last holder let go,
 * which runs on a worker.
 */
static long long wait_used(long long want)
{
	long long got = -1;

	for (int i = 0; i < 50 && (got = kvt_tier_num(0, "used")) != want; i++)
		usleep(100 * 1000);
	return got;
}

static int detach_attach(void)
{
	int ret = kvt_tier_write(0, "backing_dev", "none");

	return ret ? ret : kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0"));
}

/*
 * Teardown: whatever a failed test left (mounted, regions) goes, so that
 * the next test starts from an empty namespace.
 */
static void drop_all(void)
{
	struct kvtier_region_entry e[16];
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = 16 };
	int fd, i;

	umount(MNT);
	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0)
		return;
	if (!ioctl(fd, KVTIER_IOC_REGION_LIST, &rl))
		for (i = 0; i < (int)rl.count && i < 16; i++)
			kvt_unlink_name(fd, e[i].name);
	close(fd);
}

/*
 * The crash: unmount, detach, put @snap (the metadata as it was when it was
 * taken) back over the namespace, attach and mount again. The caller closed
 * every file of the tier.
 */
static int crash_to(struct kvt_jsnap *snap)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	int ret;

	if (umount(MNT))
		return -errno;
	ret = kvt_tier_write(0, "backing_dev", "none");
	if (!ret)
		ret = kvt_jsnap_put(ns, snap);
	kvt_jsnap_free(snap);
	if (!ret)
		ret = kvt_tier_write(0, "backing_dev", ns);
	return ret ? ret : kvtierfs_mount("kvtier0", 0, NULL);
}

KVT_TIER_FIXTURE("", 4, , , drop_all());

/*
 * A region made through the ioctls is a file of the mount, with its size,
 * mode and bytes; what the mount writes (pwrite, mmap) the ioctl API reads,
 * over a file four times the host budget (pages go to the namespace).
 */
TEST_F_TIMEOUT(tier, regions_are_files_both_ways, 300)
{
	size_t len = 16 * MiB;
	struct kvtier_region_info ri;
	unsigned char *p, *buf;
	char names[256];
	struct stat st;
	int fd, fb;

	ASSERT_EQ(0, make_region("kv:a", len, 0640, 1));
	ASSERT_EQ(0, make_region("kv:b", MiB, 0600, 2));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));

	ASSERT_EQ(2, list_dir(names, sizeof(names)));
	ASSERT_STREQ("kv:a,kv:b,", names);
	ASSERT_EQ(0, stat(MNT "/kv:a", &st));
	ASSERT_EQ((off_t)len, st.st_size);
	ASSERT_EQ((mode_t)(S_IFREG | 0640), st.st_mode);
	ASSERT_EQ(0U, st.st_uid);
	ASSERT_EQ(1U, st.st_nlink);
	ASSERT_GE((long long)st.st_blocks * 512, (long long)len - 4 * MiB);
	ASSERT_EQ(0, stat(MNT, &st));
	ASSERT_EQ((mode_t)(S_IFDIR | 01770), st.st_mode);
	ASSERT_EQ(0U, st.st_uid);
	ASSERT_EQ(0U, st.st_gid);

	/* read(): every byte the ioctl file wrote. */
	ASSERT_EQ(-1, check_file(MNT "/kv:a", len, 1));
	ASSERT_EQ(-1, check_file(MNT "/kv:b", MiB, 2));

	/* pwrite and a shared mapping of the file, then fsync. */
	fd = open(MNT "/kv:a", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_region_info(fd, &ri));
	ASSERT_STREQ("kv:a", ri.name);
	ASSERT_EQ((unsigned long long)len, ri.size);
	buf = malloc(MiB);
	ASSERT_NE(NULL, buf);
	kvt_fill(buf, MiB, 2 * MiB, 3);
	ASSERT_EQ((ssize_t)MiB, pwrite(fd, buf, MiB, 2 * MiB));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, kvt_check(p + 2 * MiB, MiB, 2 * MiB, 3));
	kvt_fill(p + 12 * MiB, 4 * MiB, 12 * MiB, 4);
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ((off_t)len, lseek(fd, 0, SEEK_END));

	/* The ioctl API sees the same bytes. */
	fb = kvt_tier_open(0, O_RDONLY);
	ASSERT_EQ(0, kvt_bind_name(fb, "kv:a", 0, KVTIER_OPEN_RDONLY, 0));
	ASSERT_EQ((ssize_t)MiB, pread(fb, buf, MiB, 2 * MiB));
	ASSERT_EQ(-1, kvt_check(buf, MiB, 2 * MiB, 3));
	ASSERT_EQ((ssize_t)MiB, pread(fb, buf, MiB, 15 * MiB));
	ASSERT_EQ(-1, kvt_check(buf, MiB, 15 * MiB, 4));
	ASSERT_EQ((ssize_t)MiB, pread(fb, buf, MiB, 0));
	ASSERT_EQ(-1, kvt_check(buf, MiB, 0, 1));
	close(fb);
	munmap(p, len);
	close(fd);
	free(buf);

	/* Mounted: the namespace stays attached. */
	ASSERT_EQ(-EBUSY, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, detach_attach());
	ASSERT_EQ(0, kvtierfs_mount("/dev/kvtier0", 0, NULL));
	ASSERT_EQ(-1, check_file(MNT "/kv:b", MiB, 2));
	fd = open(MNT "/kv:a", O_RDONLY);
	ASSERT_GE(fd, 0);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(-1, kvt_check(p, 2 * MiB, 0, 1));
	ASSERT_EQ(-1, kvt_check(p + 2 * MiB, MiB, 2 * MiB, 3));
	ASSERT_EQ(-1, kvt_check(p + 3 * MiB, 9 * MiB, 3 * MiB, 1));
	ASSERT_EQ(-1, kvt_check(p + 12 * MiB, 4 * MiB, 12 * MiB, 4));
	munmap(p, len);
	close(fd);

	ASSERT_EQ(0, unlink(MNT "/kv:a"));
	ASSERT_EQ(0, unlink(MNT "/kv:b"));
	ASSERT_EQ(0, list_dir(names, sizeof(names)));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, wait_used(0));
}

/*
 * unlink() takes the name at once and the bytes with the last open file,
 * as KVTIER_IOC_REGION_UNLINK does; a name unlinked or made again through
 * the ioctls is seen by the mount at once, never as the old file.
 */
TEST_F_TIMEOUT(tier, unlink_and_names_changed_underneath, 300)
{
	struct stat st, st2;
	unsigned char buf[4096];
	char names[256];
	int fd;

	ASSERT_EQ(0, make_region("a", MiB, 0600, 5));
	ASSERT_EQ(0, make_region("b", MiB, 0600, 6));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	fd = open(MNT "/a", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, unlink(MNT "/a"));
	ASSERT_EQ(-1, stat(MNT "/a", &st));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(-ENOENT, kvt_unlink_name(self->fd, "a"));
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(0U, st.st_nlink);
	ASSERT_EQ((ssize_t)sizeof(buf), pread(fd, buf, sizeof(buf), MiB - 4096));
	ASSERT_EQ(-1, kvt_check(buf, sizeof(buf), MiB - 4096, 5));
	close(fd);

	/* Unlinked through the ioctls, then made again with other bytes. */
	ASSERT_EQ(0, stat(MNT "/b", &st));
	fd = open(MNT "/b", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "b"));
	ASSERT_EQ(-1, stat(MNT "/b", &st2));
	ASSERT_EQ(ENOENT, errno);
	ASSERT_EQ(0, make_region("b", 2 * MiB, 0644, 7));
	ASSERT_EQ(0, stat(MNT "/b", &st2));
	ASSERT_NE(st.st_ino, st2.st_ino);
	ASSERT_EQ((off_t)(2 * MiB), st2.st_size);
	ASSERT_EQ(-1, check_file(MNT "/b", 2 * MiB, 7));
	/* The old file, still open, has its old bytes. */
	ASSERT_EQ((ssize_t)sizeof(buf), pread(fd, buf, sizeof(buf), 0));
	ASSERT_EQ(-1, kvt_check(buf, sizeof(buf), 0, 6));
	close(fd);
	ASSERT_EQ(1, list_dir(names, sizeof(names)));
	ASSERT_STREQ("b,", names);
	ASSERT_EQ(0, unlink(MNT "/b"));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, wait_used(0));
}

static int open_errno(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

struct user_try {
	int rd, rw, unl;
};

static int try_as_user(void *arg)
{
	struct user_try *t = arg;

	t->rd = open_errno(MNT "/m", O_RDONLY);
	t->rw = open_errno(MNT "/m", O_RDWR);
	t->unl = unlink(MNT "/m") ? -errno : 0;
	return (t->rd == -EACCES) | (t->rw == -EACCES) << 1 |
	       (t->unl == -EPERM) << 2;
}

/* The errno of opening @arg (a path) read-only: 0 if it opens. */
static int open_as_user(void *arg)
{
	return -open_errno(arg, O_RDONLY);
}

static int try_as_user_after_chmod(void *arg)
{
	struct user_try *t = arg;

	t->rd = check_file(MNT "/m", MiB, 8) == -1 ? 0 : -EIO;
	t->rw = open_errno(MNT "/m", O_RDWR);
	return (t->rd == 0) | (t->rw == -EACCES) << 1;
}

/*
 * The mode bits are the VFS's to check, the sticky root keeps others from
 * unlinking, and chmod is kept on the namespace.
 */
TEST_F_TIMEOUT(tier, modes_are_checked_and_chmod_kept, 300)
{
	struct kvtier_region_entry e[2];
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = 2 };
	struct user_try t;
	struct stat st;

	ASSERT_EQ(0, make_region("m", MiB, 0600, 8));
	/* By default the root lets in root alone. */
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, chmod(MNT "/m", 0644));
	ASSERT_EQ(EACCES, kvt_as_user(65534, 65534, NULL, 0, open_as_user,
				      (void *)(MNT "/m")));
	ASSERT_EQ(0, chmod(MNT "/m", 0600));
	/* Opened to a group: the files' own mode bits, the sticky root. */
	ASSERT_EQ(0, mount(NULL, MNT, NULL, MS_REMOUNT, "gid=65534,mode=1770"));
	ASSERT_EQ(0, stat(MNT, &st));
	ASSERT_EQ((mode_t)(S_IFDIR | 01770), st.st_mode);
	ASSERT_EQ(65534U, st.st_gid);
	ASSERT_EQ(0, kvt_run("grep -q '^kvtier0 " MNT " kvtierfs rw,.*gid=65534' /proc/self/mounts"));
	ASSERT_EQ(7, kvt_as_user(65534, 65534, NULL, 0, try_as_user, &t));
	ASSERT_EQ(0, chmod(MNT "/m", 0644));
	ASSERT_EQ(0, stat(MNT "/m", &st));
	ASSERT_EQ((mode_t)(S_IFREG | 0644), st.st_mode);
	ASSERT_EQ(3, kvt_as_user(65534, 65534, NULL, 0, try_as_user_after_chmod, &t));
	ASSERT_EQ(-1, chmod(MNT "/m", 04644));
	ASSERT_EQ(EINVAL, errno);
	ASSERT_EQ(0, umount(MNT));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, detach_attach());
	self->fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_LIST, &rl));
	ASSERT_EQ(1U, rl.count);
	ASSERT_EQ(0644U, e[0].mode);
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "m"));
}

/* Every refusal, with the errno the documentation gives. */
TEST_F_TIMEOUT(tier, errors, 300)
{
	struct stat st;
	char long_name[sizeof(MNT) + 80];
	struct kvtier_region_flags fl = { .set = KVTIER_REGION_SEALED };
	struct statfs sf;
	int fd;

	ASSERT_EQ(0, make_region("e", MiB, 0644, 9));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("tier0", 0, NULL));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier", 0, NULL));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0x", 0, NULL));
	ASSERT_EQ(-ENODEV, kvtierfs_mount("kvtier7", 0, NULL));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0", 0, "size=1"));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0", 0, "mode=17777"));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0", 0, "mode=8"));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0", 0, "uid=root"));
	ASSERT_EQ(-EINVAL, kvtierfs_mount("kvtier0", 0, "gid=-1"));
	/* A file of /dev/kvtierN opened read-only maps no region. */
	fd = kvt_tier_open(0, O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_EQ(EINVAL, errno);
	close(fd);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(-ENODEV, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));

	/* Not supported yet: smaller sizes, directories, links. */
	ASSERT_EQ(-EOPNOTSUPP, open_errno(MNT "/e", O_RDWR | O_TRUNC));
	ASSERT_EQ(-EINVAL, open_errno(MNT "/new file", O_CREAT | O_RDWR));
	ASSERT_EQ(-1, truncate(MNT "/e", 4096));
	ASSERT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(0, truncate(MNT "/e", MiB));
	ASSERT_EQ(-1, chown(MNT "/e", 1, 1));
	ASSERT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(-1, chmod(MNT, 0755));
	ASSERT_EQ(EOPNOTSUPP, errno);
	fd = open(MNT, O_RDONLY | O_DIRECTORY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	ASSERT_EQ(-1, mkdir(MNT "/d", 0755));
	ASSERT_EQ(EPERM, errno);
	ASSERT_EQ(-1, link(MNT "/e", MNT "/f"));
	ASSERT_EQ(EPERM, errno);
	ASSERT_EQ(-1, symlink("e", MNT "/f"));
	ASSERT_EQ(EPERM, errno);
	ASSERT_EQ(-1, mknod(MNT "/f", S_IFIFO | 0600, 0));
	ASSERT_EQ(EPERM, errno);
	ASSERT_EQ(-1, setxattr(MNT "/e", "user.k", "v", 1, 0));
	ASSERT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(-1, utimensat(AT_FDCWD, MNT "/e",
				(struct timespec[2]){ { 0, 0 }, { 0, 0 } }, 0));
	ASSERT_EQ(EOPNOTSUPP, errno);
	ASSERT_EQ(0, utimensat(AT_FDCWD, MNT "/e", NULL, 0));
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	memcpy(long_name, MNT "/", sizeof(MNT));
	ASSERT_EQ(-ENAMETOOLONG, open_errno(long_name, O_RDONLY));
	ASSERT_EQ(-ENOENT, open_errno(MNT "/no such", O_RDONLY));
	ASSERT_EQ(-ENOENT, open_errno(MNT "/none", O_RDONLY));

	/* statfs: slots and regions. */
	ASSERT_EQ(0, statfs(MNT, &sf));
	ASSERT_EQ(KVTIERFS_MAGIC, (long)sf.f_type);
	ASSERT_EQ(4096, (long)sf.f_bsize);
	ASSERT_EQ(63, (long)sf.f_namelen);
	ASSERT_EQ(1ULL, (unsigned long long)(sf.f_files - sf.f_ffree));
	ASSERT_EQ(kvt_tier_num(0, "used"),
		  (long long)(sf.f_blocks - sf.f_bfree) * 4096);
	ASSERT_GT(sf.f_bfree, 0ULL);

	fd = open(MNT "/e", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, fallocate(fd, 0, 0, PAGE));
	ASSERT_EQ(EOPNOTSUPP, errno);
	close(fd);

	/* Sealed: read-only for good, its size too. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(fd, 0);
	strcpy(fl.name, "e");
	ASSERT_EQ(0, ioctl(fd, KVTIER_IOC_REGION_SETFLAGS, &fl));
	ASSERT_EQ(-EPERM, open_errno(MNT "/e", O_RDWR));
	ASSERT_EQ(-1, truncate(MNT "/e", 2 * MiB));
	ASSERT_EQ(EPERM, errno);
	ASSERT_EQ(-1, check_file(MNT "/e", MiB, 9));
	close(fd);

	/* A read-only mount writes nothing. */
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", MS_RDONLY, NULL));
	ASSERT_EQ(-EROFS, open_errno(MNT "/e", O_WRONLY));
	ASSERT_EQ(-1, unlink(MNT "/e"));
	ASSERT_EQ(EROFS, errno);
	ASSERT_EQ(-1, check_file(MNT "/e", MiB, 9));
	/* Only the ioctls about the file's own region and tier. */
	fd = open(MNT "/e", O_RDONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, ioctl(fd, KVTIER_IOC_REGION_LIST, &(struct kvtier_region_list){ 0 }));
	ASSERT_EQ(ENOTTY, errno);
	ASSERT_EQ(-1, ioctl(fd, KVTIER_IOC_REGION_UNLINK, &fl));
	ASSERT_EQ(ENOTTY, errno);
	close(fd);
	ASSERT_EQ(0, umount(MNT));

	/*
	 * A tier attached read-only (a namespace shared between hosts):
	 * mounted ro only, never remounted rw, its sealed files readable.
	 */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_knob(0, "read_only", 1));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(-EROFS, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", MS_RDONLY, NULL));
	ASSERT_EQ(-1, check_file(MNT "/e", MiB, 9));
	ASSERT_EQ(-1, mount(NULL, MNT, NULL, MS_REMOUNT, NULL));
	ASSERT_EQ(EROFS, errno);
	/* A reconfigure that does not ask for read-write (fspick) is fine. */
	fd = fspick(AT_FDCWD, MNT, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fsconfig(fd, FSCONFIG_SET_STRING, "mode", "1775", 0));
	ASSERT_EQ(0, fsconfig(fd, FSCONFIG_CMD_RECONFIGURE, NULL, NULL, 0));
	close(fd);
	ASSERT_EQ(0, stat(MNT, &st));
	ASSERT_EQ((mode_t)(S_IFDIR | 01775), st.st_mode);
	ASSERT_EQ(-1, unlink(MNT "/e"));
	ASSERT_EQ(EROFS, errno);
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_knob(0, "read_only", 0));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));

	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, unlink(MNT "/e"));
	ASSERT_EQ(0, umount(MNT));
}

/*
 * syncfs() makes every dirty page of the tier's persistent regions durable
 * without a detach, as fsync() does for one file: with the metadata put
 * back as it was right after them (a power cut), the bytes are there.
 */
TEST_F_TIMEOUT(tier, fsync_and_syncfs_are_durable, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	struct kvt_jsnap snap = {};
	unsigned char *buf;
	int fa, fb;

	ASSERT_EQ(0, kvt_knob(0, "discard", 0));
	ASSERT_EQ(0, make_region("s:a", 2 * MiB, 0600, 20));
	ASSERT_EQ(0, make_region("s:b", 2 * MiB, 0600, 21));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	buf = malloc(2 * MiB);
	ASSERT_NE(NULL, buf);
	fa = open(MNT "/s:a", O_RDWR);
	fb = open(MNT "/s:b", O_RDWR);
	ASSERT_GE(fa, 0);
	ASSERT_GE(fb, 0);
	kvt_fill(buf, 2 * MiB, 0, 22);
	ASSERT_EQ((ssize_t)(2 * MiB), pwrite(fa, buf, 2 * MiB, 0));
	ASSERT_EQ(0, fsync(fa));
	kvt_fill(buf, 2 * MiB, 0, 23);
	ASSERT_EQ((ssize_t)(2 * MiB), pwrite(fb, buf, 2 * MiB, 0));
	ASSERT_EQ(0, syncfs(fb));
	ASSERT_EQ(0, kvt_jsnap_take(ns, &snap));

	close(fa);
	close(fb);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, crash_to(&snap));
	ASSERT_EQ(-1, check_file(MNT "/s:a", 2 * MiB, 22));
	ASSERT_EQ(-1, check_file(MNT "/s:b", 2 * MiB, 23));
	ASSERT_EQ(0, unlink(MNT "/s:a"));
	ASSERT_EQ(0, unlink(MNT "/s:b"));
	ASSERT_EQ(0, umount(MNT));
	free(buf);
}

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/*
 * A listing longer than one getdents64() call: each name once, though
 * names come and go between the calls; a new listing has the changes.
 */
TEST_F_TIMEOUT(tier, long_listing_is_one_moment, 600)
{
	enum { N = 200 };
	char name[32], buf[512], names[8192];
	static unsigned char seen[N];
	int dfd, i, got = 0, calls = 0;
	long n;

	for (i = 0; i < N; i++) {
		int fd = kvt_tier_open(0, O_RDWR);

		ASSERT_GE(fd, 0);
		snprintf(name, sizeof(name), "l:%03d", i);
		ASSERT_EQ(0, kvt_bind_name(fd, name, PAGE, KVTIER_OPEN_CREATE |
					   KVTIER_OPEN_PERSISTENT, 0600));
		close(fd);
	}
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	dfd = open(MNT, O_RDONLY | O_DIRECTORY);
	ASSERT_GE(dfd, 0);
	memset(seen, 0, sizeof(seen));
	while ((n = syscall(SYS_getdents64, dfd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (void *)(buf + off);

			off += d->d_reclen;
			if (d->d_name[0] == '.')
				continue;
			ASSERT_EQ(DT_REG, d->d_type);
			ASSERT_EQ(1, sscanf(d->d_name, "l:%d", &i));
			ASSERT_TRUE(i >= 0 && i < N);
			ASSERT_EQ(0, seen[i]);
			seen[i] = 1;
			got++;
		}
		/* Between two calls: one name goes, another comes. */
		if (calls++ == 1) {
			ASSERT_EQ(0, kvt_unlink_name(self->fd, "l:199"));
			ASSERT_EQ(0, make_region("l:new", PAGE, 0600, 24));
		}
	}
	ASSERT_EQ(0, n);
	ASSERT_GT(calls, 10);
	ASSERT_EQ(N, got);
	close(dfd);
	ASSERT_EQ(N, list_dir(names, sizeof(names)));
	ASSERT_NE(NULL, strstr(names, "l:new,"));
	ASSERT_EQ(NULL, strstr(names, "l:199,"));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "l:new"));
	for (i = 0; i < N - 1; i++) {
		snprintf(name, sizeof(name), MNT "/l:%03d", i);
		ASSERT_EQ(0, unlink(name));
	}
	ASSERT_EQ(0, list_dir(names, sizeof(names)));
	ASSERT_EQ(0, umount(MNT));
}

static int renameat2_errno(const char *from, const char *to, unsigned int flags)
{
	return syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags) ?
	       -errno : 0;
}

/*
 * What the engines' file tiers do: write under a temporary name, rename
 * over the final one. Each rename is one checkpoint (no journal
 * transaction can express it), so a crash right after it - the namespace's
 * metadata put back as it was then, after a clean detach - has the new
 * names, with the bytes that went with them; a file replaced while open
 * keeps its old bytes until it is closed.
 */
TEST_F_TIMEOUT(tier, rename_is_one_checkpoint_and_survives_a_crash, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	long long commits, jcommits;
	struct kvt_jsnap snap = {};
	unsigned char buf[4096];
	char names[256];
	struct stat st;
	int fd;

	ASSERT_EQ(0, kvt_knob(0, "discard", 0));
	ASSERT_EQ(0, make_region("r:tmp", MiB, 0600, 11));
	ASSERT_EQ(0, make_region("r:old", 2 * MiB, 0600, 12));
	ASSERT_EQ(0, make_region("r:keep", MiB, 0644, 13));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	fd = open(MNT "/r:old", O_RDONLY);
	ASSERT_GE(fd, 0);

	commits = kvt_stat(0, "commits");
	jcommits = kvt_stat(0, "journal_commits");
	ASSERT_EQ(0, rename(MNT "/r:tmp", MNT "/r:old"));
	ASSERT_EQ(0, rename(MNT "/r:keep", MNT "/r:new"));
	ASSERT_EQ(jcommits, kvt_stat(0, "journal_commits"));
	ASSERT_GE(kvt_stat(0, "commits"), commits + 2);

	ASSERT_EQ(-EEXIST, renameat2_errno(MNT "/r:new", MNT "/r:old",
					   RENAME_NOREPLACE));
	ASSERT_EQ(-EINVAL, renameat2_errno(MNT "/r:new", MNT "/r:old",
					   RENAME_EXCHANGE));
	ASSERT_EQ(-EINVAL, renameat2_errno(MNT "/r:new", MNT "/r new", 0));
	ASSERT_EQ(-ENOENT, renameat2_errno(MNT "/r:tmp", MNT "/r:x", 0));
	ASSERT_EQ(2, list_dir(names, sizeof(names)));
	ASSERT_STREQ("r:new,r:old,", names);
	ASSERT_EQ(0, stat(MNT "/r:old", &st));
	ASSERT_EQ((off_t)MiB, st.st_size);
	ASSERT_EQ(-1, check_file(MNT "/r:old", MiB, 11));
	ASSERT_EQ(-1, check_file(MNT "/r:new", MiB, 13));
	/* Replaced while open: the old bytes, until the last close. */
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(0U, st.st_nlink);
	ASSERT_EQ((ssize_t)sizeof(buf), pread(fd, buf, sizeof(buf), MiB));
	ASSERT_EQ(-1, kvt_check(buf, sizeof(buf), MiB, 12));

	/* The crash: the metadata as the renames left it. */
	ASSERT_EQ(0, kvt_jsnap_take(ns, &snap));
	close(fd);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, crash_to(&snap));
	ASSERT_EQ(2, list_dir(names, sizeof(names)));
	ASSERT_STREQ("r:new,r:old,", names);
	ASSERT_EQ(-1, check_file(MNT "/r:old", MiB, 11));
	ASSERT_EQ(-1, check_file(MNT "/r:new", MiB, 13));
	ASSERT_EQ(0, unlink(MNT "/r:old"));
	ASSERT_EQ(0, unlink(MNT "/r:new"));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, wait_used(0));
}

static ssize_t write_seed(int fd, size_t len, unsigned long long base,
			  unsigned long long seed, bool append)
{
	unsigned char *buf = malloc(len + 32);
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	/* The pattern of offsets [base, base + len), from its word boundary. */
	kvt_fill(buf, (len + (base & 7) + 7) & ~7ULL, base & ~7ULL, seed);
	n = append ? write(fd, buf + (base & 7), len) :
		     pwrite(fd, buf + (base & 7), len, base);
	free(buf);
	return n;
}

/* Bytes [@off, @off + @len) of @path are @seed's pattern (or zero, seed 0). */
static int range_is(const char *path, off_t off, size_t len,
		    unsigned long long seed)
{
	unsigned char *buf = malloc(len + 32), *want = malloc(len + 32);
	int fd = open(path, O_RDONLY), ret = -1;

	if (fd >= 0 && buf && want &&
	    pread(fd, buf, len, off) == (ssize_t)len) {
		memset(want, 0, len + 32);
		if (seed)
			kvt_fill(want, (len + (off & 7) + 15) & ~7ULL,
				 off & ~7LL, seed);
		ret = memcmp(buf, want + (seed ? (off & 7) : 0), len) ? -2 : 0;
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	free(want);
	return ret;
}

/*
 * A read of 2 pages at @off (page-aligned, into page-aligned memory: the
 * direct path) of @path returns its @want bytes to the end, and writes
 * nothing past them.
 */
static int aligned_tail_is(const char *path, off_t off, ssize_t want)
{
	int fd = open(path, O_RDONLY), ret = -1;
	unsigned char *buf = NULL;
	ssize_t n;

	if (fd < 0 || posix_memalign((void **)&buf, PAGE, 2 * PAGE))
		goto out;
	memset(buf, 0xff, 2 * PAGE);
	n = pread(fd, buf, 2 * PAGE, off);
	ret = n != want ? -2 : buf[n] != 0xff ? -3 : 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -errno : st.st_size;
}

/*
 * Format version 5: files made on the mount, empty, written to any size,
 * appended to, truncated larger, written past their end; their sizes in
 * bytes and their bytes through an unmount, a detach and an attach, and
 * through a crash (the metadata as the last fsync left it). Bytes a
 * mapping wrote past the end are zero once the file grows over them.
 */
TEST_F_TIMEOUT(tier, files_are_made_and_grow, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	struct kvt_jsnap snap = {};
	unsigned char *p;
	struct stat st;
	int fd, fa;

	ASSERT_EQ(0, kvt_knob(0, "discard", 0));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	fd = open(MNT "/g:a", O_CREAT | O_EXCL | O_RDWR, 0640);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fstat(fd, &st));
	ASSERT_EQ(0, st.st_size);
	ASSERT_EQ((mode_t)(S_IFREG | 0640), st.st_mode);
	ASSERT_EQ(-EEXIST, open_errno(MNT "/g:a", O_CREAT | O_EXCL | O_RDWR));
	ASSERT_EQ(100, write_seed(fd, 100, 0, 30, false));
	ASSERT_EQ(100, size_of(MNT "/g:a"));
	ASSERT_EQ(100, lseek(fd, 0, SEEK_END));
	fa = open(MNT "/g:a", O_WRONLY | O_APPEND);
	ASSERT_GE(fa, 0);
	ASSERT_EQ(5000, write_seed(fa, 5000, 100, 30, true));
	close(fa);
	ASSERT_EQ(5100, size_of(MNT "/g:a"));
	ASSERT_EQ(0, range_is(MNT "/g:a", 0, 5100, 30));
	ASSERT_EQ(0, ftruncate(fd, 3 * MiB + 17));
	ASSERT_EQ(0, range_is(MNT "/g:a", 5100, 3 * MiB + 17 - 5100, 0));
	ASSERT_EQ(-1, ftruncate(fd, MiB));
	ASSERT_EQ(EOPNOTSUPP, errno);
	/* RLIMIT_FSIZE (bash's ulimit -f, KiB): cut at the limit, then EFBIG. */
	ASSERT_NE(0, kvt_run("bash -c 'ulimit -f 8; trap \"\" XFSZ; "
			     "head -c 20000 /dev/zero >" MNT "/g:lim' 2>/dev/null"));
	ASSERT_EQ(8192, size_of(MNT "/g:lim"));
	ASSERT_EQ(0, unlink(MNT "/g:lim"));
	/* Nothing written past the end grows nothing. */
	ASSERT_EQ(0, pwrite(fd, "", 0, 1LL << 30));
	ASSERT_EQ(3 * MiB + 17, size_of(MNT "/g:a"));
	ASSERT_EQ(0, fsync(fd));
	close(fd);

	/* Past the end: a hole, then the bytes. */
	fd = open(MNT "/g:b", O_CREAT | O_RDWR, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(4096, write_seed(fd, 4096, 10 * MiB + 3, 31, false));
	ASSERT_EQ(10 * MiB + 4099, size_of(MNT "/g:b"));
	ASSERT_EQ(0, range_is(MNT "/g:b", 0, 10 * MiB + 3, 0));
	ASSERT_EQ(0, range_is(MNT "/g:b", 10 * MiB + 3, 4096, 31));
	close(fd);

	/* A mapping writes past the end of its last page: zero once grown. */
	fa = open(MNT "/g:c", O_CREAT | O_RDWR, 0600);
	ASSERT_GE(fa, 0);
	ASSERT_EQ(100, write_seed(fa, 100, 0, 32, false));
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fa, 0);
	ASSERT_NE(MAP_FAILED, p);
	memset(p + 100, 0xa5, PAGE - 100);
	ASSERT_EQ(0, msync(p, PAGE, MS_SYNC));
	munmap(p, PAGE);
	ASSERT_EQ(0, ftruncate(fa, 2 * PAGE));
	ASSERT_EQ(0, range_is(MNT "/g:c", 0, 100, 32));
	ASSERT_EQ(0, range_is(MNT "/g:c", 100, 2 * PAGE - 100, 0));
	close(fa);

	/* Python writes a file as the engines' tiers do. */
	ASSERT_EQ(0, kvt_run("python3 -c 'open(\"" MNT "/g:py\", \"wb\")"
			     ".write(bytes(range(256)) * 1000 + b\"end\")'"));
	ASSERT_EQ(256003, size_of(MNT "/g:py"));
	fd = open(MNT "/g:empty", O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, fsync(fd));
	ASSERT_EQ(0, syncfs(fd));
	close(fd);
	close(self->fd);
	self->fd = -1;

	/* The crash: the metadata as the syncs left it. */
	ASSERT_EQ(0, kvt_jsnap_take(ns, &snap));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_jsnap_put(ns, &snap));
	kvt_jsnap_free(&snap);
	for (int round = 0; round < 2; round++) {
		/* Round 0 replays the journal; round 1 reads a checkpoint. */
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
		ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
		ASSERT_EQ(3 * MiB + 17, size_of(MNT "/g:a"));
		/* Page-aligned reads of a last page on the namespace: its bytes. */
		ASSERT_EQ(0, aligned_tail_is(MNT "/g:a", 3 * MiB, 17));
		ASSERT_EQ(0, aligned_tail_is(MNT "/g:b", 10 * MiB + PAGE, 3));
		ASSERT_EQ(0, kvt_run("test $(cat " MNT "/g:a | wc -c) -eq 3145745"));
		ASSERT_EQ(0, range_is(MNT "/g:a", 0, 5100, 30));
		ASSERT_EQ(0, range_is(MNT "/g:a", 5100, 3 * MiB + 17 - 5100, 0));
		ASSERT_EQ(10 * MiB + 4099, size_of(MNT "/g:b"));
		ASSERT_EQ(0, range_is(MNT "/g:b", 10 * MiB + 3, 4096, 31));
		ASSERT_EQ(2 * PAGE, size_of(MNT "/g:c"));
		ASSERT_EQ(0, range_is(MNT "/g:c", 100, 2 * PAGE - 100, 0));
		ASSERT_EQ(256003, size_of(MNT "/g:py"));
		ASSERT_EQ(0, kvt_run("python3 -c 'import sys; d = open(\"" MNT
				     "/g:py\", \"rb\").read(); "
				     "sys.exit(d != bytes(range(256)) * 1000 + b\"end\")'"));
		ASSERT_EQ(0, size_of(MNT "/g:empty"));
		ASSERT_EQ(0, umount(MNT));
		ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	}
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", ns));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, kvt_run("rm " MNT "/g:*"));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, wait_used(0));
}

/*
 * As another user, under a 1 MiB quota: 768 KiB twice, the first file
 * unlinked in between (its pages given back), then 2 MiB: EDQUOT.
 */
static int create_big_as_user(void *arg)
{
	static const char *const names[] = { MNT "/q:1", MNT "/q:2", MNT "/q:3" };
	static const size_t lens[] = { 768 * 1024, 768 * 1024, 2 * MiB };
	int i, fd, ret = 0;

	(void)arg;
	for (i = 0; i < 3 && !ret; i++) {
		fd = open(names[i], O_CREAT | O_RDWR, 0600);
		if (fd < 0)
			return 100 + i;
		if (write_seed(fd, lens[i], 0, 33, false) < 0)
			ret = i == 2 ? errno : 110 + i;
		close(fd);
		if (i == 0 && unlink(names[0]))
			ret = 120;
	}
	unlink(names[1]);
	unlink(names[2]);
	return i == 3 ? ret : ret ? ret : 130;
}

/*
 * A version-4 namespace has fixed sizes: no file is made or grows on it
 * (EOPNOTSUPP, EFBIG) until it is upgraded to 5; growth is charged to the
 * owner's quota (EDQUOT).
 */
TEST_F_TIMEOUT(tier, sizes_need_version_5_and_quota, 300)
{
	const char *ns = kvt_ns("KVTIER_NS0");
	int fd;

	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "format_version", "4"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", ns));
	ASSERT_EQ(0, make_region("v4", MiB, 0600, 34));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(-EOPNOTSUPP, open_errno(MNT "/new", O_CREAT | O_RDWR));
	fd = open(MNT "/v4", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(-1, write_seed(fd, 1, MiB, 35, false));
	ASSERT_EQ(EFBIG, errno);
	close(fd);
	ASSERT_EQ(0, kvt_tier_write(0, "upgrade", "5"));
	fd = open(MNT "/v4", O_RDWR);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, write_seed(fd, 1, MiB, 35, false));
	close(fd);
	ASSERT_EQ(MiB + 1, size_of(MNT "/v4"));
	ASSERT_EQ(0, range_is(MNT "/v4", 0, MiB, 34));

	ASSERT_EQ(0, kvt_knob(0, "user_quota_mb", 1));
	ASSERT_EQ(0, mount(NULL, MNT, NULL, MS_REMOUNT, "mode=1777"));
	ASSERT_EQ(EDQUOT, kvt_as_user(65534, 65534, NULL, 0, create_big_as_user, NULL));
	ASSERT_EQ(0, unlink(MNT "/v4"));
	ASSERT_EQ(0, umount(MNT));
}

/*
 * The engines' file tiers (tests/kvtierfs_engine.py): 400 blocks named by
 * hashes, two writers racing to store each under a temporary name renamed
 * over the final one, a reader reading meanwhile; every read whole, one
 * writer's; the listing, then deleting all.
 */
TEST_F_TIMEOUT(tier, engine_pattern_two_writers, 600)
{
	if (kvt_run("command -v python3 >/dev/null"))
		SKIP(return, "python3 is not installed");
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 16));
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, kvt_run("python3 %s/tests/kvtierfs_engine.py " MNT " 400",
			     kvt_repo_root()));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, wait_used(0));
}

static int fio_run(const char *args)
{
	return kvt_run("fio --name=kvtierfs --filename=" MNT "/fio --size=64M "
		       "--bs=64k --rw=randwrite --verify=crc32c --output=/dev/null %s",
		       args);
}

/*
 * The case #24 opens with: fio with its own verify over a file 16 times
 * the host budget, verified again after the file was closed, after the
 * namespace was detached and attached, through mmap and O_DIRECT io_uring.
 */
TEST_F_TIMEOUT(tier, fio_verifies_across_remount, 600)
{
	if (kvt_run("command -v fio >/dev/null"))
		SKIP(return, "fio is not installed");
	ASSERT_EQ(0, make_region("fio", 64 * MiB, 0600, 10));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, fio_run("--ioengine=psync --do_verify=1"));
	ASSERT_EQ(0, fio_run("--ioengine=psync --verify_only"));
	ASSERT_EQ(0, umount(MNT));
	ASSERT_EQ(0, detach_attach());
	ASSERT_EQ(0, kvtierfs_mount("kvtier0", 0, NULL));
	ASSERT_EQ(0, fio_run("--ioengine=mmap --verify_only"));
	ASSERT_EQ(0, fio_run("--ioengine=io_uring --direct=1 --iodepth=8 "
			     "--verify_only"));
	ASSERT_EQ(0, unlink(MNT "/fio"));
	ASSERT_EQ(0, umount(MNT));
}

TEST_HARNESS_MAIN
