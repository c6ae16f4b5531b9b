// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/class/kvtier/kvtierN/ attributes. Every attribute is documented in
 * Documentation/ABI/testing/sysfs-class-kvtier with its unit and range.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "kvtier.h"

static ssize_t backing_dev_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	ssize_t ret;

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		ret = sysfs_emit(buf, "%s\n", tier->backing.path);
	else
		ret = sysfs_emit(buf, "none\n");
	mutex_unlock(&tier->lock);
	return ret;
}

/*
 * Attach (or with @format, format and attach) the block device whose path
 * is in @buf; for backing_dev, "none" detaches.
 */
static ssize_t kvtier_path_store(struct device *dev, const char *buf,
				 size_t len, bool format)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	char *path;
	int ret;

	path = kstrndup(buf, len, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	strim(path);

	mutex_lock(&tier->lock);
	if (!*path || (format && !strcmp(path, "none")))
		ret = -EINVAL;
	else if (format && READ_ONCE(tier->knobs.read_only))
		ret = -EROFS;
	else if (!strcmp(path, "none"))
		ret = kvtier_backing_detach(tier);
	else
		ret = kvtier_backing_attach(tier, path, format);
	mutex_unlock(&tier->lock);

	kfree(path);
	return ret ? ret : len;
}

static ssize_t backing_dev_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t len)
{
	return kvtier_path_store(dev, buf, len, false);
}
static DEVICE_ATTR_RW(backing_dev);

/* Write-only: format the device at this path (destroying it) and attach. */
static ssize_t format_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t len)
{
	return kvtier_path_store(dev, buf, len, true);
}
static DEVICE_ATTR_WO(format);

static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	bool attached;

	mutex_lock(&tier->lock);
	attached = kvtier_backing_attached(tier);
	mutex_unlock(&tier->lock);
	if (!attached)
		return sysfs_emit(buf, "detached\n");
	if (READ_ONCE(tier->first_error))
		return sysfs_emit(buf, "error\n");
	return sysfs_emit(buf, "%s\n", READ_ONCE(tier->store.bad_copy) >= 0 ||
			  kvtier_io_stalled(tier) ? "degraded" : "attached");
}
static DEVICE_ATTR_RO(state);

/* The first I/O error since attach (-errno), kept until detach; 0 if none. */
static ssize_t error_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(dev_to_tier(dev)->first_error));
}
static DEVICE_ATTR_RO(error);

/* The namespace's ownership lease record, read from the media (lease.c). */
static ssize_t lease_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	ssize_t ret;

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		ret = kvtier_lease_show(tier, buf);
	else
		ret = sysfs_emit(buf, "detached\n");
	mutex_unlock(&tier->lock);
	return ret;
}
static DEVICE_ATTR_RO(lease);

/*
 * Knobs: one table row each (unit in the name), validated against
 * [min, max] and a granularity. max == 0 means "total RAM in MiB". The
 * switches (discard, checksum) are 0 or 1.
 */
struct kvtier_knob {
	struct device_attribute attr;
	size_t offset;			/* in struct kvtier_knobs */
	unsigned int min, max, align;
};

static ssize_t knob_show(struct device *dev, struct device_attribute *attr,
			 char *buf);
static ssize_t knob_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t len);

#define KNOB_ATTR(name)	__ATTR(name, 0644, knob_show, knob_store)
#define KNOB_OFF(name)	offsetof(struct kvtier_knobs, name)

static struct kvtier_knob kvtier_knobs[] = {
	{ KNOB_ATTR(host_budget_mb), KNOB_OFF(host_budget_mb), 1, 0, 1 },
	{ KNOB_ATTR(watermark_high), KNOB_OFF(watermark_high), 1, 100, 1 },
	{ KNOB_ATTR(watermark_low), KNOB_OFF(watermark_low), 0, 99, 1 },
	{ KNOB_ATTR(readahead_kb), KNOB_OFF(readahead_kb), 0, 1024,
	  PAGE_SIZE >> 10 },
	{ KNOB_ATTR(writeback_batch_kb), KNOB_OFF(writeback_batch_kb),
	  PAGE_SIZE >> 10, 65536, PAGE_SIZE >> 10 },
	{ KNOB_ATTR(max_inflight_kb), KNOB_OFF(max_inflight_kb),
	  PAGE_SIZE >> 10, 1048576, PAGE_SIZE >> 10 },
	{ KNOB_ATTR(pin_budget_mb), KNOB_OFF(pin_budget_mb), 0, 0, 1 },
	{ KNOB_ATTR(user_pin_mb), KNOB_OFF(user_pin_mb), 0, 0, 1 },
	{ KNOB_ATTR(discard), KNOB_OFF(discard), 0, 1, 1 },
	{ KNOB_ATTR(checksum), KNOB_OFF(checksum), 0, 1, 1 },
	{ KNOB_ATTR(user_quota_mb), KNOB_OFF(user_quota_mb), 0, INT_MAX, 1 },
	{ KNOB_ATTR(max_regions), KNOB_OFF(max_regions), 0, INT_MAX, 1 },
	{ KNOB_ATTR(user_max_regions), KNOB_OFF(user_max_regions), 0, INT_MAX, 1 },
	{ KNOB_ATTR(read_only), KNOB_OFF(read_only), 0, 1, 1 },
	{ KNOB_ATTR(lease_interval_ms), KNOB_OFF(lease_interval_ms), 100, 60000, 1 },
};

static unsigned int *knob_ptr(struct kvtier_tier *tier,
			      const struct kvtier_knob *k)
{
	return (unsigned int *)((char *)&tier->knobs + k->offset);
}

static ssize_t knob_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct kvtier_knob *k = container_of(attr, struct kvtier_knob, attr);

	return sysfs_emit(buf, "%u\n", READ_ONCE(*knob_ptr(dev_to_tier(dev), k)));
}

static ssize_t knob_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t len)
{
	struct kvtier_knob *k = container_of(attr, struct kvtier_knob, attr);
	struct kvtier_tier *tier = dev_to_tier(dev);
	unsigned int v, max = k->max;
	unsigned long budget;
	int ret;

	ret = kstrtouint(buf, 0, &v);
	if (ret)
		return -EINVAL;
	if (!max)
		max = totalram_pages() >> (20 - PAGE_SHIFT);
	if (v < k->min || v > max || v % k->align)
		return -EINVAL;

	/* tier->lock orders the cross-checks of the two watermarks. */
	mutex_lock(&tier->lock);
	/* How the namespace is opened: fixed while one is attached. */
	if ((k->offset == offsetof(struct kvtier_knobs, read_only) ||
	     k->offset == offsetof(struct kvtier_knobs, lease_interval_ms)) &&
	    kvtier_backing_attached(tier)) {
		mutex_unlock(&tier->lock);
		return -EBUSY;
	}
	if ((k->offset == offsetof(struct kvtier_knobs, watermark_low) &&
	     v >= tier->knobs.watermark_high) ||
	    (k->offset == offsetof(struct kvtier_knobs, watermark_high) &&
	     v <= tier->knobs.watermark_low)) {
		mutex_unlock(&tier->lock);
		return -EINVAL;
	}
	/* Pinned pages may hold at most half the pool: they cannot be evicted. */
	if (k->offset == offsetof(struct kvtier_knobs, host_budget_mb) &&
	    ((unsigned long)v << (20 - PAGE_SHIFT)) / 2 <
	    atomic_long_read(&tier->nr_pinned)) {
		mutex_unlock(&tier->lock);
		return -EBUSY;
	}
	WRITE_ONCE(*knob_ptr(tier, k), v);
	mutex_unlock(&tier->lock);

	/* A lower budget takes effect now: evict down to it. */
	if (k->offset == offsetof(struct kvtier_knobs, host_budget_mb)) {
		budget = kvtier_budget_pages(tier);
		while (READ_ONCE(tier->pool.nr_pages) > budget) {
			if (kvtier_reclaim(tier, READ_ONCE(tier->pool.nr_pages) -
					   budget, true) <= 0)
				break;
		}
	}
	kvtier_pool_kick(tier);
	return len;
}

/* Bytes of the attached namespace (0 when detached). */
static ssize_t capacity_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	u64 bytes;

	mutex_lock(&tier->lock);
	bytes = (u64)tier->backing.nr_sectors << SECTOR_SHIFT;
	mutex_unlock(&tier->lock);
	return sysfs_emit(buf, "%llu\n", bytes);
}
static DEVICE_ATTR_RO(capacity);

/* Bytes of the namespace holding written-back pages. */
static ssize_t used_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);

	return sysfs_emit(buf, "%llu\n",
			  (u64)READ_ONCE(tier->slots.used) << PAGE_SHIFT);
}
static DEVICE_ATTR_RO(used);

/* Bytes of host memory charged to the budget (resident and being read). */
static ssize_t resident_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);

	return sysfs_emit(buf, "%llu\n",
			  (u64)READ_ONCE(tier->pool.nr_pages) << PAGE_SHIFT);
}
static DEVICE_ATTR_RO(resident);

/* Bytes pinned in host memory by KVTIER_IOC_PIN. */
static ssize_t pinned_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);

	return sysfs_emit(buf, "%llu\n",
			  (u64)atomic_long_read(&tier->nr_pinned) << PAGE_SHIFT);
}
static DEVICE_ATTR_RO(pinned);

static struct attribute *kvtier_tier_attrs[] = {
	&dev_attr_backing_dev.attr,
	&dev_attr_format.attr,
	&dev_attr_state.attr,
	&dev_attr_error.attr,
	&kvtier_knobs[0].attr.attr,
	&kvtier_knobs[1].attr.attr,
	&kvtier_knobs[2].attr.attr,
	&kvtier_knobs[3].attr.attr,
	&kvtier_knobs[4].attr.attr,
	&kvtier_knobs[5].attr.attr,
	&kvtier_knobs[6].attr.attr,
	&kvtier_knobs[7].attr.attr,
	&kvtier_knobs[8].attr.attr,
	&kvtier_knobs[9].attr.attr,
	&kvtier_knobs[10].attr.attr,
	&kvtier_knobs[11].attr.attr,
	&kvtier_knobs[12].attr.attr,
	&kvtier_knobs[13].attr.attr,
	&kvtier_knobs[14].attr.attr,
	&dev_attr_lease.attr,
	&dev_attr_capacity.attr,
	&dev_attr_used.attr,
	&dev_attr_resident.attr,
	&dev_attr_pinned.attr,
	NULL,
};

/* Every knob of the table is listed above, once. */
static_assert(ARRAY_SIZE(kvtier_tier_attrs) == ARRAY_SIZE(kvtier_knobs) + 10);

static const struct attribute_group kvtier_tier_group = {
	.attrs = kvtier_tier_attrs,
};

const struct attribute_group *kvtier_tier_groups[] = {
	&kvtier_tier_group,
	NULL,
};
