// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierfs: a tier's persistent named regions as the files of a mount, so
 * that standard tools and file-based KV tiers reach them by path:
 *
 *	mount -t kvtierfs kvtier0 /mnt/kv [-o ro,uid=U,gid=G,mode=M]
 *
 * One superblock per tier (a second mount of the same tier shares it). The
 * mount needs the tier's namespace attached, and holds it attached: a
 * detach while mounted is -EBUSY, as while a file of the tier is open.
 *
 * What a file is. A file of the root directory is the persistent named
 * region of that name: the ioctl API and the mount see the same objects,
 * and a file's bytes, mode, owner and size are its region's. An open binds
 * a struct kvtier_file to the region exactly as KVTIER_IOC_REGION_OPEN by
 * name does, so reads, writes, mmap, fsync and fadvise are file.c's (the
 * data path is the same code for both). The mode bits are checked by the
 * VFS (generic_permission) against the inode, which carries the region's.
 *
 * Inodes hold no reference to their region: a region lives while it has
 * users (its name, its open files), and one that an inode pinned could be
 * neither reclaimed for space nor sealed. An inode carries its region's id
 * instead (i_ino is the id plus one, past the root's 1), and each
 * operation finds the region by its name again (kvtier_name_find(), under
 * tier->regions_lock) and checks the id: a name unlinked or made again
 * through the ioctls since the dentry was made is never taken for the old
 * file (kvtierfs_d_revalidate() drops such a dentry).
 *
 * Files are made (open(O_CREAT): an empty persistent region) and grow
 * (a write or truncate past the end: kvtier_region_grow()) on a namespace
 * of format version 5, whose sizes are in bytes; on version 4 sizes are
 * fixed (-EOPNOTSUPP to create, -EFBIG to grow).
 *
 * Not supported yet (#24's later steps): making a file smaller
 * (-EOPNOTSUPP), directories and links (-EPERM, the VFS's answer for an
 * operation a filesystem lacks), chown, explicit times, fallocate and
 * xattrs (-EOPNOTSUPP), names over 63 bytes (-ENAMETOOLONG).
 *
 * Locking: tier->lock for the mount count (struct kvtier_tier.nr_mounts);
 * tier->regions_lock around every look at a region found by name; the
 * VFS's directory i_rwsem around lookup, create, unlink and rename, and a
 * file's i_rwsem around its growth (kvtier.h's lock order); names.c's
 * locks for the names themselves. Nothing of this file is on the data
 * path; a write that grows a file takes its inode's lock in file.c
 * (kvtierfs_file_write_iter()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/namei.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>

#include "kvtier.h"

#define KVTIERFS_MAGIC		0x6b767466	/* "kvtf" */
#define KVTIERFS_ROOT_INO	1
#define KVTIERFS_ROOT_MODE	01770	/* and S_IFDIR; see struct kvtierfs_opts */

static const struct inode_operations kvtierfs_file_iops;

static struct kvtier_tier *kvtierfs_tier(const struct super_block *sb)
{
	return sb->s_fs_info;
}

/* The id of the region @inode (a file's inode) stands for. */
static u64 kvtierfs_region_id(const struct inode *inode)
{
	return inode->i_ino - 1;
}

/*
 * @dentry's name as a region name, NUL-padded into @name; false if it
 * cannot be one (too long: lookup refused it before any dentry was made).
 */
static bool kvtierfs_dentry_name(struct dentry *dentry,
				 char name[KVTIER_NAME_MAX])
{
	struct name_snapshot snap;
	bool ok;

	take_dentry_name_snapshot(&snap, dentry);
	ok = snap.name.len < KVTIER_NAME_MAX;
	if (ok)
		strscpy_pad(name, snap.name.name, KVTIER_NAME_MAX);
	release_dentry_name_snapshot(&snap);
	return ok;
}

/*
 * The linked persistent region called @name. Caller holds regions_lock;
 * the region stays while it is held.
 */
static struct kvtier_region *kvtierfs_find(struct kvtier_tier *tier,
					   const char *name)
{
	struct kvtier_region *r = kvtier_name_find(tier, name);

	return r && r->persistent ? r : NULL;
}

/*
 * The region @dentry's inode stands for, if its name still names it, with
 * a user reference; NULL otherwise (unlinked, or the name made again).
 */
static struct kvtier_region *kvtierfs_get(struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct kvtier_tier *tier = kvtierfs_tier(inode->i_sb);
	char name[KVTIER_NAME_MAX];
	struct kvtier_region *r;

	if (!kvtierfs_dentry_name(dentry, name))
		return NULL;
	spin_lock(&tier->regions_lock);
	r = kvtierfs_find(tier, name);
	if (r && (r->id != kvtierfs_region_id(inode) ||
		  !refcount_inc_not_zero(&r->users)))
		r = NULL;
	spin_unlock(&tier->regions_lock);
	return r;
}

/* What an inode takes from its region, read under regions_lock. */
struct kvtierfs_attrs {
	u64 id;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	loff_t size;
};

static void kvtierfs_attrs_get(struct kvtier_region *r,
			       struct kvtierfs_attrs *a)
{
	lockdep_assert_held(&r->tier->regions_lock);
	a->id = r->id;
	a->mode = READ_ONCE(r->mode) & 0777;
	a->uid = r->owner;
	a->gid = r->gid;
	a->size = kvtier_region_size(r);
}

static struct inode *kvtierfs_iget(struct super_block *sb,
				   const struct kvtierfs_attrs *a)
{
	struct inode *inode = iget_locked(sb, a->id + 1);

	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;
	inode->i_mode = S_IFREG | a->mode;
	inode->i_uid = a->uid;
	inode->i_gid = a->gid;
	inode->i_size = a->size;
	kvtier_inode_init_ts(inode);
	inode->i_op = &kvtierfs_file_iops;
	inode->i_fop = &kvtierfs_file_fops;
	unlock_new_inode(inode);
	return inode;
}

/*
 * A name that is too long for a region is -ENAMETOOLONG; one that no
 * region could have (kvtier_name_valid()) is simply not there. No
 * reference is taken: a user reference, even a short one, would make a
 * seal of the region fail (it wants no user but its name and the sealer).
 */
static struct dentry *kvtierfs_lookup(struct inode *dir, struct dentry *dentry,
				      unsigned int flags)
{
	struct kvtier_tier *tier = kvtierfs_tier(dir->i_sb);
	char name[KVTIER_NAME_MAX];
	struct inode *inode = NULL;
	struct kvtierfs_attrs a;
	struct kvtier_region *r;
	bool found = false;

	if (dentry->d_name.len >= KVTIER_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	strscpy_pad(name, dentry->d_name.name, sizeof(name));
	if (!kvtier_name_valid(name)) {
		spin_lock(&tier->regions_lock);
		r = kvtierfs_find(tier, name);
		if (r) {
			kvtierfs_attrs_get(r, &a);
			found = true;
		}
		spin_unlock(&tier->regions_lock);
	}
	if (found) {
		inode = kvtierfs_iget(dir->i_sb, &a);
		if (IS_ERR(inode))
			return ERR_CAST(inode);
	}
	return d_splice_alias(inode, dentry);
}

/*
 * A dentry is good while its name names the same region. Regions are made
 * and unlinked through the ioctls too, so a negative dentry is never
 * trusted either (and none is kept: always_delete_dentry).
 */
static int kvtierfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_tier *tier;
	struct kvtier_region *r;
	struct inode *inode;
	bool ok;

	if (flags & LOOKUP_RCU)
		return -ECHILD;
	inode = d_inode(dentry);
	if (!inode)
		return 0;
	if (inode->i_ino == KVTIERFS_ROOT_INO)
		return 1;
	if (!kvtierfs_dentry_name(dentry, name))
		return 0;
	tier = kvtierfs_tier(inode->i_sb);
	spin_lock(&tier->regions_lock);
	r = kvtierfs_find(tier, name);
	ok = r && r->id == kvtierfs_region_id(inode);
	spin_unlock(&tier->regions_lock);
	return ok;
}

static const struct dentry_operations kvtierfs_dops = {
	.d_revalidate = kvtierfs_d_revalidate,
	.d_delete = always_delete_dentry,
};

/*
 * open(): bind a struct kvtier_file to the region, as a bind by name does
 * (the VFS checked the mode bits). Errors: ENOENT (unlinked since the
 * lookup), EROFS, EPERM (a sealed region opened for writing), those of
 * loading its page map (EIO, EUCLEAN, ENOMEM).
 */
int kvtierfs_open(struct inode *inode, struct file *file)
{
	struct kvtier_tier *tier = kvtierfs_tier(inode->i_sb);
	bool rdonly = !(file->f_mode & FMODE_WRITE);
	struct kvtier_region *r;
	struct kvtier_file *kf;
	int ret;

	r = kvtierfs_get(file->f_path.dentry);
	if (!r)
		return -ENOENT;
	ret = kvtier_name_may_bind(r, rdonly);
	if (ret)
		goto err;
	kf = kvtier_file_new(tier, file, false);
	ret = PTR_ERR_OR_ZERO(kf);
	if (ret)
		goto err;
	/*
	 * Every mapping of the region shares its address_space, whichever
	 * file made it, so eviction unmaps it from all (file.c).
	 */
	file->f_mapping = r->inode->i_mapping;
	kf->readonly = rdonly;
	kf->region = r;		/* the lookup's user reference is the file's */
	return 0;
err:
	kvtier_region_put_user(r);
	return ret;
}

static int kvtierfs_getattr(struct mnt_idmap *idmap, const struct path *path,
			    struct kstat *stat, u32 request_mask,
			    unsigned int query_flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct kvtier_tier *tier = kvtierfs_tier(inode->i_sb);
	char name[KVTIER_NAME_MAX];
	struct kvtier_region *r;

	kvtier_fillattr(idmap, request_mask, inode, stat);
	if (!kvtierfs_dentry_name(path->dentry, name))
		return 0;
	/* Read under the lock, with no reference (see kvtierfs_lookup()). */
	spin_lock(&tier->regions_lock);
	r = kvtierfs_find(tier, name);
	if (!r || r->id != kvtierfs_region_id(inode)) {
		/* fstat() of a file unlinked while open: the inode's. */
		spin_unlock(&tier->regions_lock);
		stat->nlink = 0;
		return 0;
	}
	/*
	 * Blocks: what the region holds on the namespace. Times: a region
	 * keeps when it was made and when it was last used, and no more.
	 */
	stat->blocks = (u64)atomic_long_read(&r->nr_slots) << (PAGE_SHIFT - 9);
	stat->atime = (struct timespec64){ .tv_sec = kvtier_region_last_used(r) };
	stat->btime = (struct timespec64){ .tv_sec = r->created };
	spin_unlock(&tier->regions_lock);
	stat->blksize = PAGE_SIZE;
	stat->mtime = stat->atime;
	stat->ctime = stat->atime;
	stat->result_mask |= STATX_BTIME;
	return 0;
}

/*
 * chmod is kept with the region (committed before it returns); touch
 * without explicit times marks it used, which is what capacity reclaim
 * orders by; truncate may make it larger (kvtier_region_grow()), and
 * the next commit records that. Errors: EOPNOTSUPP (a smaller size,
 * chown, explicit times), those of kvtier_region_grow(),
 * EINVAL (set-id or sticky bits), ENOENT, a commit's EIO (the new mode is
 * then in memory and reaches the namespace with the next commit).
 */
static int kvtierfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			    struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	unsigned int valid = attr->ia_valid;
	struct kvtier_region *r;
	int ret;

	ret = setattr_prepare(idmap, dentry, attr);
	if (ret)
		return ret;
	if (kvtierfs_tier(inode->i_sb)->backing.read_only)
		return -EROFS;
	if (((valid & ATTR_SIZE) && attr->ia_size < i_size_read(inode)) ||
	    valid & (ATTR_UID | ATTR_GID | ATTR_ATIME_SET | ATTR_MTIME_SET))
		return -EOPNOTSUPP;
	if ((valid & ATTR_MODE) && (attr->ia_mode & 07000))
		return -EINVAL;
	r = kvtierfs_get(dentry);
	if (!r)
		return -ENOENT;
	/* Larger: the VFS holds the inode's lock, under which sizes change. */
	if ((valid & ATTR_SIZE) && attr->ia_size > i_size_read(inode)) {
		ret = kvtier_region_grow(r, attr->ia_size,
					 capable(CAP_SYS_RESOURCE));
		if (ret) {
			kvtier_region_put_user(r);
			return ret;
		}
		i_size_write(inode, kvtier_region_size(r));
	}
	if (valid & (ATTR_ATIME | ATTR_MTIME)) {
		/* Used now: to its place at the end of its owner's LRU. */
		WRITE_ONCE(r->last_use, jiffies);
		kvtier_user_lru_closed(r);
	}
	if (valid & ATTR_MODE) {
		WRITE_ONCE(r->mode, attr->ia_mode & 0777);
		kvtier_journal_region_changed(r);
		atomic64_inc(&r->tier->store.changes);
		ret = kvtier_store_commit(r->tier);
	}
	setattr_copy(idmap, inode, attr);
	kvtier_region_put_user(r);
	return ret;
}

static const struct inode_operations kvtierfs_file_iops = {
	.getattr = kvtierfs_getattr,
	.setattr = kvtierfs_setattr,
};

/*
 * open(O_CREAT) and mknod of a regular file: a new, empty persistent
 * region of the name, owned by the caller, committed before this returns.
 * Errors: EOPNOTSUPP (a version-4 namespace, whose regions cannot grow:
 * kvtierctl upgrade), EINVAL (a name no region can have), EROFS, EEXIST
 * (made meanwhile through the ioctls), ENOSPC (max_regions, or the
 * checkpoint's room), EDQUOT, EIO.
 */
static int kvtierfs_create(struct mnt_idmap *idmap, struct inode *dir,
			   struct dentry *dentry, umode_t mode, bool excl)
{
	struct kvtier_tier *tier = kvtierfs_tier(dir->i_sb);
	char name[KVTIER_NAME_MAX];
	struct kvtierfs_attrs a;
	struct kvtier_region *r;
	struct inode *inode;

	bool sizes;

	if (tier->backing.read_only)
		return -EROFS;
	/* Under the lock an upgrade to version 5 is one once committed. */
	mutex_lock(&tier->store.lock);
	sizes = kvtier_store_file_sizes(&tier->store);
	mutex_unlock(&tier->store.lock);
	if (!sizes)
		return -EOPNOTSUPP;
	if (!kvtierfs_dentry_name(dentry, name) || kvtier_name_valid(name))
		return -EINVAL;
	r = kvtier_name_create_file(tier, name, mode & 0777);
	if (IS_ERR(r))
		return PTR_ERR(r);
	spin_lock(&tier->regions_lock);
	kvtierfs_attrs_get(r, &a);
	spin_unlock(&tier->regions_lock);
	kvtier_region_put_user(r);
	inode = kvtierfs_iget(dir->i_sb, &a);
	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	return 0;
}

/*
 * The name goes now (committed before this returns), the bytes with the
 * last open file and mapping, as for KVTIER_IOC_REGION_UNLINK. The VFS
 * checked the sticky root: only the owner or CAP_FOWNER get here. Errors:
 * ENOENT, those of kvtier_name_unlink() (EIO from the commit: the name is
 * gone in memory and from the next commit that succeeds).
 */
static int kvtierfs_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);
	struct kvtier_region *r;
	int ret;

	/* A read-only tier commits nothing: the name would come back. */
	if (kvtierfs_tier(dir->i_sb)->backing.read_only)
		return -EROFS;
	r = kvtierfs_get(dentry);
	if (!r)
		return -ENOENT;
	ret = kvtier_name_unlink(r);
	if (!READ_ONCE(r->linked))
		clear_nlink(inode);
	kvtier_region_put_user(r);
	return ret;
}

/*
 * rename(), over an existing file too, is one commit (a checkpoint,
 * kvtier_name_rename()): after a crash each name has its old file or its
 * new one. The VFS checked the sticky root for both names. Errors: EINVAL
 * (RENAME_EXCHANGE or RENAME_WHITEOUT; a new name no region can have),
 * ENOENT, EEXIST, those of kvtier_name_rename().
 */
static int kvtierfs_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			   struct dentry *old_dentry, struct inode *new_dir,
			   struct dentry *new_dentry, unsigned int flags)
{
	struct kvtier_region *r, *t = NULL;
	char to[KVTIER_NAME_MAX];
	int ret;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;
	if (kvtierfs_tier(old_dir->i_sb)->backing.read_only)
		return -EROFS;
	if (!kvtierfs_dentry_name(new_dentry, to) || kvtier_name_valid(to))
		return -EINVAL;
	r = kvtierfs_get(old_dentry);
	if (!r)
		return -ENOENT;
	if (d_really_is_positive(new_dentry)) {
		t = kvtierfs_get(new_dentry);
		if (!t) {
			kvtier_region_put_user(r);
			return -ENOENT;
		}
	}
	ret = kvtier_name_rename(r, to, t);
	if (t) {
		if (!READ_ONCE(t->linked))
			clear_nlink(d_inode(new_dentry));
		kvtier_region_put_user(t);
	}
	kvtier_region_put_user(r);
	return ret;
}

/* The root's mode and times are not kept: they cannot be changed. */
static int kvtierfs_root_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
				 struct iattr *attr)
{
	return -EOPNOTSUPP;
}

static const struct inode_operations kvtierfs_dir_iops = {
	.lookup = kvtierfs_lookup,
	.create = kvtierfs_create,
	.unlink = kvtierfs_unlink,
	.rename = kvtierfs_rename,
	.setattr = kvtierfs_root_setattr,
};

/*
 * A directory listing: the names the tier had when the listing started at
 * its first entry, kept with the open directory. The regions are on a list
 * that a walk may not sleep on, and an offset into a changing list would
 * skip or repeat names; a listing from one moment does neither.
 */
struct kvtierfs_listing {
	unsigned long nr;
	struct {
		u64 ino;
		char name[KVTIER_NAME_MAX];
	} e[];
};

static struct kvtierfs_listing *kvtierfs_list(struct kvtier_tier *tier)
{
	struct kvtierfs_listing *l;
	unsigned long room, n;
	struct kvtier_region *r;

	spin_lock(&tier->regions_lock);
	room = tier->nr_persistent;
	spin_unlock(&tier->regions_lock);
	for (;;) {
		l = kvmalloc(struct_size(l, e, room), GFP_KERNEL);
		if (!l)
			return ERR_PTR(-ENOMEM);
		n = 0;
		spin_lock(&tier->regions_lock);
		list_for_each_entry(r, &tier->regions, node) {
			/* "." and ".." are the VFS's: such regions are not files. */
			if (!r->linked || !r->persistent ||
			    !strcmp(r->name, ".") || !strcmp(r->name, ".."))
				continue;
			if (n < room) {
				l->e[n].ino = r->id + 1;
				memcpy(l->e[n].name, r->name, KVTIER_NAME_MAX);
			}
			n++;
		}
		spin_unlock(&tier->regions_lock);
		if (n <= room)
			break;
		kvfree(l);
		room = n + n / 8;	/* made meanwhile: room for more */
	}
	l->nr = n;
	return l;
}

static int kvtierfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct kvtier_tier *tier = kvtierfs_tier(file_inode(file)->i_sb);
	struct kvtierfs_listing *l = file->private_data;

	if (!dir_emit_dots(file, ctx))
		return 0;
	/* getdents on one open directory is serialised by its f_pos_lock. */
	if (ctx->pos == 2 || !l) {
		kvfree(l);
		file->private_data = NULL;
		l = kvtierfs_list(tier);
		if (IS_ERR(l))
			return PTR_ERR(l);
		file->private_data = l;
	}
	for (; (u64)ctx->pos - 2 < l->nr; ctx->pos++) {
		unsigned long i = ctx->pos - 2;

		if (!dir_emit(ctx, l->e[i].name,
			      strnlen(l->e[i].name, KVTIER_NAME_MAX),
			      l->e[i].ino, DT_REG))
			break;
	}
	return 0;
}

static int kvtierfs_dir_release(struct inode *inode, struct file *file)
{
	kvfree(file->private_data);
	return 0;
}

/*
 * unlink, rename and chmod commit before they return; one whose commit
 * failed is in memory until the next commit: this one, whose error is
 * returned (a no-op when nothing is pending).
 */
static int kvtierfs_dir_fsync(struct file *file, loff_t start, loff_t end,
			      int datasync)
{
	return kvtier_store_commit(kvtierfs_tier(file_inode(file)->i_sb));
}

static const struct file_operations kvtierfs_dir_fops = {
	.owner = THIS_MODULE,
	.iterate_shared = kvtierfs_readdir,
	.release = kvtierfs_dir_release,
	.read = generic_read_dir,
	.llseek = generic_file_llseek,
	.fsync = kvtierfs_dir_fsync,
};

/*
 * Blocks are data slots; files are persistent regions, up to the number a
 * checkpoint has room for.
 */
static int kvtierfs_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct kvtier_tier *tier = kvtierfs_tier(dentry->d_sb);
	unsigned long used = READ_ONCE(tier->slots.used);
	u64 files;

	spin_lock(&tier->regions_lock);
	files = tier->nr_persistent;
	spin_unlock(&tier->regions_lock);
	buf->f_type = KVTIERFS_MAGIC;
	buf->f_bsize = PAGE_SIZE;
	buf->f_frsize = PAGE_SIZE;
	buf->f_blocks = tier->store.nr_slots;
	buf->f_bfree = tier->store.nr_slots - min_t(u64, used, tier->store.nr_slots);
	buf->f_bavail = buf->f_bfree;
	buf->f_files = tier->store.max_regions;
	buf->f_ffree = tier->store.max_regions - min(files, tier->store.max_regions);
	buf->f_namelen = KVTIER_NAME_MAX - 1;
	return 0;
}

/*
 * sync(2), syncfs(2) and unmount: every persistent region's dirty pages
 * reach the namespace and a commit makes them durable, as an fsync of
 * each file would. The data is the tier's, not the mount's: what other
 * files of the tier (through /dev/kvtierN) dirtied goes too.
 */
static int kvtierfs_sync_fs(struct super_block *sb, int wait)
{
	struct kvtier_tier *tier = kvtierfs_tier(sb);

	if (!wait || tier->backing.read_only)
		return 0;
	return kvtier_store_sync(tier);
}

/* /proc/mounts: the options that are not the defaults. */
static int kvtierfs_show_options(struct seq_file *m, struct dentry *root)
{
	struct inode *inode = d_inode(root);

	if (!uid_eq(inode->i_uid, GLOBAL_ROOT_UID))
		seq_printf(m, ",uid=%u", from_kuid_munged(&init_user_ns, inode->i_uid));
	if (!gid_eq(inode->i_gid, GLOBAL_ROOT_GID))
		seq_printf(m, ",gid=%u", from_kgid_munged(&init_user_ns, inode->i_gid));
	if ((inode->i_mode & 07777) != KVTIERFS_ROOT_MODE)
		seq_printf(m, ",mode=%o", inode->i_mode & 07777);
	return 0;
}

static const struct super_operations kvtierfs_sops = {
	.statfs = kvtierfs_statfs,
	.show_options = kvtierfs_show_options,
	.sync_fs = kvtierfs_sync_fs,
	/* No inode outlives its last reference: the region is the truth. */
	.drop_inode = generic_delete_inode,
};

/*
 * Mount options: the root directory's owner, group and mode. The default,
 * root:root 01770, lets in root alone: /dev/kvtierN keeps its ioctls to
 * the kvtier group, and a mount reaches the same regions, so an operator
 * opens it to that group (gid=) or to whom the engines run as.
 */
struct kvtierfs_opts {
	kuid_t uid;
	kgid_t gid;
	umode_t mode;
};

enum { KVTIERFS_OPT_UID, KVTIERFS_OPT_GID, KVTIERFS_OPT_MODE };

static const struct fs_parameter_spec kvtierfs_params[] = {
	fsparam_u32("uid", KVTIERFS_OPT_UID),
	fsparam_u32("gid", KVTIERFS_OPT_GID),
	fsparam_u32oct("mode", KVTIERFS_OPT_MODE),
	{}
};

static int kvtierfs_parse_param(struct fs_context *fc,
				struct fs_parameter *param)
{
	struct kvtierfs_opts *o = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, kvtierfs_params, param, &result);
	if (opt < 0)
		return opt;
	switch (opt) {
	case KVTIERFS_OPT_UID:
		o->uid = make_kuid(fc->user_ns, result.uint_32);
		if (!uid_valid(o->uid))
			return invalfc(fc, "bad uid %u", result.uint_32);
		break;
	case KVTIERFS_OPT_GID:
		o->gid = make_kgid(fc->user_ns, result.uint_32);
		if (!gid_valid(o->gid))
			return invalfc(fc, "bad gid %u", result.uint_32);
		break;
	case KVTIERFS_OPT_MODE:
		if (result.uint_32 & ~07777U)
			return invalfc(fc, "bad mode %o", result.uint_32);
		o->mode = result.uint_32;
		break;
	}
	return 0;
}

static void kvtierfs_root_set(struct inode *root, const struct kvtierfs_opts *o)
{
	root->i_uid = o->uid;
	root->i_gid = o->gid;
	root->i_mode = S_IFDIR | o->mode;
}

static int kvtierfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct kvtier_tier *tier = kvtierfs_tier(sb);
	struct inode *root;
	int ret = 0;

	mutex_lock(&tier->lock);
	if (!kvtier_backing_attached(tier)) {
		errorfc(fc, "kvtier%u has no namespace attached", tier->id);
		ret = -ENODEV;
	} else if (tier->backing.read_only && !sb_rdonly(sb)) {
		errorfc(fc, "kvtier%u is attached read-only: mount it ro",
			tier->id);
		ret = -EROFS;
	} else {
		tier->nr_mounts++;
	}
	mutex_unlock(&tier->lock);
	if (ret) {
		/* Not counted: kvtierfs_kill_sb() has nothing to give back. */
		sb->s_fs_info = NULL;
		return ret;
	}

	sb->s_magic = KVTIERFS_MAGIC;
	sb->s_op = &kvtierfs_sops;
	sb->s_d_op = &kvtierfs_dops;
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_maxbytes = MAX_LFS_FILESIZE;
	sb->s_time_gran = NSEC_PER_SEC;

	root = new_inode(sb);
	if (!root)
		return -ENOMEM;
	root->i_ino = KVTIERFS_ROOT_INO;
	kvtierfs_root_set(root, fc->fs_private);
	kvtier_inode_init_ts(root);
	root->i_op = &kvtierfs_dir_iops;
	root->i_fop = &kvtierfs_dir_fops;
	set_nlink(root, 2);
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

/* The source names the tier: kvtierN or /dev/kvtierN. */
static int kvtierfs_get_tree(struct fs_context *fc)
{
	const char *src = fc->source;
	struct kvtier_tier *tier;
	unsigned int id;

	if (!src)
		return invalfc(fc, "no source: mount -t kvtierfs kvtierN DIR");
	if (!strncmp(src, "/dev/", 5))
		src += 5;
	if (strncmp(src, KVTIER_NAME, strlen(KVTIER_NAME)) ||
	    !isdigit(src[strlen(KVTIER_NAME)]) ||
	    kstrtouint(src + strlen(KVTIER_NAME), 10, &id))
		return invalfc(fc, "source %s is not a tier (kvtierN)", fc->source);
	tier = kvtier_tier_by_id(id);
	if (!tier) {
		errorfc(fc, "no tier kvtier%u", id);
		return -ENODEV;
	}
	return get_tree_keyed(fc, kvtierfs_fill_super, tier);
}

/*
 * mount -o remount: never read-write on a tier attached read-only (a
 * change there would not be committed); the root's owner, group and mode
 * as given.
 */
static int kvtierfs_reconfigure(struct fs_context *fc)
{
	struct super_block *sb = fc->root->d_sb;
	struct kvtier_tier *tier = kvtierfs_tier(sb);
	struct inode *root = d_inode(fc->root);

	/* Only a remount that asks for read-write (fspick may ask nothing). */
	if ((fc->sb_flags_mask & SB_RDONLY) && !(fc->sb_flags & SB_RDONLY) &&
	    tier->backing.read_only) {
		errorfc(fc, "kvtier%u is attached read-only", tier->id);
		return -EROFS;
	}
	inode_lock(root);
	kvtierfs_root_set(root, fc->fs_private);
	inode_unlock(root);
	return 0;
}

static void kvtierfs_free_fc(struct fs_context *fc)
{
	kfree(fc->fs_private);
}

static const struct fs_context_operations kvtierfs_context_ops = {
	.parse_param = kvtierfs_parse_param,
	.get_tree = kvtierfs_get_tree,
	.reconfigure = kvtierfs_reconfigure,
	.free = kvtierfs_free_fc,
};

static int kvtierfs_init_fs_context(struct fs_context *fc)
{
	struct kvtierfs_opts *o = kzalloc(sizeof(*o), GFP_KERNEL);

	if (!o)
		return -ENOMEM;
	o->uid = GLOBAL_ROOT_UID;
	o->gid = GLOBAL_ROOT_GID;
	o->mode = KVTIERFS_ROOT_MODE;
	if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE) {
		struct inode *root = d_inode(fc->root);

		o->uid = root->i_uid;
		o->gid = root->i_gid;
		o->mode = root->i_mode & 07777;
	}
	fc->fs_private = o;
	fc->ops = &kvtierfs_context_ops;
	return 0;
}

static void kvtierfs_kill_sb(struct super_block *sb)
{
	struct kvtier_tier *tier = kvtierfs_tier(sb);

	kill_anon_super(sb);
	if (!tier)
		return;
	mutex_lock(&tier->lock);
	tier->nr_mounts--;
	mutex_unlock(&tier->lock);
}

static struct file_system_type kvtierfs_type = {
	.owner = THIS_MODULE,
	.name = "kvtierfs",
	.init_fs_context = kvtierfs_init_fs_context,
	.kill_sb = kvtierfs_kill_sb,
};
MODULE_ALIAS_FS("kvtierfs");

int kvtierfs_init(void)
{
	return register_filesystem(&kvtierfs_type);
}

void kvtierfs_exit(void)
{
	unregister_filesystem(&kvtierfs_type);
}
