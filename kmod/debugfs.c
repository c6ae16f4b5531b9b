// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/kvtier/kvtierN/: inspection files, documented in
 * Documentation/admin-guide/kvtier.rst. debugfs failures are not errors:
 * the tier works without its inspection files.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "kvtier.h"

static struct dentry *kvtier_debugfs_root;

/* Bump when a line changes meaning; adding lines keeps the version. */
#define KVTIER_STATS_VERSION	1

const char * const kvtier_stat_names[KVT_STAT_NR] = {
	[KVT_STAT_FAULT_MINOR] = "faults_minor",
	[KVT_STAT_FAULT_MAJOR] = "faults_major",
	[KVT_STAT_FAULT_ZERO] = "faults_zero_fill",
	[KVT_STAT_FAULT_AROUND] = "fault_around_pages",
	[KVT_STAT_READAHEAD] = "readahead_pages",
	[KVT_STAT_EVICT_CLEAN] = "evictions_clean",
	[KVT_STAT_EVICT_DIRTY] = "evictions_dirty",
	[KVT_STAT_WB_PAGES] = "writeback_pages",
	[KVT_STAT_WB_BYTES] = "writeback_bytes",
	[KVT_STAT_WB_BIOS] = "writeback_bios",
	[KVT_STAT_READ_PAGES] = "read_pages",
	[KVT_STAT_READ_BYTES] = "read_bytes",
	[KVT_STAT_READ_BIOS] = "read_bios",
	[KVT_STAT_BUDGET_STALL] = "budget_stalls",
	[KVT_STAT_PREFETCH] = "prefetch_pages",
	[KVT_STAT_IO_ERROR] = "io_errors",
	[KVT_STAT_NOSPACE] = "nospace_errors",
	[KVT_STAT_DISCARD] = "discard_pages",
	[KVT_STAT_SHRINK_SCAN] = "shrinker_scans",
	[KVT_STAT_SHRINK_FREE] = "shrinker_frees",
	[KVT_STAT_FLUSH] = "flushes",
};

static int kvtier_stats_show(struct seq_file *m, void *v)
{
	struct kvtier_tier *tier = m->private;
	int i;

	seq_printf(m, "kvtier-stats %d\n", KVTIER_STATS_VERSION);
	for (i = 0; i < KVT_STAT_NR; i++)
		seq_printf(m, "%s %lld\n", kvtier_stat_names[i],
			   atomic64_read(&tier->stats[i]));
	/* Gauges: current values, not counts. */
	seq_printf(m, "resident_pages %lu\n", READ_ONCE(tier->pool.nr_pages));
	seq_printf(m, "dirty_pages %ld\n", atomic_long_read(&tier->pool.nr_dirty));
	seq_printf(m, "budget_pages %lu\n", kvtier_budget_pages(tier));
	seq_printf(m, "slots_used %lu\n", READ_ONCE(tier->slots.used));
	seq_printf(m, "slots_total %lu\n", READ_ONCE(tier->slots.nr));
	seq_printf(m, "inflight_bytes %ld\n",
		   atomic_long_read(&tier->inflight_bytes));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvtier_stats);

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
	debugfs_create_file("stats", 0400, tier->debugfs, tier,
			    &kvtier_stats_fops);
}

void kvtier_debugfs_tier_remove(struct kvtier_tier *tier)
{
	debugfs_remove_recursive(tier->debugfs);
	tier->debugfs = NULL;
}
