// SPDX-License-Identifier: GPL-2.0
/*
 * Named regions: a file binds to a region by name (KVTIER_IOC_REGION_OPEN)
 * instead of creating an unnamed one, so processes that are not related
 * share KV bytes. Names live in the tier's name table; a named region
 * holds one "user" reference while it is linked, so it outlives the files
 * that used it until it is unlinked. A volatile name goes with the module
 * (or the detach); a persistent one (KVTIER_OPEN_PERSISTENT) is in every
 * commit's checkpoint (store.c) and comes back at the next attach.
 * Creating, unlinking and changing the flags of a persistent region
 * commit before they return.
 *
 * Names are untrusted input: bounded, printable, never a path, never used
 * as a format string.
 *
 * A linked region is found by its name in tier->names, a hash table keyed
 * by the whole name array (the name padded with NULs, as every region's
 * is), so an open by name costs the same with a million regions as with
 * one. The table changes, and is looked up, under tier->regions_lock,
 * together with region->linked.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kvtier.h"

#define KVTIER_OPEN_FLAGS	(KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | \
				 KVTIER_OPEN_PERSISTENT | KVTIER_OPEN_RDONLY | \
				 KVTIER_OPEN_SHARED)
#define KVTIER_LIST_MAX		4096

/* 1..63 bytes of 0x21..0x7e, no '/', NUL-terminated within the array. */
int kvtier_name_valid(const char *name)
{
	size_t len = strnlen(name, KVTIER_NAME_MAX);
	size_t i;

	if (!len || len == KVTIER_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (name[i] < 0x21 || name[i] > 0x7e || name[i] == '/')
			return -EINVAL;
	}
	return 0;
}

static const struct rhashtable_params kvtier_name_params = {
	.head_offset = offsetof(struct kvtier_region, name_node),
	.key_offset = offsetof(struct kvtier_region, name),
	.key_len = KVTIER_NAME_MAX,
	.automatic_shrinking = true,
};

int kvtier_names_init(struct kvtier_tier *tier)
{
	return rhashtable_init(&tier->names, &kvtier_name_params);
}

/*
 * At the tier's release. Names a detach could not drop are leaked with
 * their regions, as before there was a table; the table itself is freed.
 */
void kvtier_names_exit(struct kvtier_tier *tier)
{
	rhashtable_destroy(&tier->names);
}

/*
 * The linked region called @name, or NULL. Caller holds tier->regions_lock,
 * which is also what keeps a region found from being freed: regions are not
 * freed after an RCU grace period, so no lookup may go without the lock.
 */
struct kvtier_region *kvtier_name_find(struct kvtier_tier *tier,
				       const char *name)
{
	char key[KVTIER_NAME_MAX];

	lockdep_assert_held(&tier->regions_lock);
	strscpy_pad(key, name, sizeof(key));
	return rhashtable_lookup_fast(&tier->names, key, kvtier_name_params);
}

/*
 * Link @region: make it found by its name (NUL-padded). Caller holds
 * tier->regions_lock. Errors: -EEXIST (a linked region has the name),
 * -ENOMEM (the table could not grow under the spinlock - GFP_ATOMIC, or a
 * resize under way - and grows in its worker: a later try succeeds).
 * A persistent region goes to the end of its owner's LRU: a new one is the
 * most recently used, an attach sorts the LRU once it has linked them all,
 * and kvtier_name_relink() puts a region back in its place.
 */
int kvtier_name_hash(struct kvtier_region *region)
{
	int ret;

	lockdep_assert_held(&region->tier->regions_lock);
	if (WARN_ON_ONCE(region->linked))
		return -EEXIST;
	ret = rhashtable_lookup_insert_fast(&region->tier->names,
					    &region->name_node,
					    kvtier_name_params);
	if (ret)
		return ret == -EEXIST ? ret : -ENOMEM;
	region->linked = true;
	region->tier->nr_persistent += region->persistent;
	if (region->persistent)
		kvtier_user_lru_add(region, false);
	return 0;
}

/*
 * Unlink @region, if it was linked: its name is found no more. Caller
 * holds tier->regions_lock. Returns whether it was linked.
 */
bool kvtier_name_unhash(struct kvtier_region *region)
{
	lockdep_assert_held(&region->tier->regions_lock);
	if (!region->linked)
		return false;
	WARN_ON_ONCE(rhashtable_remove_fast(&region->tier->names,
					    &region->name_node,
					    kvtier_name_params));
	region->linked = false;
	region->tier->nr_persistent -= region->persistent;
	list_del_init(&region->lru_node);
	return true;
}

/*
 * The linked region called @name, with a user reference, or NULL. Caller
 * holds tier->regions_lock.
 */
static struct kvtier_region *kvtier_name_lookup(struct kvtier_tier *tier,
						const char *name)
{
	struct kvtier_region *r = kvtier_name_find(tier, name);

	return r && refcount_inc_not_zero(&r->users) ? r : NULL;
}

/*
 * Link @region, whose name was taken away (kvtier_store_make_room()), again
 * if no region took the name meanwhile. Returns true if it was linked.
 * Only a name another region took keeps it out: the caller destroys a
 * region that is not linked again, so a table short of memory for a moment
 * (kvtier_name_hash()) is waited out, never taken for that. May sleep.
 */
bool kvtier_name_relink(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	int ret;

	for (;;) {
		spin_lock(&tier->regions_lock);
		ret = kvtier_name_hash(region);
		if (!ret && region->persistent)	/* back where it was */
			kvtier_user_lru_add(region, true);
		spin_unlock(&tier->regions_lock);
		if (ret != -ENOMEM)
			return !ret;
		usleep_range(1000, 2000);
	}
}

/* kvtier_name_lookup() for callers that do not hold tier->regions_lock. */
struct kvtier_region *kvtier_name_get(struct kvtier_tier *tier,
				      const char *name)
{
	struct kvtier_region *r;

	spin_lock(&tier->regions_lock);
	r = kvtier_name_lookup(tier, name);
	spin_unlock(&tier->regions_lock);
	return r;
}

/*
 * kvtier_name_get() for an ioctl: only once the namespace is attached, NULL
 * before. An attach (under tier->lock, kvtier_store_open()) makes each
 * region findable by name before it has filled in where the region's page
 * records are and claimed its slots, and holds no reference of its own
 * meanwhile: a region an ioctl found then and unlinked would be half
 * loaded, and freed under the attach. Looked up under tier->lock, a
 * region is one that an attach finished with. With @write, -EROFS on a
 * read-only tier, decided under the same lock (the attach waited for may
 * be a read-only one). -EINTR: killed while waiting for an attach.
 */
static struct kvtier_region *kvtier_name_get_attached(struct kvtier_tier *tier,
						      const char *name,
						      bool write)
{
	struct kvtier_region *r = NULL;

	if (mutex_lock_killable(&tier->lock))
		return ERR_PTR(-EINTR);
	if (kvtier_backing_attached(tier)) {
		if (write && tier->backing.read_only)
			r = ERR_PTR(-EROFS);
		else
			r = kvtier_name_get(tier, name);
	}
	mutex_unlock(&tier->lock);
	return r;
}

/*
 * The mode bits alone, as for files: owner, then group, then others. No
 * capability is asked, so this may run under tier->regions_lock.
 */
static bool kvtier_region_mode_allows(struct kvtier_region *r, bool write)
{
	int want = MAY_READ | (write ? MAY_WRITE : 0);
	umode_t mode = r->mode;

	if (uid_eq(current_fsuid(), r->owner))
		mode >>= 6;
	else if (in_group_p(r->gid))
		mode >>= 3;
	return !(want & ~mode & (MAY_READ | MAY_WRITE));
}

/* File-like permission check; CAP_DAC_OVERRIDE overrides. */
static int kvtier_region_permission(struct kvtier_region *r, bool write)
{
	if (kvtier_region_mode_allows(r, write) || capable(CAP_DAC_OVERRIDE))
		return 0;
	return -EACCES;
}

/* Persistent regions linked in the tier. Caller holds tier->regions_lock. */
u64 kvtier_nr_persistent(struct kvtier_tier *tier)
{
	lockdep_assert_held(&tier->regions_lock);
	return tier->nr_persistent;
}

/*
 * Unlink a region the caller holds a user reference of, if it is still
 * linked; drops the name's reference. A persistent region's name is gone
 * from the namespace once this returns 0. Errors: those of reading its
 * page map back (-EIO, -ENOMEM: nothing is done) and of the commit.
 */
int kvtier_name_unlink(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	struct kvtier_journal_del *del = NULL;
	bool was;
	int ret;

	if (region->persistent) {
		del = kvtier_journal_del_new();
		/* Before the commit that unlinks it moves the records. */
		mutex_lock(&tier->store.lock);
		ret = kvtier_pagemap_load_to_unlink(region);
		if (ret) {
			mutex_unlock(&tier->store.lock);
			kfree(del);
			return ret;
		}
	}
	spin_lock(&tier->regions_lock);
	was = kvtier_name_unhash(region);
	if (was && region->persistent) {
		kvtier_journal_unlinked(region, del);
		del = NULL;
	}
	spin_unlock(&tier->regions_lock);
	if (region->persistent)
		mutex_unlock(&tier->store.lock);
	kfree(del);
	if (!was)
		return 0;
	kvtier_region_put_user(region);		/* the name's reference */
	if (!region->persistent)
		return 0;
	atomic64_inc(&tier->store.changes);
	return kvtier_store_commit(tier);
}

/*
 * Put unlinked @region, whose name is now @target's, in linked @target's
 * place in the name table: the same key, so nothing is allocated and it
 * cannot fail. Both are persistent (the count of linked ones is one less
 * than before @region was unhashed, as it should be). Caller holds
 * regions_lock.
 */
static void kvtier_name_replace(struct kvtier_region *target,
				struct kvtier_region *region)
{
	lockdep_assert_held(&region->tier->regions_lock);
	WARN_ON_ONCE(rhashtable_replace_fast(&region->tier->names,
					     &target->name_node,
					     &region->name_node,
					     kvtier_name_params));
	target->linked = false;
	list_del_init(&target->lru_node);
	region->linked = true;
}

/*
 * Rename persistent region @region to @to, replacing @target: the region
 * called @to, or NULL if there is none. The caller holds a user reference
 * of both. In memory the names change in one regions_lock section; on the
 * namespace in one commit, a checkpoint: the journal names regions, and a
 * replay that met a region under a name new to it would make it afresh
 * with only the pages changed since the last commit. So a crash leaves
 * the old names or the new ones, never a mix. Errors: ENOENT (@region or
 * @target was unlinked meanwhile), EEXIST (another region took @to
 * meanwhile), ENOMEM (the name table could not grow under the spinlock:
 * nothing changes, unless a create took the old name in the moment it
 * was free, which is logged), those of reading @target's page
 * map back (nothing changes) and of the commit (EIO: the rename is done
 * in memory and reaches the namespace with the next commit).
 */
int kvtier_name_rename(struct kvtier_region *region, const char *to,
		       struct kvtier_region *target)
{
	struct kvtier_tier *tier = region->tier;
	char from[KVTIER_NAME_MAX];
	int ret;

	/* As an unlink: the target's records move before the commit. */
	mutex_lock(&tier->store.lock);
	if (target) {
		ret = kvtier_pagemap_load_to_unlink(target);
		if (ret)
			goto out_store;
	}
	spin_lock(&tier->regions_lock);
	ret = -ENOENT;
	if (!region->linked || (target && !target->linked))
		goto out;
	ret = -EEXIST;
	if (kvtier_name_find(tier, to) != target)
		goto out;
	ret = 0;
	memcpy(from, region->name, sizeof(from));
	kvtier_name_unhash(region);
	strscpy_pad(region->name, to, sizeof(region->name));
	if (target) {
		kvtier_name_replace(target, region);
		/* No journal record: the checkpoint records the target's going. */
		kvtier_journal_unlinked(target, NULL);
	} else if (kvtier_name_hash(region)) {
		/*
		 * The table could not grow under the spinlock: the old name
		 * back, linked once the lock is let go of.
		 */
		memcpy(region->name, from, sizeof(from));
		ret = -ENOMEM;
		goto out;
	}
	/* A rename is not a use: to its place in its owner's LRU. */
	kvtier_user_lru_add(region, true);
	WRITE_ONCE(tier->store.need_full, true);
out:
	spin_unlock(&tier->regions_lock);
	if (ret == -ENOMEM && !kvtier_name_relink(region)) {
		/*
		 * A create took the old name in the moment it was free: the
		 * region is gone, as if unlinked, and the checkpoint says so.
		 */
		dev_warn(&tier->dev, "rename of %s: the name table could not grow and the name was taken meanwhile: unlinked\n",
			 from);
		WRITE_ONCE(tier->store.need_full, true);
		kvtier_region_put_user(region);	/* the name's reference */
	}
out_store:
	mutex_unlock(&tier->store.lock);
	if (ret)
		return ret;
	if (target)
		kvtier_region_put_user(target);	/* the name's reference */
	atomic64_inc(&tier->store.changes);
	return kvtier_store_commit(tier);
}

/*
 * Create region @name of @size bytes, whose mappings share @inode's
 * address_space, and link it, unless a region of that name appeared
 * meanwhile: then that one is returned (with a user reference) and nothing
 * is created. A persistent one is committed before it is returned.
 */
static struct kvtier_region *kvtier_name_create(struct kvtier_tier *tier,
						struct inode *inode,
						const char *name, u64 size,
						umode_t mode, bool persistent,
						bool *created)
{
	struct kvtier_region *region, *other;
	bool exempt = capable(CAP_SYS_RESOURCE);
	int ret = 0;

	if (persistent && round_up(size, PAGE_SIZE) >> PAGE_SHIFT >
	    (u64)U32_MAX + 1)
		return ERR_PTR(-EINVAL);
	ret = kvtier_region_admit_early(tier, round_up(size, PAGE_SIZE) >>
					PAGE_SHIFT, exempt);
	if (ret)
		return ERR_PTR(ret);
	region = kvtier_region_new(tier, inode,
				   round_up(size, PAGE_SIZE));
	if (IS_ERR(region))
		return region;
	strscpy_pad(region->name, name, sizeof(region->name));
	region->mode = mode;
	region->persistent = persistent;
	kvtier_journal_region_changed(region);
	refcount_inc(&region->users);		/* the name's reference */

	spin_lock(&tier->regions_lock);
	other = kvtier_name_lookup(tier, name);
	if (!other && persistent &&
	    kvtier_nr_persistent(tier) >= tier->store.max_regions)
		ret = -ENOSPC;
	else if (!other)
		ret = kvtier_region_admit(tier, region->owner, region->nr_pages,
					  exempt);
	if (!ret && !other)
		ret = kvtier_name_hash(region);
	if (!ret && !other)
		kvtier_region_list_add(region);
	spin_unlock(&tier->regions_lock);
	if (ret || other) {
		/* Never visible: drop both references without a list. */
		kvtier_region_put_user(region);
		kvtier_region_put_user(region);
		*created = false;
		return ret ? ERR_PTR(ret) : other;
	}
	if (persistent) {
		atomic64_inc(&tier->store.changes);
		ret = kvtier_store_commit(tier);
		if (ret) {
			kvtier_name_unlink(region);
			kvtier_region_put_user(region);
			return ERR_PTR(ret);
		}
	}
	*created = true;
	return region;
}

/*
 * A new, empty persistent region called @name with permission bits @mode,
 * owned by the caller (a file created on a kvtierfs mount), with a user
 * reference; committed before it is returned. Errors: EEXIST (a region
 * has the name: made meanwhile through the ioctls), ENOSPC, EDQUOT, EIO,
 * ENOMEM.
 */
struct kvtier_region *kvtier_name_create_file(struct kvtier_tier *tier,
					      const char *name, umode_t mode)
{
	struct kvtier_region *r;
	struct inode *inode;
	bool created;

	inode = alloc_anon_inode(kvtier_mnt->mnt_sb);
	if (IS_ERR(inode))
		return ERR_CAST(inode);
	r = kvtier_name_create(tier, inode, name, 0, mode, true, &created);
	iput(inode);		/* the region holds its own */
	if (!IS_ERR(r) && !created) {
		kvtier_region_put_user(r);
		return ERR_PTR(-EEXIST);
	}
	return r;
}

/*
 * Whether a file may be bound to @region, found by name (the caller holds a
 * user reference and checked the mode bits), read-only if @rdonly; then
 * its page map is loaded. Errors: EROFS (a read-only tier serves sealed
 * regions only, read-only: another host may be changing the rest), EPERM
 * (a sealed region is never written), those of kvtier_pagemap_load().
 */
int kvtier_name_may_bind(struct kvtier_region *region, bool rdonly)
{
	bool sealed = READ_ONCE(region->sealed);

	if (region->tier->backing.read_only && (!sealed || !rdonly))
		return -EROFS;
	if (sealed && !rdonly)
		return -EPERM;
	/* A closed persistent region's pages are on the namespace only. */
	return kvtier_pagemap_load(region);
}

/*
 * KVTIER_IOC_REGION_OPEN. Errors: EINVAL (name, flags, mode, size), EBUSY
 * (the file already has a region, or an mmap() of it is under way: a
 * mapping made meanwhile on another thread), ENODEV (no namespace), ENOENT (no such
 * region, no CREATE), EEXIST (CREATE|EXCL and it exists, CREATE without
 * SHARED and another user owns it, or PERSISTENT and it is not
 * persistent), EACCES (mode), ENOSPC (larger than the namespace,
 * or no room for another persistent region, or the tier has max_regions),
 * EDQUOT (the creator's regions would exceed user_quota_mb or
 * user_max_regions), EIO (the commit of a new
 * persistent region failed, or its page map could not be read back),
 * EUCLEAN (its page records are damaged: pagemap.c unlinks it), EFAULT,
 * ENOMEM. Nothing changes on error.
 */
long kvtier_ioctl_region_open(struct file *file,
			      struct kvtier_region_open __user *uarg)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_tier *tier = kf->tier;
	struct kvtier_region_open arg;
	struct kvtier_region *region;
	bool created = false;
	loff_t capacity;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (kvtier_name_valid(arg.name) || arg.flags & ~KVTIER_OPEN_FLAGS ||
	    arg.mode & ~0777U || arg.reserved[0] || arg.reserved[1] ||
	    ((arg.flags & (KVTIER_OPEN_EXCL | KVTIER_OPEN_SHARED)) &&
	     !(arg.flags & KVTIER_OPEN_CREATE)) ||
	    ((arg.flags & KVTIER_OPEN_EXCL) && (arg.flags & KVTIER_OPEN_SHARED)) ||
	    arg.size > (u64)MAX_LFS_FILESIZE)
		return -EINVAL;

	mutex_lock(&kf->lock);
	ret = -EBUSY;
	if (kf->region)
		goto out;
	capacity = kvtier_backing_capacity(tier);
	ret = capacity;
	if (capacity < 0)
		goto out;

	region = kvtier_name_get_attached(tier, arg.name, false);
	ret = PTR_ERR_OR_ZERO(region);
	if (ret)
		goto out;
	if (!region) {
		ret = -ENOENT;
		if (!(arg.flags & KVTIER_OPEN_CREATE))
			goto out;
		ret = -EROFS;
		if (tier->backing.read_only)
			goto out;
		ret = -EINVAL;
		if (!arg.size)
			goto out;
		ret = -ENOSPC;
		if (arg.size > capacity)
			goto out;
		region = kvtier_name_create(tier, kf->inode, arg.name, arg.size,
					    arg.mode, arg.flags & KVTIER_OPEN_PERSISTENT,
					    &created);
		ret = PTR_ERR_OR_ZERO(region);
		if (ret)
			goto out;
	}
	if (!created) {
		/*
		 * CREATE asks for the caller's own region: one that another
		 * user made first under that name (a squat, as with shm_open)
		 * is only taken with SHARED, which says the caller expects
		 * someone else's bytes.
		 */
		ret = -EEXIST;
		if ((arg.flags & KVTIER_OPEN_EXCL) ||
		    ((arg.flags & KVTIER_OPEN_PERSISTENT) && !region->persistent) ||
		    ((arg.flags & KVTIER_OPEN_CREATE) &&
		     !(arg.flags & KVTIER_OPEN_SHARED) &&
		     !uid_eq(current_fsuid(), region->owner)))
			goto out_put;
		ret = -EINVAL;
		if (arg.size && round_up(arg.size, PAGE_SIZE) !=
		    (u64)region->nr_pages << PAGE_SHIFT)
			goto out_put;
		ret = kvtier_region_permission(region,
					       !(arg.flags & KVTIER_OPEN_RDONLY));
		if (ret)
			goto out_put;
		ret = kvtier_name_may_bind(region, arg.flags & KVTIER_OPEN_RDONLY);
		if (ret)
			goto out_put;
	}
	if (region->inode != kf->inode) {
		/*
		 * No mapping exists yet (one would have made a region), but an
		 * mmap() may be under way: mmap_region() takes a temporary
		 * writable count on file->f_mapping before ->mmap and drops it
		 * on file->f_mapping after, reading the pointer each time. Deny
		 * writable mappings of the file's own address_space for good
		 * (it serves nothing once the file is bound): an mmap that
		 * counted on it first makes this bind fail (EBUSY), one that
		 * comes after fails (EPERM) instead of dropping a count the
		 * region's address_space never got.
		 */
		ret = mapping_deny_writable(kf->inode->i_mapping);
		if (ret)
			goto out_put;
		WRITE_ONCE(file->f_mapping, region->inode->i_mapping);
	}
	kf->readonly = arg.flags & KVTIER_OPEN_RDONLY;
	/* Pairs with kvtier_file_region(): readonly and f_mapping first. */
	smp_store_release(&kf->region, region);
	ret = 0;
	goto out;

out_put:
	kvtier_region_put_user(region);
out:
	mutex_unlock(&kf->lock);
	return ret;
}

/* Only the owner (or CAP_FOWNER) may unlink a region or change its flags. */
static bool kvtier_region_owner(struct kvtier_region *region)
{
	return uid_eq(current_fsuid(), region->owner) || capable(CAP_FOWNER);
}

/*
 * KVTIER_IOC_REGION_UNLINK: the name goes now, the bytes when the last file
 * and mapping go. Errors: EINVAL, ENOENT, EPERM (not the owner), EIO (the
 * commit of a persistent region's unlink failed, or its page map could not
 * be read back: then nothing changes), ENOMEM, EFAULT.
 */
long kvtier_ioctl_region_unlink(struct kvtier_tier *tier,
				struct kvtier_region_name __user *uarg)
{
	struct kvtier_region_name arg;
	struct kvtier_region *region;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (kvtier_name_valid(arg.name))
		return -EINVAL;

	region = kvtier_name_get_attached(tier, arg.name, true);
	if (IS_ERR_OR_NULL(region))
		return region ? PTR_ERR(region) : -ENOENT;
	ret = kvtier_region_owner(region) ? kvtier_name_unlink(region) : -EPERM;
	kvtier_region_put_user(region);		/* the lookup's */
	return ret;
}

/*
 * Seal @region, which the caller holds one user reference of: only if no
 * file is bound (its name and the caller's lookup are its only users),
 * checked and set under regions_lock, which binding a file by name also
 * takes; so from then on every new file is a read-only one. The pages
 * written before are written back here; the caller commits. Errors: EBUSY
 * (a file is bound), what write-back returns (then it stays unsealed).
 */
static int kvtier_region_seal(struct kvtier_region *region)
{
	struct kvtier_tier *tier = region->tier;
	int ret = 0;

	spin_lock(&tier->regions_lock);
	if (refcount_read(&region->users) != 2)
		ret = -EBUSY;
	else
		WRITE_ONCE(region->sealed, true);
	spin_unlock(&tier->regions_lock);
	if (ret)
		return ret;
	ret = kvtier_store_writeback(region, 0, region->nr_pages - 1, true);
	if (ret)
		WRITE_ONCE(region->sealed, false);
	return ret;
}

/*
 * KVTIER_IOC_REGION_SETFLAGS: pin or unpin a persistent region against
 * capacity reclaim, or seal it, committed before it returns. Errors:
 * EINVAL (name, bits, reserved, not persistent), ENOENT, EPERM (not the
 * owner, clearing SEALED, or setting PINNED without CAP_SYS_RESOURCE),
 * EBUSY (sealing a region a file is bound to), EROFS (read-only tier), EIO,
 * EFAULT.
 */
long kvtier_ioctl_region_setflags(struct kvtier_tier *tier,
				  struct kvtier_region_flags __user *uarg)
{
	struct kvtier_region_flags arg;
	struct kvtier_region *region;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (kvtier_name_valid(arg.name) || arg.reserved ||
	    (arg.set | arg.clear) & ~(KVTIER_REGION_PINNED | KVTIER_REGION_SEALED) ||
	    arg.set & arg.clear)
		return -EINVAL;
	region = kvtier_name_get_attached(tier, arg.name, true);
	if (IS_ERR_OR_NULL(region))
		return region ? PTR_ERR(region) : -ENOENT;
	ret = -EINVAL;
	if (!region->persistent)
		goto out;
	/*
	 * PINNED exempts a region from capacity reclaim, at every other
	 * user's expense: CAP_SYS_RESOURCE's to give, as room beyond a quota
	 * is. Unpinning is the owner's.
	 */
	ret = -EPERM;
	if (!kvtier_region_owner(region) || arg.clear & KVTIER_REGION_SEALED ||
	    ((arg.set & KVTIER_REGION_PINNED) && !capable(CAP_SYS_RESOURCE)))
		goto out;
	if (arg.set & KVTIER_REGION_SEALED) {
		ret = kvtier_region_seal(region);
		if (ret)
			goto out;
	}
	if (arg.set & KVTIER_REGION_PINNED)
		WRITE_ONCE(region->pinned, true);
	if (arg.clear & KVTIER_REGION_PINNED)
		WRITE_ONCE(region->pinned, false);
	kvtier_journal_region_changed(region);
	atomic64_inc(&tier->store.changes);
	ret = kvtier_store_commit(tier);
out:
	kvtier_region_put_user(region);
	return ret;
}

static void kvtier_region_entry_fill(struct kvtier_region *r,
				     struct kvtier_region_entry *e)
{
	memset(e, 0, sizeof(*e));
	strscpy(e->name, r->name, sizeof(e->name));
	e->size = kvtier_region_size(r);
	e->resident = (u64)atomic_long_read(&r->nr_resident) << PAGE_SHIFT;
	e->namespace = (u64)atomic_long_read(&r->nr_slots) << PAGE_SHIFT;
	e->created = r->created;
	e->last_used = kvtier_region_last_used(r);
	e->owner = from_kuid_munged(&init_user_ns, r->owner);
	e->mode = r->mode;
	e->flags = (r->persistent ? KVTIER_OPEN_PERSISTENT : 0) |
		   (READ_ONCE(r->pinned) ? KVTIER_REGION_PINNED : 0) |
		   (READ_ONCE(r->sealed) ? KVTIER_REGION_SEALED : 0);
	/* The name holds one user reference of its own. */
	e->users = refcount_read(&r->users) - 1;
}

/*
 * KVTIER_IOC_REGION_LIST: the tier's named regions the caller may open for
 * reading (CAP_DAC_OVERRIDE: all of them). Another user's private region
 * is not even named: its name, size and last use say what it serves. As
 * the lookups by name, it waits for an attach in progress (tier->lock), so
 * that it never lists the regions of a namespace half loaded.
 */
long kvtier_ioctl_region_list(struct kvtier_tier *tier,
			      struct kvtier_region_list __user *uarg)
{
	bool all = capable(CAP_DAC_OVERRIDE);
	struct kvtier_region_entry *entries;
	struct kvtier_region_list arg;
	struct kvtier_region *r;
	u32 n = 0, room;
	long ret = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.reserved)
		return -EINVAL;
	room = min_t(u32, arg.count, KVTIER_LIST_MAX);
	entries = kvcalloc(max(room, 1U), sizeof(*entries), GFP_KERNEL);
	if (!entries)
		return -ENOMEM;

	if (mutex_lock_killable(&tier->lock)) {
		kvfree(entries);
		return -EINTR;
	}
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node) {
		if (!r->linked || (!all && !kvtier_region_mode_allows(r, false)))
			continue;
		if (n < room)
			kvtier_region_entry_fill(r, &entries[n]);
		n++;
	}
	spin_unlock(&tier->regions_lock);
	mutex_unlock(&tier->lock);

	if (copy_to_user(u64_to_user_ptr(arg.entries), entries,
			 (size_t)min(n, room) * sizeof(*entries)) ||
	    put_user(n, &uarg->count))
		ret = -EFAULT;
	kvfree(entries);
	return ret;
}

/*
 * Module unload: volatile names are in memory only, so they go with the
 * module. Persistent ones are written back and forgotten by the detach.
 */
void kvtier_names_drop_all(struct kvtier_tier *tier)
{
	struct kvtier_region *r;

	for (;;) {
		spin_lock(&tier->regions_lock);
		list_for_each_entry(r, &tier->regions, node) {
			if (r->linked && !r->persistent)
				break;
		}
		if (list_entry_is_head(r, &tier->regions, node)) {
			spin_unlock(&tier->regions_lock);
			return;
		}
		kvtier_name_unhash(r);
		spin_unlock(&tier->regions_lock);
		kvtier_region_put_user(r);
	}
}
