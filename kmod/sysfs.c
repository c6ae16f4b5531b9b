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

/*
 * Read: the format version of the attached namespace ("none" detached).
 * Write a version: upgrade the attached namespace to it in place
 * (kvtier_store_upgrade()); a no-op if it has that version already.
 */
static ssize_t upgrade_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	ssize_t ret;

	mutex_lock(&tier->lock);
	if (kvtier_backing_attached(tier))
		ret = sysfs_emit(buf, "%u\n", READ_ONCE(tier->store.version));
	else
		ret = sysfs_emit(buf, "none\n");
	mutex_unlock(&tier->lock);
	return ret;
}

static ssize_t upgrade_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t len)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	unsigned int version;
	int ret;

	ret = kstrtouint(buf, 10, &version);
	if (ret)
		return ret;
	mutex_lock(&tier->lock);
	if (!kvtier_backing_attached(tier))
		ret = -ENODEV;
	else
		ret = kvtier_store_upgrade(tier, version);
	mutex_unlock(&tier->lock);
	return ret ? ret : len;
}
static DEVICE_ATTR_RW(upgrade);

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
 * The knobs: one row each, and nothing about a knob anywhere else but its
 * uses and its entry in Documentation/ABI/testing/sysfs-class-kvtier
 * (tests/knobs-check.sh holds the two to each other). A write is a decimal
 * (or 0x) unsigned integer in [min, max] and a multiple of align; max 0
 * means the total RAM in MiB. A knob marked detached changes only while no
 * namespace is attached (EBUSY). check() is asked under tier->lock, which
 * orders the cross-checks of knobs that bound each other; apply() runs
 * after the write, without it. Every write then kicks the pool's worker.
 */
struct kvtier_knob {
	struct device_attribute attr;
	size_t offset;			/* in struct kvtier_knobs */
	unsigned int def, min, max, align;
	const char *unit;		/* as the ABI file says it */
	bool detached;
	int (*check)(struct kvtier_tier *tier, unsigned int v);
	void (*apply)(struct kvtier_tier *tier);
};

static ssize_t knob_show(struct device *dev, struct device_attribute *attr,
			 char *buf);
static ssize_t knob_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t len);

/* The watermarks bound each other: low < high. Caller holds tier->lock. */
static int knob_check_wm_high(struct kvtier_tier *tier, unsigned int v)
{
	return v > tier->knobs.watermark_low ? 0 : -EINVAL;
}

static int knob_check_wm_low(struct kvtier_tier *tier, unsigned int v)
{
	return v < tier->knobs.watermark_high ? 0 : -EINVAL;
}

/* Pinned pages may hold at most half the pool: they cannot be evicted. */
static int knob_check_budget(struct kvtier_tier *tier, unsigned int v)
{
	return kvtier_mb_pages(v) / 2 < atomic_long_read(&tier->nr_pinned) ?
		-EBUSY : 0;
}

/*
 * A lower budget takes effect now: evict down to it, waiting for the store
 * to make room when only dirty pages are left and the namespace is full.
 */
static void knob_apply_budget(struct kvtier_tier *tier)
{
	unsigned long budget = kvtier_budget_pages(tier);
	unsigned int ticket;
	long freed;

	while (READ_ONCE(tier->pool.nr_pages) > budget) {
		ticket = kvtier_store_room_ticket(tier);
		freed = kvtier_reclaim(tier, READ_ONCE(tier->pool.nr_pages) -
				       budget, true);
		if (freed == -ENOSPC && !kvtier_store_wait_room(tier, ticket))
			continue;
		if (freed <= 0)
			break;
	}
}

#define KNOB_ATTR(name)	__ATTR(name, 0644, knob_show, knob_store)
#define KNOB_OFF(name)	offsetof(struct kvtier_knobs, name)
#define KB_ALIGN	(PAGE_SIZE >> 10)

static struct kvtier_knob kvtier_knobs[] = {
	{ KNOB_ATTR(host_budget_mb), KNOB_OFF(host_budget_mb),
	  .def = 256, .min = 1, .max = 0, .align = 1, .unit = "MiB",
	  .check = knob_check_budget, .apply = knob_apply_budget },
	{ KNOB_ATTR(watermark_high), KNOB_OFF(watermark_high),
	  .def = 90, .min = 1, .max = 100, .align = 1, .unit = "percent",
	  .check = knob_check_wm_high },
	{ KNOB_ATTR(watermark_low), KNOB_OFF(watermark_low),
	  .def = 75, .min = 0, .max = 99, .align = 1, .unit = "percent",
	  .check = knob_check_wm_low },
	{ KNOB_ATTR(dirty_background_pct), KNOB_OFF(dirty_background_pct),
	  .def = 50, .min = 0, .max = 99, .align = 1, .unit = "percent" },
	{ KNOB_ATTR(readahead_kb), KNOB_OFF(readahead_kb),
	  .def = 512, .min = 0, .max = 1024, .align = KB_ALIGN, .unit = "KiB" },
	{ KNOB_ATTR(writeback_batch_kb), KNOB_OFF(writeback_batch_kb),
	  .def = 1024, .min = KB_ALIGN, .max = 65536, .align = KB_ALIGN,
	  .unit = "KiB" },
	{ KNOB_ATTR(max_inflight_kb), KNOB_OFF(max_inflight_kb),
	  .def = 16384, .min = KB_ALIGN, .max = 1048576, .align = KB_ALIGN,
	  .unit = "KiB" },
	{ KNOB_ATTR(pin_budget_mb), KNOB_OFF(pin_budget_mb),
	  .def = 64, .min = 0, .max = 0, .align = 1, .unit = "MiB" },
	{ KNOB_ATTR(user_pin_mb), KNOB_OFF(user_pin_mb),
	  .def = 32, .min = 0, .max = 0, .align = 1, .unit = "MiB" },
	{ KNOB_ATTR(discard), KNOB_OFF(discard),
	  .def = 1, .min = 0, .max = 1, .align = 1, .unit = "boolean" },
	{ KNOB_ATTR(checksum), KNOB_OFF(checksum),
	  .def = 1, .min = 0, .max = 1, .align = 1, .unit = "boolean" },
	{ KNOB_ATTR(user_quota_mb), KNOB_OFF(user_quota_mb),
	  .def = 0, .min = 0, .max = INT_MAX, .align = 1, .unit = "MiB" },
	{ KNOB_ATTR(max_regions), KNOB_OFF(max_regions),
	  .def = 1048576, .min = 0, .max = INT_MAX, .align = 1,
	  .unit = "regions" },
	{ KNOB_ATTR(user_max_regions), KNOB_OFF(user_max_regions),
	  .def = 65536, .min = 0, .max = INT_MAX, .align = 1,
	  .unit = "regions" },
	{ KNOB_ATTR(read_only), KNOB_OFF(read_only),
	  .def = 0, .min = 0, .max = 1, .align = 1, .unit = "boolean",
	  .detached = true },
	{ KNOB_ATTR(lease_interval_ms), KNOB_OFF(lease_interval_ms),
	  .def = 1000, .min = 100, .max = 60000, .align = 1, .unit = "ms",
	  .detached = true },
	{ KNOB_ATTR(format_version), KNOB_OFF(format_version),
	  .def = 5, .min = 1, .max = 5, .align = 1, .unit = "version",
	  .detached = true },
};

static unsigned int *knob_ptr(struct kvtier_knobs *knobs,
			      const struct kvtier_knob *k)
{
	return (unsigned int *)((char *)knobs + k->offset);
}

/* A new tier's knobs: every row's default. */
void kvtier_knobs_init(struct kvtier_knobs *knobs)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kvtier_knobs); i++)
		*knob_ptr(knobs, &kvtier_knobs[i]) = kvtier_knobs[i].def;
}

static ssize_t knob_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct kvtier_knob *k = container_of(attr, struct kvtier_knob, attr);

	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(*knob_ptr(&dev_to_tier(dev)->knobs, k)));
}

static ssize_t knob_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t len)
{
	struct kvtier_knob *k = container_of(attr, struct kvtier_knob, attr);
	struct kvtier_tier *tier = dev_to_tier(dev);
	unsigned int v, max = k->max;
	int ret;

	ret = kstrtouint(buf, 0, &v);
	if (ret)
		return -EINVAL;
	if (!max)
		max = totalram_pages() >> (20 - PAGE_SHIFT);
	if (v < k->min || v > max || v % k->align)
		return -EINVAL;

	mutex_lock(&tier->lock);
	if (k->detached && kvtier_backing_attached(tier))
		ret = -EBUSY;
	else if (k->check)
		ret = k->check(tier, v);
	if (!ret)
		WRITE_ONCE(*knob_ptr(&tier->knobs, k), v);
	mutex_unlock(&tier->lock);
	if (ret)
		return ret;

	if (k->apply)
		k->apply(tier);
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

/*
 * metadata: the kernel memory of the tier's metadata, in bytes, as fixed
 * columns (total, then struct kvtier_meta_mem's fields in order); columns
 * are only ever appended (Documentation/ABI/testing/sysfs-class-kvtier).
 */
static ssize_t metadata_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct kvtier_meta_mem m;

	kvtier_meta_mem(dev_to_tier(dev), &m);
	return sysfs_emit(buf, "%llu %llu %llu %llu %llu %llu\n",
			  m.regions + m.page_maps + m.crcs + m.allocator + m.buffer,
			  m.regions, m.page_maps, m.crcs, m.allocator, m.buffer);
}
static DEVICE_ATTR_RO(metadata);

/*
 * stat: the tier's counters in fixed columns on one line, readable by
 * anyone, as /sys/block/<dev>/stat and zram's mm_stat are: totals since
 * the module was loaded, no region names or sizes. Columns are only ever
 * appended; Documentation/ABI/testing/sysfs-class-kvtier gives each one's
 * meaning and unit. The last column is a gauge (bytes in flight now).
 */
static const enum kvtier_stat kvtier_stat_columns[] = {
	KVT_STAT_FAULT_MINOR, KVT_STAT_FAULT_MAJOR, KVT_STAT_FAULT_ZERO,
	KVT_STAT_REFAULT, KVT_STAT_EVICT_CLEAN, KVT_STAT_EVICT_DIRTY,
	KVT_STAT_WB_PAGES, KVT_STAT_WB_BYTES, KVT_STAT_READ_PAGES,
	KVT_STAT_READ_BYTES, KVT_STAT_READAHEAD, KVT_STAT_PREFETCH,
	KVT_STAT_BUDGET_STALL, KVT_STAT_CSUM_ERROR, KVT_STAT_IO_ERROR,
};

/* Columns 17 on, appended after the gauge (column 16) in December 2026. */
static const enum kvtier_stat kvtier_stat_columns_more[] = {
	KVT_STAT_WB_BACKGROUND, KVT_STAT_WB_UNCHECKED, KVT_STAT_DIRECT_READ,
	KVT_STAT_PAGE_REUSED,
};

static ssize_t stat_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	unsigned int i;
	int n = 0;

	for (i = 0; i < ARRAY_SIZE(kvtier_stat_columns); i++)
		n += sysfs_emit_at(buf, n, "%lld ",
				   atomic64_read(&tier->stats[kvtier_stat_columns[i]]));
	n += sysfs_emit_at(buf, n, "%ld", atomic_long_read(&tier->inflight_bytes));
	for (i = 0; i < ARRAY_SIZE(kvtier_stat_columns_more); i++)
		n += sysfs_emit_at(buf, n, " %lld",
				   atomic64_read(&tier->stats[kvtier_stat_columns_more[i]]));
	n += sysfs_emit_at(buf, n, "\n");
	return n;
}
static DEVICE_ATTR_RO(stat);

static struct attribute *kvtier_tier_attrs[] = {
	&dev_attr_backing_dev.attr,
	&dev_attr_format.attr,
	&dev_attr_state.attr,
	&dev_attr_upgrade.attr,
	&dev_attr_error.attr,
	&dev_attr_lease.attr,
	&dev_attr_capacity.attr,
	&dev_attr_used.attr,
	&dev_attr_resident.attr,
	&dev_attr_pinned.attr,
	&dev_attr_stat.attr,
	&dev_attr_metadata.attr,
	NULL,
};

static const struct attribute_group kvtier_tier_group = {
	.attrs = kvtier_tier_attrs,
};

/* The knobs' attributes, from the table (kvtier_sysfs_init()). */
static struct attribute *kvtier_knob_attrs[ARRAY_SIZE(kvtier_knobs) + 1];

static const struct attribute_group kvtier_knob_group = {
	.attrs = kvtier_knob_attrs,
};

const struct attribute_group *kvtier_tier_groups[] = {
	&kvtier_tier_group,
	&kvtier_knob_group,
	NULL,
};

/* At module load, before any tier is made. */
void kvtier_sysfs_init(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kvtier_knobs); i++)
		kvtier_knob_attrs[i] = &kvtier_knobs[i].attr.attr;
}
