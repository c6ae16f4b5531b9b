// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/kvtier/kvtierN/: inspection files, documented in
 * Documentation/admin-guide/kvtier.rst. debugfs failures are not errors:
 * the tier works without its inspection files.
 */
#include <linux/debugfs.h>

#include "kvtier.h"

static struct dentry *kvtier_debugfs_root;

void kvtier_debugfs_init(void)
{
	kvtier_debugfs_root = debugfs_create_dir(KVTIER_NAME, NULL);
}

void kvtier_debugfs_exit(void)
{
	debugfs_remove_recursive(kvtier_debugfs_root);
	kvtier_debugfs_root = NULL;
}

void kvtier_debugfs_tier_add(struct kvtier_tier *tier)
{
	tier->debugfs = debugfs_create_dir(dev_name(&tier->dev),
					   kvtier_debugfs_root);
}

void kvtier_debugfs_tier_remove(struct kvtier_tier *tier)
{
	debugfs_remove_recursive(tier->debugfs);
	tier->debugfs = NULL;
}
