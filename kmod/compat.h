/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place that knows which kernel kvtier is built for.
 *
 * HAVE_* symbols come from compat_generated.h, written by conftest.sh from
 * compile probes against the target kernel's headers. Everything else in
 * kmod/ calls the kvtier_* wrappers below and never tests a kernel version.
 */
#ifndef KVTIER_COMPAT_H
#define KVTIER_COMPAT_H

#include <linux/blkdev.h>
#include <linux/crc32.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include "compat_generated.h"

/*
 * An exclusively claimed block device. 6.9+ hands out a struct file that
 * owns the claim; 6.1 returns the block_device and releases by mode.
 */
struct kvtier_bdev {
	struct block_device *bdev;
#ifdef HAVE_BDEV_FILE_OPEN_BY_PATH
	struct file *file;
#else
	fmode_t mode;
#endif
};

#if defined(HAVE_BDEV_FILE_OPEN_BY_PATH)
static inline int kvtier_bdev_open_excl(const char *path, void *holder,
					struct kvtier_bdev *kb, bool write)
{
	struct file *file;

	file = bdev_file_open_by_path(path, BLK_OPEN_READ |
				      (write ? BLK_OPEN_WRITE : 0), holder, NULL);
	if (IS_ERR(file))
		return PTR_ERR(file);
	kb->file = file;
	kb->bdev = file_bdev(file);
	return 0;
}

static inline void kvtier_bdev_close(struct kvtier_bdev *kb, void *holder)
{
	fput(kb->file);
	kb->file = NULL;
	kb->bdev = NULL;
}
#elif defined(HAVE_BLKDEV_GET_BY_PATH_FMODE)
static inline int kvtier_bdev_open_excl(const char *path, void *holder,
					struct kvtier_bdev *kb, bool write)
{
	struct block_device *bdev;

	kb->mode = FMODE_READ | FMODE_EXCL | (write ? FMODE_WRITE : 0);
	bdev = blkdev_get_by_path(path, kb->mode, holder);
	if (IS_ERR(bdev))
		return PTR_ERR(bdev);
	kb->bdev = bdev;
	return 0;
}

static inline void kvtier_bdev_close(struct kvtier_bdev *kb, void *holder)
{
	blkdev_put(kb->bdev, kb->mode);
	kb->bdev = NULL;
}
#else
#error "kvtier: no known exclusive block device open API (see kmod/conftest)"
#endif

/* crc.c's fallback and reference: the kernel library's crc32c. */
#ifndef HAVE_CRC32C_LE
#error "kvtier: no built-in crc32c (see kmod/conftest)"
#endif

/* 6.3+ made vma->vm_flags read-only outside the accessors. */
static inline void kvtier_vm_flags_set(struct vm_area_struct *vma,
				       unsigned long flags)
{
#ifdef HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * Shrinkers: 6.7+ allocates them (shrinker_alloc) and carries private_data;
 * 6.1 embeds them and registers with a name. The callbacks find their
 * owner with kvtier_shrinker_priv().
 */
typedef unsigned long (*kvtier_shrink_fn)(struct shrinker *,
					  struct shrink_control *);

#ifdef HAVE_SHRINKER_ALLOC
static inline struct shrinker *kvtier_shrinker_create(kvtier_shrink_fn count,
						      kvtier_shrink_fn scan,
						      void *priv,
						      const char *name)
{
	struct shrinker *s = shrinker_alloc(0, "kvtier-%s", name);

	if (!s)
		return ERR_PTR(-ENOMEM);
	s->count_objects = count;
	s->scan_objects = scan;
	s->private_data = priv;
	shrinker_register(s);
	return s;
}

static inline void *kvtier_shrinker_priv(struct shrinker *s)
{
	return s->private_data;
}

static inline void kvtier_shrinker_destroy(struct shrinker *s)
{
	shrinker_free(s);
}
#else
struct kvtier_shrinker {
	struct shrinker s;
	void *priv;
};

static inline struct shrinker *kvtier_shrinker_create(kvtier_shrink_fn count,
						      kvtier_shrink_fn scan,
						      void *priv,
						      const char *name)
{
	struct kvtier_shrinker *ks = kzalloc(sizeof(*ks), GFP_KERNEL);
	int ret;

	if (!ks)
		return ERR_PTR(-ENOMEM);
	ks->s.count_objects = count;
	ks->s.scan_objects = scan;
	ks->s.seeks = DEFAULT_SEEKS;
	ks->priv = priv;
	ret = register_shrinker(&ks->s, "kvtier-%s", name);
	if (ret) {
		kfree(ks);
		return ERR_PTR(ret);
	}
	return &ks->s;
}

static inline void *kvtier_shrinker_priv(struct shrinker *s)
{
	return container_of(s, struct kvtier_shrinker, s)->priv;
}

static inline void kvtier_shrinker_destroy(struct shrinker *s)
{
	unregister_shrinker(s);
	kfree(container_of(s, struct kvtier_shrinker, s));
}
#endif

static inline void kvtier_vm_flags_clear(struct vm_area_struct *vma,
					 unsigned long flags)
{
#ifdef HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * 6.3+ passes inode operations the mount's struct mnt_idmap; 6.1 passes a
 * struct user_namespace in the same place, and its nop is init_user_ns.
 * kvtierfs (fs.c) is written for the new names; here they mean the old.
 */
#ifndef HAVE_MNT_IDMAP
#define mnt_idmap	user_namespace
#define nop_mnt_idmap	init_user_ns
#endif

/* 6.6+: generic_fillattr() is told which statx fields were asked for. */
static inline void kvtier_fillattr(struct mnt_idmap *idmap, u32 request_mask,
				   struct inode *inode, struct kstat *stat)
{
#ifdef HAVE_FILLATTR_REQUEST_MASK
	generic_fillattr(idmap, request_mask, inode, stat);
#else
	generic_fillattr(idmap, inode, stat);
#endif
}

/* An inode's atime, mtime and ctime set to now (6.7+: accessors). */
static inline void kvtier_inode_init_ts(struct inode *inode)
{
#ifdef HAVE_SIMPLE_INODE_INIT_TS
	simple_inode_init_ts(inode);
#else
	struct timespec64 now = current_time(inode);

	inode->i_atime = now;
	inode->i_mtime = now;
	inode->i_ctime = now;
#endif
}

#endif /* KVTIER_COMPAT_H */
