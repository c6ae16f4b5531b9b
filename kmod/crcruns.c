// SPDX-License-Identifier: GPL-2.0
/*
 * CRC runs: a persistent region's CRCs in data slots of its own (format
 * version 4), so that a checkpoint writes the CRCs of the regions that
 * changed since the last one, not of every region on the namespace.
 *
 * In version 3 every region's CRCs are in the CRC section of the
 * checkpoint area, and each checkpoint copies them all from the area the
 * newest superblock names into the other one: 4 bytes for every page the
 * namespace holds (8 GiB for 8 TiB), read and written. In version 4 a
 * region's CRC stream (its 4 bytes a page, in the order of its extents)
 * is written to runs of freshly allocated data slots when a checkpoint
 * records a change of its pages, and the region record names them (CRC
 * run records after its extent records). A checkpoint of a region that
 * did not change copies its records, runs included, and no CRC. Only the
 * part of a stream that found no free slot (a full namespace) goes to the
 * CRC section, after the runs' part, and is copied by each checkpoint
 * until one finds it slots. Writing them is store.c's (the checkpoint's
 * CRC sink), reading them pagemap.c's; this file keeps the runs.
 *
 * Runs are copy-on-write, like data slots: a checkpoint that rewrites a
 * region's CRCs puts them in new runs, and the old runs are deferred
 * (freed after the next commit) once its superblock is on the media,
 * never before: until then the newest superblock names them
 * (kvtier_crc_runs_retire(), kvtier_crc_runs_release()). The new runs of
 * a checkpoint that failed are deferred the same way, as its superblock
 * may be out (kvtier_crc_runs_abandon()). A region that goes defers its
 * runs with its data slots (kvtier_crc_runs_destroy()).
 *
 * Locking: a region's @map.runs and @map.next_runs are under store.lock,
 * like the rest of its map; a region being destroyed is on no list, and
 * nothing else holds it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>

#include "kvtier.h"

/* Bytes of a struct kvtier_crc_runs with room for @cap runs. */
static size_t kvtier_crc_runs_size(u32 cap)
{
	struct kvtier_crc_runs *runs;

	return struct_size(runs, run, cap);
}

/*
 * A copy of @old (NULL: no runs) with room for @cap runs (at least its
 * own), counted in @st's metadata memory; NULL without memory. A region
 * of many runs (a fragmented namespace) may need more than kmalloc gives.
 */
struct kvtier_crc_runs *kvtier_crc_runs_new(struct kvtier_store *st,
					    const struct kvtier_crc_runs *old,
					    u32 cap)
{
	u32 nr = old ? old->nr : 0;
	struct kvtier_crc_runs *runs;

	cap = max3(cap, nr, 1U);
	runs = kvmalloc(kvtier_crc_runs_size(cap), GFP_KERNEL | __GFP_NOWARN);
	if (!runs)
		return NULL;
	atomic_long_add(kvtier_crc_runs_size(cap), &st->crc_runs_bytes);
	INIT_LIST_HEAD(&runs->retired);
	runs->cap = cap;
	runs->keep = old ? old->keep : 0;
	runs->nr = nr;
	runs->blocks = old ? old->blocks : 0;
	if (nr)
		memcpy(runs->run, old->run, nr * sizeof(runs->run[0]));
	return runs;
}

/* Free @runs (NULL: nothing), made by kvtier_crc_runs_new() for @st. */
void kvtier_crc_runs_free(struct kvtier_store *st, struct kvtier_crc_runs *runs)
{
	if (!runs)
		return;
	atomic_long_sub(kvtier_crc_runs_size(runs->cap), &st->crc_runs_bytes);
	kvfree(runs);
}

/* Make room in *@runs for one more run, doubling it if full; -ENOMEM. */
int kvtier_crc_runs_room(struct kvtier_store *st, struct kvtier_crc_runs **runs)
{
	struct kvtier_crc_runs *grown;

	if ((*runs)->nr < (*runs)->cap)
		return 0;
	if ((*runs)->cap > U32_MAX / 2)
		return -ENOMEM;
	grown = kvtier_crc_runs_new(st, *runs, (*runs)->cap * 2);
	if (!grown)
		return -ENOMEM;
	kvtier_crc_runs_free(st, *runs);
	*runs = grown;
	return 0;
}

/*
 * Add @len blocks at data slot @slot to the end of @runs' stream, which
 * has room for one more run. With @join, blocks that follow the last run
 * on the namespace join it, unless it is one of the @keep runs taken over
 * from the map before (those stay as they were, to be told from the new
 * ones). Attach does not join: the runs in memory are the records on the
 * media, one for one (the map's record count has them).
 */
void kvtier_crc_runs_add(struct kvtier_crc_runs *runs, u64 slot, u32 len, bool join)
{
	struct kvtier_disk_extent *last = join && runs->nr > runs->keep ?
					  &runs->run[runs->nr - 1] : NULL;

	if (last && le64_to_cpu(last->slot) + le32_to_cpu(last->len) == slot &&
	    le32_to_cpu(last->len) <= U32_MAX - len) {
		le32_add_cpu(&last->len, len);
	} else {
		runs->run[runs->nr].slot = cpu_to_le64(slot);
		runs->run[runs->nr].index = cpu_to_le32(runs->blocks);
		runs->run[runs->nr].len = cpu_to_le32(len);
		runs->nr++;
	}
	runs->blocks += len;
}

/*
 * Give back the slots of @runs' runs from @from on: deferred to the next
 * commit when a superblock on the media may name them (@defer), else
 * freed now (the store is forgetting its regions: a detach, a replay).
 */
void kvtier_crc_runs_put_slots(struct kvtier_tier *tier,
			       const struct kvtier_crc_runs *runs, u32 from,
			       bool defer)
{
	u32 i;

	for (i = from; runs && i < runs->nr; i++) {
		u64 slot = le64_to_cpu(runs->run[i].slot);
		u32 len = le32_to_cpu(runs->run[i].len);

		if (defer)
			kvtier_slots_defer(&tier->slots, slot, len);
		else
			kvtier_slots_free(&tier->slots, slot, len);
	}
}

/*
 * The data slot that holds block @block of the CRC stream of @runs, and
 * in *@nr how many blocks of the stream follow it there (at least 1);
 * KVTIER_NO_SLOT past the runs. The runs are in stream order: a binary
 * search.
 */
unsigned long kvtier_crc_runs_slot(const struct kvtier_crc_runs *runs,
				   u64 block, u64 *nr)
{
	u32 lo = 0, hi = runs ? runs->nr : 0;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		u64 index = le32_to_cpu(runs->run[mid].index);
		u64 len = le32_to_cpu(runs->run[mid].len);

		if (block < index) {
			hi = mid;
		} else if (block >= index + len) {
			lo = mid + 1;
		} else {
			*nr = index + len - block;
			return le64_to_cpu(runs->run[mid].slot) + (block - index);
		}
	}
	return KVTIER_NO_SLOT;
}

/*
 * Checkpoint attempt of @m's region is on the media: take what it wrote
 * of the runs, and queue the replaced runs (those it did not keep) for
 * kvtier_crc_runs_release(). Under store.lock and regions_lock.
 */
void kvtier_crc_runs_retire(struct kvtier_store *st, struct kvtier_region_map *m)
{
	struct kvtier_crc_runs *old = m->runs;

	if (!m->next_runs)
		return;
	m->runs = m->next_runs;
	m->next_runs = NULL;
	if (!old)
		return;
	old->keep = m->runs->keep;
	list_add_tail(&old->retired, &st->retired_runs);
}

/*
 * Defer the slots of the runs that checkpoints on the media replaced:
 * the commit after frees them. Under store.lock, outside regions_lock
 * (slots.lock is a mutex).
 */
void kvtier_crc_runs_release(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	struct kvtier_crc_runs *runs, *tmp;

	lockdep_assert_held(&st->lock);
	list_for_each_entry_safe(runs, tmp, &st->retired_runs, retired) {
		list_del(&runs->retired);
		kvtier_crc_runs_put_slots(tier, runs, runs->keep, true);
		kvtier_crc_runs_free(st, runs);
	}
}

/*
 * The checkpoint attempt of @m's region failed: what it wrote of the runs
 * is not the map. The runs it added (from next_runs->keep on) are
 * deferred like replaced ones (kvtier_crc_runs_release()): its superblock
 * may have reached the media, and the next commit, a checkpoint
 * (store.need_full), names them no more. Under store.lock and
 * regions_lock.
 */
void kvtier_crc_runs_abandon(struct kvtier_store *st, struct kvtier_region_map *m)
{
	if (!m->next_runs)
		return;
	list_add_tail(&m->next_runs->retired, &st->retired_runs);
	m->next_runs = NULL;
}

/*
 * A region goes: give back its runs with its slots (deferred, as its
 * pages', unless the store is forgetting its regions). No lock: nothing
 * else holds the region.
 */
void kvtier_crc_runs_destroy(struct kvtier_region *r)
{
	struct kvtier_tier *tier = r->tier;
	bool defer = !READ_ONCE(tier->store.dropping);

	if (r->map.next_runs) {
		kvtier_crc_runs_put_slots(tier, r->map.next_runs,
					  r->map.next_runs->keep, defer);
		kvtier_crc_runs_free(&tier->store, r->map.next_runs);
		r->map.next_runs = NULL;
	}
	kvtier_crc_runs_put_slots(tier, r->map.runs, 0, defer);
	kvtier_crc_runs_free(&tier->store, r->map.runs);
	r->map.runs = NULL;
}
