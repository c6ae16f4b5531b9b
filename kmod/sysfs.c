// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/class/kvtier/kvtierN/ attributes. Every attribute is documented in
 * Documentation/ABI/testing/sysfs-class-kvtier with its unit and range.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

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

/* "none" detaches; anything else is the path of a block device to attach. */
static ssize_t backing_dev_store(struct device *dev,
				 struct device_attribute *attr,
				 const char *buf, size_t len)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	char *path;
	int ret;

	path = kstrndup(buf, len, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	strim(path);

	mutex_lock(&tier->lock);
	if (!*path)
		ret = -EINVAL;
	else if (!strcmp(path, "none"))
		ret = kvtier_backing_detach(tier);
	else
		ret = kvtier_backing_attach(tier, path);
	mutex_unlock(&tier->lock);

	kfree(path);
	return ret ? ret : len;
}
static DEVICE_ATTR_RW(backing_dev);

static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct kvtier_tier *tier = dev_to_tier(dev);
	bool attached;

	mutex_lock(&tier->lock);
	attached = kvtier_backing_attached(tier);
	mutex_unlock(&tier->lock);
	return sysfs_emit(buf, "%s\n", attached ? "attached" : "detached");
}
static DEVICE_ATTR_RO(state);

static struct attribute *kvtier_tier_attrs[] = {
	&dev_attr_backing_dev.attr,
	&dev_attr_state.attr,
	NULL,
};

static const struct attribute_group kvtier_tier_group = {
	.attrs = kvtier_tier_attrs,
};

const struct attribute_group *kvtier_tier_groups[] = {
	&kvtier_tier_group,
	NULL,
};
