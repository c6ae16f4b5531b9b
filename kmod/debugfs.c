// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/kvtier/kvtierN/: inspection files, documented in
 * Documentation/admin-guide/kvtier.rst. debugfs failures are not errors:
 * the tier works without its inspection files.
 */
#include <linux/debugfs.h>
#include <linux/jiffies.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

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
	[KVT_STAT_REFAULT] = "refaults",
	[KVT_STAT_CSUM_ERROR] = "checksum_errors",
	[KVT_STAT_COMMIT] = "commits",
	[KVT_STAT_JOURNAL_COMMIT] = "journal_commits",
	[KVT_STAT_REGION_RECLAIM] = "regions_reclaimed",
	[KVT_STAT_MAP_LOAD] = "page_map_loads",
	[KVT_STAT_MAP_UNLOAD] = "page_map_unloads",
	[KVT_STAT_VERIFY_AHEAD] = "read_verified_ahead",
	[KVT_STAT_WB_CRC_HELPED] = "writeback_crc_helped",
	[KVT_STAT_PAGE_REUSED] = "pages_reused",
	[KVT_STAT_DIRECT_READ] = "direct_read_pages",
	[KVT_STAT_DIRECT_RETRY] = "direct_read_retries",
	[KVT_STAT_DIRECT_ASYNC] = "direct_read_async",
	[KVT_STAT_DIRECT_WRITE] = "direct_write_pages",
	[KVT_STAT_DIRECT_WRITE_RETRY] = "direct_write_retries",
	[KVT_STAT_DIRECT_WRITE_ASYNC] = "direct_write_async",
	[KVT_STAT_WB_UNCHECKED] = "writeback_unchecked",
	[KVT_STAT_WB_BACKGROUND] = "writeback_background",
	[KVT_STAT_WB_WAITS] = "writeback_waits",
	[KVT_STAT_RECLAIM_WB_SKIPS] = "reclaim_wb_skips",
	[KVT_STAT_CKPT_CRC_BYTES] = "checkpoint_crc_bytes",
};

static const char * const kvtier_hist_names[KVT_HIST_NR] = {
	[KVT_HIST_FAULT_MINOR] = "fault_minor",
	[KVT_HIST_FAULT_MAJOR] = "fault_major",
	[KVT_HIST_FAULT_ZERO] = "fault_zero",
	[KVT_HIST_READ] = "read",
	[KVT_HIST_WRITE] = "write",
	[KVT_HIST_COMMIT_JOURNAL] = "commit_journal",
	[KVT_HIST_COMMIT_CKPT] = "commit_checkpoint",
};

/* "name c0 .. c(n-1) sum": the counts, then the sum of what they count. */
static void kvtier_seq_buckets(struct seq_file *m, const char *name,
			       atomic64_t *b, unsigned int n, atomic64_t *sum)
{
	unsigned int i;

	seq_puts(m, name);
	for (i = 0; i < n; i++)
		seq_printf(m, " %lld", atomic64_read(&b[i]));
	seq_printf(m, " %lld\n", atomic64_read(sum));
}

/*
 * Fault service, namespace I/O completion and commit times, log2
 * microseconds, and their sums in nanoseconds (version 2: version 1 had
 * no sums; lines are only ever added).
 */
static int kvtier_latency_show(struct seq_file *m, void *v)
{
	struct kvtier_tier *tier = m->private;
	int i;

	seq_puts(m, "kvtier-latency 2\n");
	seq_printf(m, "buckets %d\n", KVT_HIST_BUCKETS);
	for (i = 0; i < KVT_HIST_NR; i++)
		kvtier_seq_buckets(m, kvtier_hist_names[i], tier->lat[i].b,
				   KVT_HIST_BUCKETS, &tier->lat[i].sum_ns);
	return 0;
}

void kvtier_latency_reset(struct kvtier_tier *tier)
{
	int i, j;

	for (i = 0; i < KVT_HIST_NR; i++) {
		for (j = 0; j < KVT_HIST_BUCKETS; j++)
			atomic64_set(&tier->lat[i].b[j], 0);
		atomic64_set(&tier->lat[i].sum_ns, 0);
	}
}

static int kvtier_latency_open(struct inode *inode, struct file *file)
{
	return single_open(file, kvtier_latency_show, inode->i_private);
}

/* Writing 0 clears the histograms; nothing else is accepted. */
static ssize_t kvtier_latency_write(struct file *file, const char __user *ubuf,
				    size_t len, loff_t *ppos)
{
	struct kvtier_tier *tier = file_inode(file)->i_private;
	unsigned int v;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 0, &v);
	if (ret)
		return ret;
	if (v)
		return -EINVAL;
	kvtier_latency_reset(tier);
	return len;
}

static const struct file_operations kvtier_latency_fops = {
	.owner = THIS_MODULE,
	.open = kvtier_latency_open,
	.read = seq_read,
	.write = kvtier_latency_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static const char * const kvtier_freeze_names[KVT_FREEZE_NR] = {
	[KVT_FREEZE_NONE] = "none",
	[KVT_FREEZE_CKPT_AREA] = "ckpt-area",
	[KVT_FREEZE_CKPT_SUPER] = "ckpt-super",
};

/*
 * Stop the commit that reached @p if it is the armed crash point, until
 * the point changes or the task is killed. Caller holds store.lock. Only
 * a test arms one: the tier makes no commit while a commit is stopped.
 */
void kvtier_freeze_point(struct kvtier_tier *tier, enum kvtier_freeze_point p)
{
	struct kvtier_store *st = &tier->store;

	lockdep_assert_held(&st->lock);
	if (READ_ONCE(st->freeze_at) != p)
		return;
	dev_err(&tier->dev, "commit of generation %llu stopped at crash point %s (debugfs freeze_at)\n",
		st->generation + 1, kvtier_freeze_names[p]);
	WRITE_ONCE(st->frozen, true);
	wait_event_killable(st->freeze_wait, READ_ONCE(st->freeze_at) != p);
	WRITE_ONCE(st->frozen, false);
	dev_info(&tier->dev, "commit resumed after crash point %s\n",
		 kvtier_freeze_names[p]);
}

/* "armed POINT", "frozen POINT" (a commit is stopped there) or "none". */
static int kvtier_freeze_show(struct seq_file *m, void *v)
{
	struct kvtier_store *st = &((struct kvtier_tier *)m->private)->store;
	int p = READ_ONCE(st->freeze_at);

	if (p == KVT_FREEZE_NONE)
		seq_puts(m, "none\n");
	else
		seq_printf(m, "%s %s\n", READ_ONCE(st->frozen) ? "frozen" : "armed",
			   kvtier_freeze_names[p]);
	return 0;
}

static int kvtier_freeze_open(struct inode *inode, struct file *file)
{
	return single_open(file, kvtier_freeze_show, inode->i_private);
}

/* A point's name arms it (and releases a commit stopped at another). */
static ssize_t kvtier_freeze_write(struct file *file, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	struct kvtier_store *st = &((struct kvtier_tier *)file_inode(file)->i_private)->store;
	char buf[16];
	int p;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	p = sysfs_match_string(kvtier_freeze_names, buf);
	if (p < 0)
		return p;
	WRITE_ONCE(st->freeze_at, p);
	wake_up_all(&st->freeze_wait);
	return len;
}

static const struct file_operations kvtier_freeze_fops = {
	.owner = THIS_MODULE,
	.open = kvtier_freeze_open,
	.read = seq_read,
	.write = kvtier_freeze_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/* Sizes of the bios the tier issued, log2 pages, and their sums in pages. */
static int kvtier_io_show(struct seq_file *m, void *v)
{
	struct kvtier_tier *tier = m->private;

	seq_puts(m, "kvtier-io 2\n");
	seq_printf(m, "buckets %d\n", KVT_IO_BUCKETS);
	kvtier_seq_buckets(m, "read", tier->io_sizes[0], KVT_IO_BUCKETS,
			   &tier->io_pages[0]);
	kvtier_seq_buckets(m, "write", tier->io_sizes[1], KVT_IO_BUCKETS,
			   &tier->io_pages[1]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvtier_io);

/* One line per region. No data bytes: sizes and counters only. */
static int kvtier_regions_show(struct seq_file *m, void *v)
{
	struct kvtier_tier *tier = m->private;
	struct kvtier_region *r;

	seq_puts(m, "kvtier-regions 1\n");
	seq_puts(m, "id name owner size resident dirty namespace pinned faults refaults idle_ms gpu_bytes crc_bytes\n");
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node) {
		seq_printf(m, "%llu %s %u %llu %llu %llu %llu %llu %ld %ld %u %ld %lu\n",
			   r->id, r->name[0] ? r->name : "-",
			   from_kuid_munged(&init_user_ns, r->owner),
			   (u64)kvtier_region_size(r),
			   (u64)atomic_long_read(&r->nr_resident) << PAGE_SHIFT,
			   (u64)atomic_long_read(&r->nr_dirty) << PAGE_SHIFT,
			   (u64)atomic_long_read(&r->nr_slots) << PAGE_SHIFT,
			   (u64)atomic_long_read(&r->nr_pinned) << PAGE_SHIFT,
			   atomic_long_read(&r->nr_faults),
			   atomic_long_read(&r->nr_refaults),
			   jiffies_to_msecs(jiffies - READ_ONCE(r->last_use)),
			   atomic_long_read(&r->gpu_bytes),
			   kvtier_crcs_bytes(r));
	}
	spin_unlock(&tier->regions_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvtier_regions);

static int kvtier_gpu_ranges_show(struct seq_file *m, void *v)
{
	kvtier_gpu_show(m, m->private);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvtier_gpu_ranges);

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
	seq_printf(m, "spare_pages %lu\n", READ_ONCE(tier->pool.nr_spare));
	seq_printf(m, "budget_pages %lu\n", kvtier_budget_pages(tier));
	seq_printf(m, "pinned_pages %ld\n", atomic_long_read(&tier->nr_pinned));
	seq_printf(m, "slots_used %lu\n", READ_ONCE(tier->slots.used));
	seq_printf(m, "slots_total %lu\n", READ_ONCE(tier->slots.nr));
	seq_printf(m, "slots_deferred %lu\n", READ_ONCE(tier->slots.deferred.units));
	seq_printf(m, "generation %llu\n", READ_ONCE(tier->store.generation));
	seq_printf(m, "inflight_bytes %ld\n",
		   atomic_long_read(&tier->inflight_bytes));
	seq_printf(m, "slot_extents %lu\n", kvtier_slots_extents(&tier->slots));
	seq_printf(m, "largest_free_slots %lu\n", READ_ONCE(tier->slots.largest));
	seq_printf(m, "journal_blocks %llu\n", READ_ONCE(tier->store.journal_blocks));
	seq_printf(m, "journal_head %llu\n", READ_ONCE(tier->store.journal_head));
	seq_printf(m, "journal_pos %llu\n", READ_ONCE(tier->store.journal_pos));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvtier_stats);

void kvtier_debugfs_init(void)
{
	kvtier_debugfs_root = debugfs_create_dir(KVTIER_NAME, NULL);
	kvtier_fail_inject_init(kvtier_debugfs_root);
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
	debugfs_create_file("latency", 0600, tier->debugfs, tier,
			    &kvtier_latency_fops);
	debugfs_create_file("io", 0400, tier->debugfs, tier, &kvtier_io_fops);
	debugfs_create_file("regions", 0400, tier->debugfs, tier,
			    &kvtier_regions_fops);
	debugfs_create_file("gpu_ranges", 0400, tier->debugfs, tier,
			    &kvtier_gpu_ranges_fops);
	debugfs_create_file("freeze_at", 0600, tier->debugfs, tier,
			    &kvtier_freeze_fops);
}

void kvtier_debugfs_tier_remove(struct kvtier_tier *tier)
{
	debugfs_remove_recursive(tier->debugfs);
	tier->debugfs = NULL;
}
