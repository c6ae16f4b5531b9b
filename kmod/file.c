// SPDX-License-Identifier: GPL-2.0
/*
 * The file operations of /dev/kvtierN: open and release, the ioctls, and a
 * bound file's region as a file - mmap and the page fault handler
 * (kvtier_vm_fault: where a KV page is served), page_mkwrite,
 * pread/pwrite, fsync and fadvise - and REGION_INFO. Pins are in pin.c,
 * named regions in names.c.
 *
 * Every mapping of a region shares the region's own address_space (a
 * private anonymous inode, installed as the file's f_mapping at open), so
 * eviction unmaps a page from every process with unmap_mapping_range(), as
 * DRM GEM and TTM do.
 *
 * Dirty tracking: pages are mapped read-only first (the mapping wants
 * write notification because it has page_mkwrite); the first write faults
 * into kvtier_vm_mkwrite, which marks the page dirty under its page lock.
 * Write-back unmaps a page before writing it, so every write after the
 * write-back faults again: a page without KVT_PG_DIRTY has no writable PTE.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/fadvise.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include <linux/kvtier.h>

#include "kvtier.h"
#include "kvtier_trace.h"

/*
 * A new struct kvtier_file of @tier for @file, counted in tier->nr_open,
 * with no region. @anon: give it its own address_space (an open of
 * /dev/kvtierN, whose region is made or bound later); without, the caller
 * binds a region at once (kvtierfs, fs.c). Errors: ENOMEM.
 */
struct kvtier_file *kvtier_file_new(struct kvtier_tier *tier,
				    struct file *file, bool anon)
{
	struct kvtier_file *kf;

	kf = kzalloc(sizeof(*kf), GFP_KERNEL);
	if (!kf)
		return ERR_PTR(-ENOMEM);
	/*
	 * Each file gets its own address_space before any mmap, so all
	 * mappings of its region are linked into one i_mmap tree that
	 * eviction can unmap through.
	 */
	if (anon) {
		kf->inode = alloc_anon_inode(kvtier_mnt->mnt_sb);
		if (IS_ERR(kf->inode)) {
			int ret = PTR_ERR(kf->inode);

			kfree(kf);
			return ERR_PTR(ret);
		}
		file->f_mapping = kf->inode->i_mapping;
	}
	kf->tier = tier;
	mutex_init(&kf->lock);
	mutex_init(&kf->pin_lock);
	xa_init(&kf->pins);
	file->private_data = kf;
	/*
	 * read_iter/write_iter honour IOCB_NOWAIT (io_uring's inline try),
	 * and O_DIRECT (kvtier_file_write_iter()).
	 */
	file->f_mode |= FMODE_NOWAIT | FMODE_CAN_ODIRECT;

	mutex_lock(&tier->lock);
	tier->nr_open++;
	mutex_unlock(&tier->lock);
	return kf;
}

static int kvtier_open(struct inode *inode, struct file *file)
{
	struct kvtier_tier *tier = container_of(inode->i_cdev,
						struct kvtier_tier, cdev);

	return PTR_ERR_OR_ZERO(kvtier_file_new(tier, file, true));
}

static int kvtier_release(struct inode *inode, struct file *file)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_tier *tier = kf->tier;

	kvtier_gpu_release(kf);
	kvtier_pin_release(file);
	if (kf->region) {
		kvtier_user_lru_closed(kf->region);
		kvtier_region_put_user(kf->region);
	}
	iput(kf->inode);		/* none for a kvtierfs file */
	kfree(kf);

	mutex_lock(&tier->lock);
	tier->nr_open--;
	mutex_unlock(&tier->lock);
	return 0;
}

/*
 * Give @kf its region. Caller holds kf->lock. Errors: EEXIST (already has
 * one), EINVAL (size 0), ENODEV (no namespace attached), ENOSPC (larger
 * than the namespace, or the tier has max_regions), EDQUOT (over
 * user_quota_mb or user_max_regions), EROFS (read-only tier), ENOMEM.
 * The bounds are checked before anything is allocated, and again when the
 * region is linked.
 */
int kvtier_file_create_region(struct kvtier_file *kf, loff_t size)
{
	struct kvtier_tier *tier = kf->tier;
	struct kvtier_region *region;
	loff_t capacity;
	bool exempt;
	int ret;

	lockdep_assert_held(&kf->lock);
	if (kf->region)
		return -EEXIST;
	if (size <= 0)
		return -EINVAL;

	capacity = kvtier_backing_capacity(tier);
	if (capacity < 0)
		return capacity;
	if (size > capacity)
		return -ENOSPC;
	if (tier->backing.read_only)
		return -EROFS;

	exempt = capable(CAP_SYS_RESOURCE);
	ret = kvtier_region_admit_early(tier, round_up(size, PAGE_SIZE) >>
					PAGE_SHIFT, exempt);
	if (ret)
		return ret;
	region = kvtier_region_new(tier, kf->inode, round_up(size, PAGE_SIZE));
	if (IS_ERR(region))
		return PTR_ERR(region);
	spin_lock(&tier->regions_lock);
	ret = kvtier_region_admit(tier, region->owner, region->nr_pages, exempt);
	if (!ret)
		kvtier_region_list_add(region);
	spin_unlock(&tier->regions_lock);
	if (ret) {
		kvtier_region_put_user(region);	/* never visible */
		return ret;
	}
	/* Pairs with kvtier_file_region(): the region whole, then seen. */
	smp_store_release(&kf->region, region);
	return 0;
}

/*
 * Neighbouring resident pages mapped by one fault (fault-around): the
 * aligned window around the fault, walked KVTIER_FAULT_AROUND_BATCH pages
 * at a time so the arrays stay small on the fault's stack. 64 pages: a
 * sequential pass over 64 KiB units (one layer's K/V of one block) takes
 * one fault per 256 KiB, not one per unit.
 */
#define KVTIER_FAULT_AROUND_PAGES	64
#define KVTIER_FAULT_AROUND_BATCH	16

/*
 * Map the resident, ready pages of [@first, @last] except the faulting
 * one; returns how many. Only pages that can be locked without waiting
 * are mapped. One walk of the xarray under one xa_lock finds and locks
 * them (a fresh region's neighbours are absent, and a zero-fill fault then
 * costs one short walk, not one lookup each), and each run of consecutive
 * indexes is mapped by one vm_insert_pages(): one page-table walk and a
 * PTE lock per eight pages instead of a walk and a lock per page, which
 * was most of a read-back's fault-around. The pages stay locked until
 * they are mapped, as every mapping of a pool page is made (eviction
 * unmaps with the lock held).
 */
static unsigned int kvtier_map_neighbours(struct vm_fault *vmf,
					  struct kvtier_region *region,
					  pgoff_t first, pgoff_t last)
{
	struct kvtier_page *kps[KVTIER_FAULT_AROUND_BATCH];
	struct page *pages[KVTIER_FAULT_AROUND_BATCH];
	pgoff_t idx[KVTIER_FAULT_AROUND_BATCH];
	struct vm_area_struct *vma = vmf->vma;
	XA_STATE(xas, &region->pages, first);
	unsigned int mapped = 0, n = 0, nl = 0, i, run;
	void *entry;

	/*
	 * A page locked under the xa_lock is the region's page at its index
	 * until it is unlocked (a kp leaves the xarray only under its page
	 * lock): only pages that lock at once are taken, so nothing waits.
	 */
	xa_lock(&region->pages);
	xas_for_each(&xas, entry, last) {
		if (xa_is_value(entry) || xas.xa_index == vmf->pgoff)
			continue;
		kps[n] = entry;
		pages[n] = kps[n]->page;
		if (!trylock_page(pages[n]))
			continue;
		idx[n] = xas.xa_index;
		get_page(pages[n]);
		if (++n == KVTIER_FAULT_AROUND_BATCH)
			break;
	}
	xa_unlock(&region->pages);

	/* Keep the ready ones, in index order. */
	for (i = 0; i < n; i++) {
		if (kvtier_page_ready(kps[i])) {
			pages[nl] = pages[i];
			idx[nl++] = idx[i];
			continue;
		}
		unlock_page(pages[i]);
		put_page(pages[i]);
	}

	for (i = 0; i < nl; i += run) {
		unsigned long left, num;

		for (run = 1; i + run < nl && idx[i + run] == idx[i] + run; run++)
			;
		left = run;
		while (left) {
			unsigned int at = i + run - left;
			unsigned long addr = vma->vm_start +
				((idx[at] - vma->vm_pgoff) << PAGE_SHIFT);
			int err;

			num = left;
			err = vm_insert_pages(vma, addr, pages + at, &num);
			mapped += left - num;
			left = num;
			/* A page mapped already (-EBUSY): pass over it. */
			if (err != -EBUSY)
				break;
			left--;
		}
	}
	for (i = 0; i < nl; i++) {
		unlock_page(pages[i]);
		put_page(pages[i]);
	}
	return mapped;
}

/* Map the already-resident neighbours of a fault read-only. */
static void kvtier_fault_around(struct vm_fault *vmf,
				struct kvtier_region *region)
{
	struct vm_area_struct *vma = vmf->vma;
	pgoff_t first = round_down(vmf->pgoff, KVTIER_FAULT_AROUND_PAGES);
	pgoff_t last = first + KVTIER_FAULT_AROUND_PAGES - 1;
	unsigned int mapped = 0;
	pgoff_t at;

	/* Only indexes this VMA maps and the region has. */
	first = max(first, vma->vm_pgoff);
	last = min3(last, vma->vm_pgoff + vma_pages(vma) - 1,
		    region->nr_pages - 1);
	for (at = first; at <= last; at += KVTIER_FAULT_AROUND_BATCH)
		mapped += kvtier_map_neighbours(vmf, region, at,
						min(last, at + KVTIER_FAULT_AROUND_BATCH - 1));
	if (mapped)
		kvtier_count(region->tier, KVT_STAT_FAULT_AROUND, mapped);
}

static const enum kvtier_hist_id kvtier_fault_hist[] = {
	[KVT_GET_MINOR] = KVT_HIST_FAULT_MINOR,
	[KVT_GET_ZERO] = KVT_HIST_FAULT_ZERO,
	[KVT_GET_MAJOR] = KVT_HIST_FAULT_MAJOR,
};

static const enum kvtier_stat kvtier_fault_stat[] = {
	[KVT_GET_MINOR] = KVT_STAT_FAULT_MINOR,
	[KVT_GET_ZERO] = KVT_STAT_FAULT_ZERO,
	[KVT_GET_MAJOR] = KVT_STAT_FAULT_MAJOR,
};

/*
 * What a fault answers for kvtier_get_page()'s error: an allocation that
 * failed is the kernel's memory shortage (VM_FAULT_OOM: the memory cgroup
 * or the core handles it and the access is retried, as for the page
 * cache); a fatal signal needs no answer (the task dies before the access
 * is retried); everything else - a read that failed or did not match its
 * CRC, no namespace space, a budget nothing could be evicted from for
 * about 2 s - is the data not being available: SIGBUS, as for a file.
 */
static vm_fault_t kvtier_fault_errno(long err)
{
	switch (err) {
	case -ENOMEM:
		return VM_FAULT_OOM;
	case -EINTR:
		return VM_FAULT_NOPAGE;
	default:
		return VM_FAULT_SIGBUS;
	}
}

/* The page fault handler: where a KV page is served. */
static vm_fault_t kvtier_vm_fault(struct vm_fault *vmf)
{
	struct kvtier_region *region = vmf->vma->vm_private_data;
	struct kvtier_tier *tier = region->tier;
	u64 start = ktime_get_ns(), ns;
	struct kvtier_page *kp;
	enum kvtier_get how;

	if (vmf->pgoff >= region->nr_pages)
		return VM_FAULT_SIGBUS;

	kp = kvtier_get_page(region, vmf->pgoff, &how);
	if (IS_ERR(kp))
		return kvtier_fault_errno(PTR_ERR(kp));
	kvtier_fault_around(vmf, region);
	kvtier_ra_async(region, vmf->pgoff);

	ns = ktime_get_ns() - start;
	kvtier_count(tier, kvtier_fault_stat[how], 1);
	kvtier_hist_add(&tier->lat[kvtier_fault_hist[how]], ns);
	atomic_long_inc(&region->nr_faults);
	WRITE_ONCE(region->last_use, jiffies);
	trace_kvtier_fault(tier->id, region->id,
			   (u64)vmf->pgoff << PAGE_SHIFT, how, ns);

	/* Our reference becomes the PTE's; the core unlocks the page. */
	vmf->page = kp->page;
	return VM_FAULT_LOCKED | (how == KVT_GET_MAJOR ? VM_FAULT_MAJOR : 0);
}

/* First write to a mapped page since it was mapped or written back. */
static vm_fault_t kvtier_vm_mkwrite(struct vm_fault *vmf)
{
	struct kvtier_region *region = vmf->vma->vm_private_data;
	struct page *page = vmf->page;
	struct kvtier_page *kp;
	void *entry;

	lock_page(page);
	/*
	 * The entry may be another page's kp, which only its own page lock
	 * keeps alive: look at it under the xa_lock, which every free of a
	 * visible kp takes to remove it first. Ours (same page, locked here)
	 * then stays.
	 */
	xa_lock(&region->pages);
	entry = xa_load(&region->pages, vmf->pgoff);
	kp = entry && !xa_is_value(entry) &&
	     ((struct kvtier_page *)entry)->page == page ? entry : NULL;
	xa_unlock(&region->pages);
	if (!kp) {
		/* Evicted meanwhile: let the access fault it in again. */
		unlock_page(page);
		return VM_FAULT_NOPAGE;
	}
	if (kvtier_page_wait_writeback(kp)) {
		/* Killed: the access is not retried. */
		unlock_page(page);
		return VM_FAULT_NOPAGE;
	}
	kvtier_pool_mark_dirty(region->tier, kp);
	return VM_FAULT_LOCKED;
}

static const struct vm_operations_struct kvtier_vm_ops = {
	.fault = kvtier_vm_fault,
	.page_mkwrite = kvtier_vm_mkwrite,
};

/*
 * mmap(MAP_SHARED) of a file without a region creates one of the mapping's
 * length; later mappings map (part of) it. A file opened read-only (no
 * FMODE_WRITE) maps read-only. Errors: EINVAL (MAP_PRIVATE, a
 * first mapping at a non-zero offset, beyond the region's end), ENODEV (no
 * namespace), ENOSPC (larger than the namespace), ENOMEM.
 */
static int kvtier_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct kvtier_file *kf = file->private_data;
	unsigned long pages = vma_pages(vma);
	struct kvtier_region *region;
	int ret = 0;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;

	mutex_lock(&kf->lock);
	/*
	 * MAP_SHARED of a file opened read-only has VM_MAYSHARE alone (the
	 * core drops VM_SHARED and VM_MAYWRITE): only a file bound
	 * read-only may map so (a kvtierfs file opened O_RDONLY), never
	 * one that would make a region it cannot write.
	 */
	if (!(vma->vm_flags & VM_SHARED) && !kf->readonly) {
		ret = -EINVAL;
		goto out;
	}
	if (!kf->region) {
		if (vma->vm_pgoff) {
			ret = -EINVAL;
			goto out;
		}
		ret = kvtier_file_create_region(kf, (loff_t)pages << PAGE_SHIFT);
		if (ret)
			goto out;
	}
	region = kf->region;
	if (vma->vm_pgoff >= region->nr_pages ||
	    pages > region->nr_pages - vma->vm_pgoff) {
		ret = -EINVAL;
		goto out;
	}
	if (kf->readonly) {
		/* Bound read-only: no writable mapping, now or by mprotect. */
		if (vma->vm_flags & VM_WRITE) {
			ret = -EACCES;
			goto out;
		}
		kvtier_vm_flags_clear(vma, VM_MAYWRITE);
	}
	vma->vm_ops = &kvtier_vm_ops;
	vma->vm_private_data = region;
	/*
	 * MIXEDMAP lets fault-around insert pages with vm_insert_pages(); they
	 * are ordinary refcounted pages (GUP and HMM see them). DONTEXPAND:
	 * a region has a fixed size, mremap may move but not grow it.
	 */
	kvtier_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
out:
	mutex_unlock(&kf->lock);
	return ret;
}

/* The region @vma maps, or NULL if it is not a mapping of a kvtier file. */
struct kvtier_region *kvtier_vma_region(struct vm_area_struct *vma)
{
	return vma->vm_ops == &kvtier_vm_ops ? vma->vm_private_data : NULL;
}

/*
 * The region @file is bound to, or NULL. Lockless: binding may hold
 * kf->lock across namespace I/O, and every read and write (io_uring's
 * inline IOCB_NOWAIT try among them) looks the region up. A call that
 * races with the binding sees NULL or the region whole, as if it came
 * just before or just after.
 */
struct kvtier_region *kvtier_file_region(struct file *file)
{
	struct kvtier_file *kf = file->private_data;

	/* Pairs with the binders' smp_store_release(). */
	return smp_load_acquire(&kf->region);
}

/*
 * Copy @n bytes at @off of @kp, locked and referenced by the caller (both
 * are dropped), to @to, keeping the asynchronous readahead going. The
 * copy runs unlocked: the destination may be this very page. Returns the
 * bytes copied.
 */
static size_t kvtier_copy_out(struct kvtier_region *region,
			      struct kvtier_page *kp, size_t off, size_t n,
			      struct iov_iter *to)
{
	struct page *page = kp->page;
	size_t copied;

	kvtier_ra_async(region, kp->index);
	unlock_page(page);
	copied = copy_page_to_iter(page, off, n, to);
	put_page(page);
	return copied;
}

/*
 * pread with IOCB_NOWAIT (io_uring's first, inline try; preadv2 with
 * RWF_NOWAIT): holes and resident pages whose lock is free are copied;
 * a page that needs I/O or a lock someone holds ends it with -EAGAIN and
 * nothing consumed, so io_uring issues it again from its workers, where it
 * may wait. It never gives a short read a blocking one would not.
 */
static ssize_t kvtier_read_nowait(struct kvtier_region *region,
				  struct kiocb *iocb, struct iov_iter *to,
				  loff_t size)
{
	loff_t pos = iocb->ki_pos;
	ssize_t done = 0;

	while (iov_iter_count(to) && pos < size) {
		size_t n = min_t(size_t, PAGE_SIZE - offset_in_page(pos),
				 iov_iter_count(to));
		struct kvtier_page *kp;
		size_t copied;

		n = min_t(loff_t, n, size - pos);
		kp = kvtier_get_page_nowait(region, pos >> PAGE_SHIFT);
		if (IS_ERR(kp)) {
			iov_iter_revert(to, done);
			return PTR_ERR(kp);
		}
		if (!kp)
			copied = iov_iter_zero(n, to);
		else
			copied = kvtier_copy_out(region, kp, offset_in_page(pos), n, to);
		pos += copied;
		done += copied;
		if (copied < n) {
			if (!done)
				return -EFAULT;
			break;
		}
	}
	iocb->ki_pos = pos;
	return done;
}

/*
 * pread: bytes of the region; absent pages read as zero without I/O. A
 * page-aligned request into page-aligned user memory reads the pages that
 * are only on the namespace straight into it (direct.c); any other
 * request has those pages read ahead of its copy, as far as it goes
 * (kvtier_read_request()). Resident pages are copied from the pool.
 */
static ssize_t kvtier_file_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct kvtier_region *region;
	loff_t size, pos = iocb->ki_pos;
	pgoff_t last, next, pool_to = 0;
	ssize_t done = 0;
	bool direct;

	region = kvtier_file_region(iocb->ki_filp);
	if (!region)
		return -ENXIO;
	WRITE_ONCE(region->last_use, jiffies);
	size = kvtier_region_size(region);
	if (pos >= size || !iov_iter_count(to))
		return 0;
	last = (min_t(loff_t, size, pos + iov_iter_count(to)) - 1) >> PAGE_SHIFT;
	next = pos >> PAGE_SHIFT;
	direct = kvtier_direct_ok(pos, to);
	if (direct && !is_sync_kiocb(iocb) && pos + iov_iter_count(to) <= size) {
		ssize_t ret = kvtier_direct_read_async(region, iocb, to);

		if (ret != -EAGAIN)
			return ret;
	}
	if (iocb->ki_flags & IOCB_NOWAIT)
		return kvtier_read_nowait(region, iocb, to, size);
	while (iov_iter_count(to) && pos < size) {
		pgoff_t index = pos >> PAGE_SHIFT;
		size_t off = offset_in_page(pos);
		size_t n = min_t(size_t, PAGE_SIZE - off, iov_iter_count(to));
		struct kvtier_page *kp;
		enum kvtier_get how;
		size_t copied;

		if (fatal_signal_pending(current)) {
			if (!done)
				done = -EINTR;
			break;
		}
		/* Whole pages only: a file's last page may end before it. */
		if (direct && index >= pool_to && index < size >> PAGE_SHIFT) {
			ssize_t got = kvtier_direct_read(region, index,
							 min_t(pgoff_t, last,
							       (size >> PAGE_SHIFT) - 1),
							 to, &pool_to);

			if (got < 0) {
				if (!done)
					done = got;
				break;
			}
			pos += got;
			done += got;
			if (got)
				continue;
		}
		n = min_t(loff_t, n, size - pos);
		if (!direct && last > index)
			kvtier_read_request(region, index, last, &next);
		if (!xa_load(&region->pages, index)) {
			copied = iov_iter_zero(n, to);
		} else {
			kp = kvtier_get_page(region, index, &how);
			if (IS_ERR(kp)) {
				if (!done)
					done = PTR_ERR(kp);
				break;
			}
			copied = kvtier_copy_out(region, kp, off, n, to);
		}
		pos += copied;
		done += copied;
		if (copied < n) {
			if (!done)
				done = -EFAULT;
			break;
		}
	}
	if (done > 0)
		iocb->ki_pos = pos;
	return done;
}

/*
 * Write the dirty pages of bytes [@start, @end] of @region back to the
 * namespace; with @evict, drop every page of the range from the pool too
 * (pinned pages stay); with @flush, then make them durable - a commit for
 * a persistent region (which makes every other persistent change durable
 * too), a flush of the device's write cache otherwise - and report the
 * region's sticky write error. Returns 0 or the first -errno.
 */
int kvtier_file_sync(struct kvtier_region *region, loff_t start, loff_t end,
		     bool evict, bool flush)
{
	pgoff_t first, last;
	int ret = 0, err;

	if (start < (loff_t)region->nr_pages << PAGE_SHIFT) {
		first = start >> PAGE_SHIFT;
		last = min_t(loff_t, end >> PAGE_SHIFT, region->nr_pages - 1);
		ret = kvtier_store_writeback(region, first, last, evict);
	}
	if (!flush)
		return ret;
	if (region->persistent)
		err = kvtier_store_commit(region->tier);
	else
		err = kvtier_io_flush(region->tier);
	if (!ret)
		ret = err;
	if (!ret)
		ret = READ_ONCE(region->err);
	return ret;
}

/*
 * The slow way for a piece whose copy under the page lock keeps faulting:
 * the source is a mapping of this tier that reclaim takes away between the
 * fault-in and the copy (a pool with little else to evict). Copy it into a
 * bounce page outside every page lock, then into the page. Returns the
 * bytes written, or -errno (-EFAULT: nothing could be read).
 */
static ssize_t kvtier_write_bounced(struct kvtier_region *region, pgoff_t index,
				    size_t off, size_t n, struct iov_iter *from)
{
	struct kvtier_page *kp;
	enum kvtier_get how;
	void *bounce;
	size_t got;

	bounce = (void *)__get_free_page(GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	got = copy_from_iter(bounce, n, from);
	if (!got) {
		free_page((unsigned long)bounce);
		return -EFAULT;
	}
	kp = kvtier_get_page(region, index, &how);
	if (IS_ERR(kp)) {
		iov_iter_revert(from, got);
		free_page((unsigned long)bounce);
		return PTR_ERR(kp);
	}
	if (kvtier_page_wait_writeback(kp)) {
		unlock_page(kp->page);
		put_page(kp->page);
		iov_iter_revert(from, got);
		free_page((unsigned long)bounce);
		return -EINTR;
	}
	memcpy_to_page(kp->page, off, bounce, got);
	kvtier_pool_mark_dirty(region->tier, kp);
	unlock_page(kp->page);
	put_page(kp->page);
	free_page((unsigned long)bounce);
	return got;
}

/*
 * pwrite: the user's bytes go straight into the region's page, copied with
 * page faults disabled under the page lock (the source may be a mapping of
 * this very page, whose fault would wait for that lock); the source is
 * faulted in before, and a copy cut short by a fault is retried after
 * faulting it in again, as generic_perform_write() does; a piece that
 * copies nothing that way goes through a bounce page
 * (kvtier_write_bounced()), so a source reclaim keeps taking away cannot
 * make it spin. A page written whole is not read back or zero-filled first
 * (kvtier_get_page_blank()). Writing at or past the end: -EFBIG; bound
 * read-only: -EACCES. With the checksum off, whole pages of a region
 * that is not persistent, from page-aligned memory, that are not resident
 * are written straight from the caller's pages instead (direct.c).
 *
 * O_DIRECT (IOCB_DIRECT) writes through: the pages written reach the
 * namespace and leave the pool before the call returns, as a block
 * device's O_DIRECT write leaves nothing in the page cache. Other than by
 * a direct write, the bytes go through pool pages: a CRC32C computed on
 * the caller's buffer would not be that of what the device reads from it
 * if the caller (another thread) changed it during the DMA, and a page
 * copied under its lock is stable. O_DSYNC (IOCB_DSYNC, also O_SYNC,
 * RWF_DSYNC) makes the write durable before it returns, as fdatasync() of
 * the range after it would. Either fails the call with the write-back's error although the
 * bytes were copied (as generic_write_sync() does).
 */
static ssize_t kvtier_file_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct kvtier_region *region = kvtier_file_region(iocb->ki_filp);
	struct kvtier_file *kf = iocb->ki_filp->private_data;
	loff_t size, pos = iocb->ki_pos;
	bool bounced = false, direct;
	pgoff_t last, pool_to = 0;
	ssize_t done = 0;

	if (!region)
		return -ENXIO;
	if (kf->readonly)
		return -EACCES;
	size = kvtier_region_size(region);
	if (iov_iter_count(from) && pos >= size)
		return -EFBIG;
	WRITE_ONCE(region->last_use, jiffies);
	last = (min_t(loff_t, size, pos + iov_iter_count(from)) - 1) >> PAGE_SHIFT;
	/* Without a CRC to compute, whole pages need no stable copy. */
	direct = !region->persistent && !READ_ONCE(region->tier->knobs.checksum) &&
		 kvtier_direct_ok(pos, from);
	if (direct && !is_sync_kiocb(iocb) &&
	    pos + iov_iter_count(from) <= size) {
		ssize_t ret = kvtier_direct_write_async(region, iocb, from);

		if (ret != -EAGAIN)
			return ret;
	}
	/*
	 * Any other write may wait for a page lock, a budget charge or a
	 * read-back: with IOCB_NOWAIT io_uring issues it from its workers.
	 */
	if ((iocb->ki_flags & IOCB_NOWAIT) && iov_iter_count(from))
		return -EAGAIN;
	while (iov_iter_count(from) && pos < size) {
		pgoff_t index = pos >> PAGE_SHIFT;
		size_t off = offset_in_page(pos);
		size_t n = min_t(size_t, PAGE_SIZE - off, iov_iter_count(from));
		size_t copied, unreadable;
		struct kvtier_page *kp;
		enum kvtier_get how;
		struct page *page;

		if (direct && index >= pool_to) {
			ssize_t got = kvtier_direct_write(region, index, last,
							  from, &pool_to);

			pos += got;
			done += got;
			if (got) {
				bounced = false;
				goto next_direct;
			}
		}
		n = min_t(loff_t, n, size - pos);
		/* Only what can be faulted in: a source cut short is EFAULT. */
		unreadable = fault_in_iov_iter_readable(from, n);
		if (unreadable == n) {
			if (!done)
				done = -EFAULT;
			break;
		}
		n -= unreadable;
		if (bounced) {
			ssize_t ret = kvtier_write_bounced(region, index, off, n,
							   from);

			if (ret < 0) {
				if (!done)
					done = ret;
				break;
			}
			copied = ret;
			bounced = false;
			goto next;
		}
		if (!off && n == PAGE_SIZE)
			kp = kvtier_get_page_blank(region, index, &how);
		else
			kp = kvtier_get_page(region, index, &how);
		if (IS_ERR(kp)) {
			if (!done)
				done = PTR_ERR(kp);
			break;
		}
		page = kp->page;
		if (kvtier_page_wait_writeback(kp)) {
			unlock_page(page);
			put_page(page);
			if (!done)
				done = -EINTR;
			break;
		}
		pagefault_disable();
		copied = copy_page_from_iter_atomic(page, off, n, from);
		pagefault_enable();
		if (how == KVT_GET_BLANK && !kvtier_page_blank_end(kp, copied)) {
			/* Undone (kp is gone): none of it was written. */
			iov_iter_revert(from, copied);
			copied = 0;
		} else {
			if (copied)
				kvtier_pool_mark_dirty(region->tier, kp);
			unlock_page(page);
		}
		put_page(page);
		/* Nothing copied although it was faulted in: bounce it. */
		bounced = !copied;
next:
		pos += copied;
		done += copied;
next_direct:
		if (fatal_signal_pending(current)) {
			if (!done)
				done = -EINTR;
			break;
		}
		cond_resched();
	}
	if (done <= 0)
		return done;
	iocb->ki_pos = pos;
	if (iocb->ki_flags & (IOCB_DIRECT | IOCB_DSYNC)) {
		int err = kvtier_file_sync(region, pos - done, pos - 1,
					   iocb->ki_flags & IOCB_DIRECT,
					   iocb->ki_flags & IOCB_DSYNC);

		if (err)
			return err;
	}
	return done;
}

/*
 * fsync/fdatasync/msync(MS_SYNC): every dirty page of the range reaches
 * the namespace, and the device cache is flushed; for a persistent region
 * a commit makes the pages (and every other persistent change) durable.
 * Reports a write error that happened since the region was created
 * (sticky, like a filesystem).
 */
static int kvtier_file_fsync(struct file *file, loff_t start, loff_t end,
			     int datasync)
{
	struct kvtier_region *region = kvtier_file_region(file);

	if (!region)
		return 0;
	return kvtier_file_sync(region, start, end, false, true);
}

/*
 * posix_fadvise: WILLNEED prefetches asynchronously into the pool;
 * DONTNEED writes the range back and drops it from host memory (the data
 * stays on the namespace). Errors: EINVAL (bad advice, negative offset or
 * length, offset at or past the end), ENXIO (no region yet).
 */
static int kvtier_file_fadvise(struct file *file, loff_t offset, loff_t len,
			       int advice)
{
	struct kvtier_region *region = kvtier_file_region(file);
	loff_t size, end;

	switch (advice) {
	case POSIX_FADV_NORMAL:
	case POSIX_FADV_RANDOM:
	case POSIX_FADV_SEQUENTIAL:
	case POSIX_FADV_NOREUSE:
	case POSIX_FADV_WILLNEED:
	case POSIX_FADV_DONTNEED:
		break;
	default:
		return -EINVAL;
	}
	if (offset < 0 || len < 0)
		return -EINVAL;
	if (!region)
		return -ENXIO;
	size = (loff_t)region->nr_pages << PAGE_SHIFT;
	if (offset >= size)
		return -EINVAL;
	end = (!len || len > size - offset) ? size - 1 : offset + len - 1;

	switch (advice) {
	case POSIX_FADV_WILLNEED:
		kvtier_prefetch(region, offset >> PAGE_SHIFT, end >> PAGE_SHIFT);
		return 0;
	case POSIX_FADV_DONTNEED:
		return kvtier_store_writeback(region, offset >> PAGE_SHIFT,
					       end >> PAGE_SHIFT, true);
	}
	return 0;
}

static long kvtier_ioctl_region_create(struct kvtier_file *kf,
				       struct kvtier_region_create __user *uarg)
{
	struct kvtier_region_create arg;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || !arg.size || arg.size > (u64)MAX_LFS_FILESIZE)
		return -EINVAL;
	mutex_lock(&kf->lock);
	ret = kvtier_file_create_region(kf, arg.size);
	mutex_unlock(&kf->lock);
	return ret;
}

/* KVTIER_IOC_REGION_INFO. Errors: ENXIO (no region bound), EFAULT. */
static long kvtier_ioctl_region_info(struct file *file,
				     struct kvtier_region_info __user *uinfo)
{
	struct kvtier_file *kf = file->private_data;
	struct kvtier_region *r = kvtier_file_region(file);
	struct kvtier_region_info info = {};

	if (!r)
		return -ENXIO;
	/* The name changes under regions_lock (a rename); the rest: a snapshot. */
	spin_lock(&r->tier->regions_lock);
	strscpy(info.name, r->name, sizeof(info.name));
	spin_unlock(&r->tier->regions_lock);
	info.id = r->id;
	info.size = kvtier_region_size(r);
	info.resident = (u64)atomic_long_read(&r->nr_resident) << PAGE_SHIFT;
	info.namespace = (u64)atomic_long_read(&r->nr_slots) << PAGE_SHIFT;
	info.dirty = (u64)atomic_long_read(&r->nr_dirty) << PAGE_SHIFT;
	info.pinned = (u64)atomic_long_read(&r->nr_pinned) << PAGE_SHIFT;
	info.faults = atomic_long_read(&r->nr_faults);
	info.refaults = atomic_long_read(&r->nr_refaults);
	info.gpu_bytes = atomic_long_read(&r->gpu_bytes);
	info.owner = from_kuid_munged(&init_user_ns, r->owner);
	info.mode = r->mode;
	/* A linked name holds one user reference of its own. */
	info.users = refcount_read(&r->users) - (READ_ONCE(r->linked) ? 1 : 0);
	if (READ_ONCE(r->persistent))
		info.flags |= KVTIER_OPEN_PERSISTENT;
	if (READ_ONCE(r->pinned))
		info.flags |= KVTIER_REGION_PINNED;
	if (READ_ONCE(r->sealed))
		info.flags |= KVTIER_REGION_SEALED;
	if (kf->readonly)
		info.flags |= KVTIER_OPEN_RDONLY;
	info.error = READ_ONCE(r->err);

	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long kvtier_ioctl_tier_info(struct kvtier_tier *tier,
				   struct kvtier_tier_info __user *uinfo)
{
	struct kvtier_tier_info info = {
		.abi_version = KVTIER_ABI_VERSION,
		.tier_id = tier->id,
	};

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier)) {
		info.flags |= KVTIER_TIER_ATTACHED;
		info.logical_block_size = tier->backing.lbs;
		info.capacity_bytes = (u64)tier->backing.nr_sectors << SECTOR_SHIFT;
	}
	mutex_unlock(&tier->lock);

	if (copy_to_user(uinfo, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

static long kvtier_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct kvtier_file *kf = file->private_data;

	switch (cmd) {
	case KVTIER_IOC_TIER_INFO:
		return kvtier_ioctl_tier_info(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_CREATE:
		return kvtier_ioctl_region_create(kf, (void __user *)arg);
	case KVTIER_IOC_REGION_OPEN:
		return kvtier_ioctl_region_open(file, (void __user *)arg);
	case KVTIER_IOC_REGION_UNLINK:
		return kvtier_ioctl_region_unlink(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_LIST:
		return kvtier_ioctl_region_list(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_SETFLAGS:
		return kvtier_ioctl_region_setflags(kf->tier, (void __user *)arg);
	case KVTIER_IOC_REGION_INFO:
		return kvtier_ioctl_region_info(file, (void __user *)arg);
	case KVTIER_IOC_GPU_REGISTER:
		return kvtier_ioctl_gpu_register(kf, (void __user *)arg);
	case KVTIER_IOC_GPU_UNREGISTER:
		return kvtier_ioctl_gpu_unregister(kf, (void __user *)arg);
	case KVTIER_IOC_PIN:
	case KVTIER_IOC_UNPIN: {
		struct kvtier_pin pin;

		if (copy_from_user(&pin, (void __user *)arg, sizeof(pin)))
			return -EFAULT;
		return kvtier_file_pin(file, &pin, cmd == KVTIER_IOC_PIN);
	}
	default:
		return -ENOTTY;
	}
}

const struct file_operations kvtier_fops = {
	.owner = THIS_MODULE,
	.open = kvtier_open,
	.release = kvtier_release,
	.unlocked_ioctl = kvtier_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kvtier_file_mmap,
	.read_iter = kvtier_file_read_iter,
	.write_iter = kvtier_file_write_iter,
	.fsync = kvtier_file_fsync,
	.fadvise = kvtier_file_fadvise,
	.llseek = default_llseek,
};

/*
 * How much of a write of @count bytes at @pos a kvtierfs file takes:
 * RLIMIT_FSIZE (SIGXFSZ past it) and the largest size cut it, as
 * generic_write_check_limits() does (6.1 does not export it). Errors:
 * EFBIG.
 */
static int kvtierfs_write_limits(loff_t pos, loff_t *count)
{
	unsigned long limit = rlimit(RLIMIT_FSIZE);

	if (limit != RLIM_INFINITY) {
		if ((u64)pos >= limit) {
			send_sig(SIGXFSZ, current, 0);
			return -EFBIG;
		}
		*count = min_t(u64, *count, limit - pos);
	}
	if (pos >= MAX_LFS_FILESIZE)
		return -EFBIG;
	*count = min_t(loff_t, *count, MAX_LFS_FILESIZE - pos);
	return 0;
}

/*
 * write() of a kvtierfs file: one that ends past the end makes the file
 * larger first (kvtier_region_grow(), under the inode's lock, as sizes
 * change), O_APPEND at the size found there; then the bytes go as for any
 * region. A write that fails part-way leaves the file at the size it was
 * to have, the rest zero. IOCB_NOWAIT: -EAGAIN when it would have to grow.
 */
static ssize_t kvtierfs_file_write_iter(struct kiocb *iocb,
					struct iov_iter *from)
{
	struct kvtier_region *region = kvtier_file_region(iocb->ki_filp);
	struct kvtier_file *kf = iocb->ki_filp->private_data;
	struct inode *inode = file_inode(iocb->ki_filp);
	size_t count = iov_iter_count(from);
	int ret = 0;

	loff_t checked;

	if (!region)
		return -ENXIO;
	/* Nothing to write grows nothing, wherever it is. */
	if (!count)
		return 0;
	if (!(iocb->ki_flags & IOCB_APPEND) &&
	    iocb->ki_pos + (loff_t)count <= kvtier_region_size(region))
		return kvtier_file_write_iter(iocb, from);
	if (kf->readonly)
		return -EACCES;
	if (iocb->ki_flags & IOCB_NOWAIT)
		return -EAGAIN;
	inode_lock(inode);
	/*
	 * O_APPEND's position is the region's size (generic_write_checks()
	 * would read f_mapping's host, the region's inode).
	 */
	if (iocb->ki_flags & IOCB_APPEND)
		iocb->ki_pos = kvtier_region_size(region);
	checked = count;
	ret = kvtierfs_write_limits(iocb->ki_pos, &checked);
	if (!ret) {
		iov_iter_truncate(from, checked);
		ret = kvtier_region_grow(region, iocb->ki_pos + checked,
					 capable(CAP_SYS_RESOURCE));
	}
	if (!ret)
		i_size_write(inode, kvtier_region_size(region));
	inode_unlock(inode);
	if (ret)
		return ret;
	return kvtier_file_write_iter(iocb, from);
}

/*
 * The ioctls of a kvtierfs file: those about its own region and tier.
 * Listing, creating, unlinking or flagging regions by name, and GPU
 * ranges, stay with /dev/kvtierN, whose mode keeps them to the kvtier
 * group; a file of the mount is reached by whoever its path lets in.
 */
static long kvtierfs_file_ioctl(struct file *file, unsigned int cmd,
				unsigned long arg)
{
	switch (cmd) {
	case KVTIER_IOC_TIER_INFO:
	case KVTIER_IOC_REGION_INFO:
	case KVTIER_IOC_PIN:
	case KVTIER_IOC_UNPIN:
		return kvtier_ioctl(file, cmd, arg);
	default:
		return -ENOTTY;
	}
}

/* A file of a kvtierfs mount (fs.c): its region is bound at open. */
const struct file_operations kvtierfs_file_fops = {
	.owner = THIS_MODULE,
	.open = kvtierfs_open,
	.release = kvtier_release,
	.unlocked_ioctl = kvtierfs_file_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kvtier_file_mmap,
	.read_iter = kvtier_file_read_iter,
	.write_iter = kvtierfs_file_write_iter,
	.fsync = kvtier_file_fsync,
	.fadvise = kvtier_file_fadvise,
	/* SEEK_END by the file's inode: f_mapping's host is the region's. */
	.llseek = default_llseek,
};
