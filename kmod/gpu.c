// SPDX-License-Identifier: GPL-2.0
/*
 * GPU ranges: allocations the CUDA shim (libkvtier-cuda) placed, registered
 * so operators can see which GPU memory the tier serves or accounts for
 * (debugfs "gpu_ranges", the gpu_bytes of a region). Nothing on the data
 * path reads them: a KVTIER_GPU_HMM range is an ordinary mapping of a
 * region, faulted by the GPU through HMM like any other access, and a
 * KVTIER_GPU_MANAGED range is CUDA managed memory the module never touches.
 *
 * A range belongs to the file that registered it and to the registering
 * process (tgid); closing the file drops its ranges.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kvtier.h"

/* Ranges one file may register: bounds the kernel memory a caller holds. */
#define KVTIER_GPU_MAX_PER_FILE	65536

/**
 * struct kvtier_gpu - one registered range
 * @node: on tier->gpu_ranges
 * @kf: the file that registered it
 * @tgid: the registering process
 * @id: unique in the tier, for debugfs
 * @region_id: id of the region an HMM range lies in; 0 for managed
 * @range: as registered, length rounded up to the page size
 */
struct kvtier_gpu {
	struct list_head node;
	struct kvtier_file *kf;
	pid_t tgid;
	u64 id;
	u64 region_id;
	struct kvtier_gpu_range range;
};

static bool kvtier_tenant_valid(const char *tenant)
{
	size_t len = strnlen(tenant, KVTIER_TENANT_MAX);
	size_t i;

	if (len == KVTIER_TENANT_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (tenant[i] < 0x21 || tenant[i] > 0x7e)
			return false;
	/* Bytes after the NUL are reserved too: refuse leftovers. */
	return !memchr_inv(tenant + len, 0, KVTIER_TENANT_MAX - len);
}

/*
 * The region an HMM range lies in: one MAP_SHARED mapping of @tier in the
 * caller's address space must cover [va, va + len). Adds the range to the
 * region's gpu_bytes under mmap_lock, while the mapping pins the region.
 */
static int kvtier_gpu_find_region(struct kvtier_tier *tier, unsigned long va,
				  unsigned long len, u64 *region_id)
{
	struct mm_struct *mm = current->mm;
	struct kvtier_region *region;
	struct vm_area_struct *vma;
	int ret = -EINVAL;

	if (!mm)
		return -EINVAL;
	mmap_read_lock(mm);
	vma = find_vma(mm, va);
	if (!vma || vma->vm_start > va || va + len > vma->vm_end)
		goto out;
	region = kvtier_vma_region(vma);
	if (!region || region->tier != tier)
		goto out;
	atomic_long_add(len, &region->gpu_bytes);
	*region_id = region->id;
	ret = 0;
out:
	mmap_read_unlock(mm);
	return ret;
}

/* Take @len back off the gpu_bytes of region @id, if it still exists. */
static void kvtier_gpu_region_sub(struct kvtier_tier *tier, u64 id,
				  unsigned long len)
{
	struct kvtier_region *r;

	if (!id)
		return;
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node) {
		if (r->id == id) {
			atomic_long_sub(len, &r->gpu_bytes);
			break;
		}
	}
	spin_unlock(&tier->regions_lock);
}

/* An overlapping range of the same process. Caller holds gpu_lock. */
static bool kvtier_gpu_overlaps(struct kvtier_tier *tier, pid_t tgid,
				u64 va, u64 len, unsigned int *mine,
				struct kvtier_file *kf)
{
	struct kvtier_gpu *g;
	bool overlap = false;

	lockdep_assert_held(&tier->gpu_lock);
	list_for_each_entry(g, &tier->gpu_ranges, node) {
		if (g->kf == kf)
			(*mine)++;
		if (g->tgid == tgid && va < g->range.va + g->range.length &&
		    g->range.va < va + len)
			overlap = true;
	}
	return overlap;
}

/*
 * KVTIER_IOC_GPU_REGISTER. Errors: EINVAL (bad field, or an HMM range not
 * inside one mapping of this tier), EEXIST (overlaps one of the process's
 * ranges), ENOSPC (the file holds KVTIER_GPU_MAX_PER_FILE), EFAULT, ENOMEM.
 */
long kvtier_ioctl_gpu_register(struct kvtier_file *kf,
			       struct kvtier_gpu_range __user *uarg)
{
	struct kvtier_tier *tier = kf->tier;
	unsigned int mine = 0;
	struct kvtier_gpu *g;
	u64 len;
	int ret;

	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g)
		return -ENOMEM;
	ret = -EFAULT;
	if (copy_from_user(&g->range, uarg, sizeof(g->range)))
		goto err_free;
	ret = -EINVAL;
	if (g->range.flags || g->range.reserved[0] || g->range.reserved[1] ||
	    (g->range.mode != KVTIER_GPU_HMM &&
	     g->range.mode != KVTIER_GPU_MANAGED) ||
	    !kvtier_tenant_valid(g->range.tenant))
		goto err_free;
	len = g->range.length;
	if (!len || !PAGE_ALIGNED(g->range.va) || len > TASK_SIZE ||
	    g->range.va > TASK_SIZE - round_up(len, PAGE_SIZE))
		goto err_free;
	g->range.length = round_up(len, PAGE_SIZE);
	g->kf = kf;
	g->tgid = current->tgid;

	ret = 0;
	if (g->range.mode == KVTIER_GPU_HMM) {
		ret = kvtier_gpu_find_region(tier, g->range.va, g->range.length,
					     &g->region_id);
		if (ret)
			goto err_free;
	}

	spin_lock(&tier->gpu_lock);
	if (kvtier_gpu_overlaps(tier, g->tgid, g->range.va, g->range.length,
				&mine, kf))
		ret = -EEXIST;
	else if (mine >= KVTIER_GPU_MAX_PER_FILE)
		ret = -ENOSPC;
	if (!ret) {
		g->id = ++tier->gpu_next_id;
		list_add_tail(&g->node, &tier->gpu_ranges);
	}
	spin_unlock(&tier->gpu_lock);
	if (ret)
		goto err_region;
	return 0;

err_region:
	kvtier_gpu_region_sub(tier, g->region_id, g->range.length);
err_free:
	kfree(g);
	return ret;
}

/* A field of an UNREGISTER argument: zero, or what was registered. */
static bool kvtier_gpu_matches(const struct kvtier_gpu_range *reg,
			       const struct kvtier_gpu_range *arg)
{
	static const u8 zero_uuid[16];

	if (arg->length && round_up(arg->length, PAGE_SIZE) != reg->length)
		return false;
	if (arg->mode && arg->mode != reg->mode)
		return false;
	if (memcmp(arg->gpu_uuid, zero_uuid, sizeof(zero_uuid)) &&
	    memcmp(arg->gpu_uuid, reg->gpu_uuid, sizeof(zero_uuid)))
		return false;
	if (arg->tenant[0] && strncmp(arg->tenant, reg->tenant,
				      KVTIER_TENANT_MAX))
		return false;
	return !arg->flags && !arg->reserved[0] && !arg->reserved[1];
}

/*
 * KVTIER_IOC_GPU_UNREGISTER. Errors: ENOENT (no range at va registered by
 * this file and process), EINVAL (a field differs from the registration),
 * EFAULT.
 */
long kvtier_ioctl_gpu_unregister(struct kvtier_file *kf,
				 struct kvtier_gpu_range __user *uarg)
{
	struct kvtier_tier *tier = kf->tier;
	struct kvtier_gpu_range arg;
	struct kvtier_gpu *g, *found = NULL;
	int ret = -ENOENT;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;

	spin_lock(&tier->gpu_lock);
	list_for_each_entry(g, &tier->gpu_ranges, node) {
		if (g->kf == kf && g->tgid == current->tgid &&
		    g->range.va == arg.va) {
			ret = kvtier_gpu_matches(&g->range, &arg) ? 0 : -EINVAL;
			if (!ret) {
				list_del(&g->node);
				found = g;
			}
			break;
		}
	}
	spin_unlock(&tier->gpu_lock);

	if (found) {
		kvtier_gpu_region_sub(tier, found->region_id,
				      found->range.length);
		kfree(found);
	}
	return ret;
}

/* Drop every range @kf registered: the file is being released. */
void kvtier_gpu_release(struct kvtier_file *kf)
{
	struct kvtier_tier *tier = kf->tier;
	struct kvtier_gpu *g, *tmp;
	LIST_HEAD(dead);

	spin_lock(&tier->gpu_lock);
	list_for_each_entry_safe(g, tmp, &tier->gpu_ranges, node)
		if (g->kf == kf)
			list_move(&g->node, &dead);
	spin_unlock(&tier->gpu_lock);

	list_for_each_entry_safe(g, tmp, &dead, node) {
		kvtier_gpu_region_sub(tier, g->region_id, g->range.length);
		kfree(g);
	}
}

/* debugfs "gpu_ranges": documented in Documentation/admin-guide/kvtier.rst. */
void kvtier_gpu_show(struct seq_file *m, struct kvtier_tier *tier)
{
	struct kvtier_gpu *g;

	seq_puts(m, "kvtier-gpu 1\n");
	seq_puts(m, "id pid va length mode gpu tenant region\n");
	spin_lock(&tier->gpu_lock);
	list_for_each_entry(g, &tier->gpu_ranges, node) {
		seq_printf(m, "%llu %d 0x%llx %llu %s GPU-%pUb %s ",
			   g->id, g->tgid, g->range.va, g->range.length,
			   g->range.mode == KVTIER_GPU_HMM ? "hmm" : "managed",
			   g->range.gpu_uuid,
			   g->range.tenant[0] ? g->range.tenant : "-");
		if (g->region_id)
			seq_printf(m, "%llu\n", g->region_id);
		else
			seq_puts(m, "-\n");
	}
	spin_unlock(&tier->gpu_lock);
}
