// SPDX-License-Identifier: GPL-2.0
/*
 * A region's page CRCs, stored sparsely: chunks of KVT_CRCS_PER_CHUNK
 * CRC32C values (one per page, by index) in an xarray, a chunk allocated
 * when the first page it covers is written back or loaded. So the kernel
 * memory of a region's CRCs follows what it holds, not its size: a 4 TiB
 * region with 1 GiB written costs 1 MiB of CRCs if the gigabyte is dense,
 * and at most 256 bytes per written page if it is scattered, instead of
 * 4 GiB at creation. Chunks are charged to the memory cgroup of the task
 * that writes (__GFP_ACCOUNT).
 *
 * Chunks are only added while the region lives and freed when it is
 * destroyed, so a chunk found by xa_load() stays valid: readers and
 * writers of a value need no lock of their own. The value of a page is
 * set when its write-back completes and read at a commit's snapshot, both
 * under the region's xa_lock (the pair slot + CRC changes together), and
 * checked by the first user of a page read back (io.c).
 */
#include <linux/slab.h>
#include <linux/xarray.h>

#include "kvtier.h"

#define KVT_CRCS_PER_CHUNK	62

/*
 * 256 bytes: the CRCs, and which pages were written back with the checksum
 * knob off (a non-persistent region's pages only: writeback.c). Such a page has
 * no CRC to check; its bit is cleared when a later write-back records one.
 */
struct kvtier_crc_chunk {
	DECLARE_BITMAP(unchecked, KVT_CRCS_PER_CHUNK);
	u32 crc[KVT_CRCS_PER_CHUNK];
};

static struct kvtier_crc_chunk *kvtier_crcs_chunk(struct kvtier_region *region,
						  pgoff_t index)
{
	return xa_load(&region->crcs, index / KVT_CRCS_PER_CHUNK);
}

/*
 * Make room for the CRC of the page at @index, before its write-back is
 * submitted or its record is loaded (the completion cannot allocate).
 * Errors: -ENOMEM.
 */
int kvtier_crcs_reserve(struct kvtier_region *region, pgoff_t index, gfp_t gfp)
{
	struct kvtier_crc_chunk *chunk, *old;

	BUILD_BUG_ON(sizeof(*chunk) > 256);
	if (kvtier_crcs_chunk(region, index))
		return 0;
	chunk = kzalloc(sizeof(*chunk), gfp | __GFP_ACCOUNT | __GFP_NOWARN);
	if (!chunk)
		return -ENOMEM;
	old = xa_cmpxchg(&region->crcs, index / KVT_CRCS_PER_CHUNK, NULL, chunk,
			 gfp | __GFP_ACCOUNT | __GFP_NOWARN);
	if (old) {
		/* Another task's chunk won the race, or no memory. */
		kfree(chunk);
		return xa_is_err(old) ? xa_err(old) : 0;
	}
	atomic_long_inc(&region->nr_crc_chunks);
	atomic_long_inc(&region->tier->crc_chunks);
	return 0;
}

/* kvtier_crcs_reserve() for the @nr pages from @index. */
int kvtier_crcs_reserve_range(struct kvtier_region *region, pgoff_t index,
			      pgoff_t nr, gfp_t gfp)
{
	pgoff_t end = index + nr;
	int ret = 0;

	while (index < end && !ret) {
		ret = kvtier_crcs_reserve(region, index, gfp);
		index = (index / KVT_CRCS_PER_CHUNK + 1) * KVT_CRCS_PER_CHUNK;
	}
	return ret;
}

/*
 * Record the CRC of the page at @index, or with @unchecked that its copy
 * has none (written with the checksum knob off); its room was reserved.
 */
void kvtier_crcs_set(struct kvtier_region *region, pgoff_t index, u32 crc,
		     bool unchecked)
{
	struct kvtier_crc_chunk *chunk = kvtier_crcs_chunk(region, index);
	unsigned int i = index % KVT_CRCS_PER_CHUNK;

	/* A persistent region's records carry every CRC (writeback.c). */
	if (WARN_ON_ONCE(!chunk || (unchecked && region->persistent)))
		return;
	chunk->crc[i] = crc;
	/* Atomic: a word shared with neighbours, whatever lock the caller holds. */
	if (unchecked)
		set_bit(i, chunk->unchecked);
	else
		clear_bit(i, chunk->unchecked);
}

/*
 * The CRC recorded for the page at @index. False if there is none to check
 * against: none was ever recorded (only a page that was written back has
 * one, so the caller, which holds such a page, treats that as a mismatch),
 * or its copy was written without one (kvtier_crcs_unchecked(), which
 * tells the two apart).
 */
bool kvtier_crcs_get(struct kvtier_region *region, pgoff_t index, u32 *crc)
{
	struct kvtier_crc_chunk *chunk = kvtier_crcs_chunk(region, index);
	unsigned int i = index % KVT_CRCS_PER_CHUNK;

	if (WARN_ON_ONCE(!chunk))
		return false;
	*crc = chunk->crc[i];
	return !test_bit(i, chunk->unchecked);
}

/*
 * Was the copy of the page at @index written back with the checksum knob
 * off? Then there is no CRC to check it against, whatever the knob says
 * now. The caller holds the page (resident or as a shadow entry).
 */
bool kvtier_crcs_unchecked(struct kvtier_region *region, pgoff_t index)
{
	struct kvtier_crc_chunk *chunk = kvtier_crcs_chunk(region, index);

	return chunk && test_bit(index % KVT_CRCS_PER_CHUNK, chunk->unchecked);
}

/* Bytes of CRC storage the region holds (debugfs "regions"). */
unsigned long kvtier_crcs_bytes(struct kvtier_region *region)
{
	return atomic_long_read(&region->nr_crc_chunks) *
		sizeof(struct kvtier_crc_chunk);
}

/* The region is being destroyed, or its map unloaded: free every chunk. */
void kvtier_crcs_destroy(struct kvtier_region *region)
{
	unsigned long index;
	void *chunk;

	xa_for_each(&region->crcs, index, chunk) {
		kfree(chunk);
		cond_resched();
	}
	xa_destroy(&region->crcs);
	atomic_long_sub(atomic_long_xchg(&region->nr_crc_chunks, 0),
			&region->tier->crc_chunks);
}

/* The chunks' payload, for kvtier_meta_mem(). */
u64 kvtier_crcs_chunk_bytes(void)
{
	return sizeof(struct kvtier_crc_chunk);
}
