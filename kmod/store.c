// SPDX-License-Identifier: GPL-2.0
/*
 * The on-namespace store: the superblock, the checkpoint of persistent
 * regions, and the commit that makes them durable. The format is specified
 * in include/uapi/linux/kvtier_format.h and Documentation/kvtier-format.rst.
 *
 * A commit (kvtier_store_commit) is dm-writecache's order: the data it
 * names is already written (write-back waits for its bios), the checkpoint
 * is written to the area the newest superblock does not name, then the
 * superblock copy of the new generation with a cache flush before it and
 * FUA. Slots the previous checkpoint named and the new one does not are
 * freed only after that (slots.c: deferred slots). On a version-2 store
 * most commits are instead one journal transaction of what changed
 * (journal.c), with the same order and the same deferred slots; a
 * checkpoint is written when the journal is full, after a failed
 * transaction, and at detach.
 *
 * A snapshot takes each persistent region's (slot, crc) pairs under the
 * region's xa_lock, which is where write-back completion changes them, so a
 * page's pair is always one whose write completed.
 *
 * Locking: kvtier_store.lock serialises commits. It is never taken under
 * a page lock (a write-back that runs out of space queues the room work,
 * which commits and reclaims on kvtier_wq), and nothing under it takes a
 * page lock or waits for a region's references. Order (kvtier.h):
 * tier.lock -> store.lock -> slots.lock (a mutex, taken under neither
 * spinlock), and store.lock -> regions_lock -> a region's xa_lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <linux/kvtier_format.h>

#include "kvtier.h"

/* The smallest namespace worth formatting: 1 MiB of data slots. */
#define KVTIER_MIN_SLOTS	256

static u32 kvtier_sb_crc(const struct kvtier_disk_super *sb)
{
	struct kvtier_disk_super tmp = *sb;

	tmp.crc = 0;
	return kvtier_crc32c(&tmp, sizeof(tmp));
}

/* What a superblock copy turned out to be. */
enum kvtier_sb_state {
	KVT_SB_NONE,		/* no kvtier magic */
	KVT_SB_DAMAGED,		/* magic, but checksum or fields wrong */
	KVT_SB_NEWER,		/* a format this module does not know */
	KVT_SB_READ_ONLY,	/* valid, with features it can only read */
	KVT_SB_VALID,
};

static enum kvtier_sb_state kvtier_sb_check(const struct kvtier_disk_super *sb)
{
	u32 version = le32_to_cpu(sb->version);
	u64 incompat = le64_to_cpu(sb->feature_incompat);
	bool extents, v3, v4, v5, runs, sizes;

	if (le64_to_cpu(sb->magic) != KVTIER_SB_MAGIC)
		return KVT_SB_NONE;
	/* A newer layout cannot be checksummed by this one: trust the version. */
	if (version > KVTIER_FORMAT_VERSION)
		return KVT_SB_NEWER;
	/* Feature bits only once the copy is known intact: a flip is damage. */
	if (!version || le32_to_cpu(sb->header_size) != sizeof(*sb) ||
	    le32_to_cpu(sb->crc) != kvtier_sb_crc(sb))
		return KVT_SB_DAMAGED;
	if (incompat & ~KVTIER_FEATURE_INCOMPAT_SUPP)
		return KVT_SB_NEWER;
	/*
	 * Version 2 is the journal, 3 the journal and extents, 4 those and
	 * CRC runs, 5 those and file sizes; 1 has none.
	 */
	extents = incompat & KVTIER_FEATURE_INCOMPAT_EXTENTS;
	runs = incompat & KVTIER_FEATURE_INCOMPAT_CRC_RUNS;
	sizes = incompat & KVTIER_FEATURE_INCOMPAT_FILE_SIZES;
	v3 = version >= 3;
	v4 = version >= 4;
	v5 = version >= 5;
	if (version == 1 ? incompat & KVTIER_FEATURE_INCOMPAT_SUPP :
	    !(incompat & KVTIER_FEATURE_INCOMPAT_JOURNAL) || extents != v3 ||
	    runs != v4 || sizes != v5 ||
	    (!extents && incompat & KVTIER_FEATURE_INCOMPAT_CRCS_RUN))
		return KVT_SB_DAMAGED;
	if (le64_to_cpu(sb->feature_ro_compat) & ~KVTIER_FEATURE_RO_COMPAT_SUPP)
		return KVT_SB_READ_ONLY;
	return KVT_SB_VALID;
}

/* A name for what block 0 (or block 16) of a foreign namespace holds. */
static const char *kvtier_foreign_signature(const u8 *b0, const u8 *b16)
{
	if (!memcmp(b0, "XFSB", 4))
		return "xfs";
	if (!memcmp(b0, "LUKS\xba\xbe", 6))
		return "LUKS";
	if (b0[1080] == 0x53 && b0[1081] == 0xef)
		return "ext2/3/4";
	if (!memcmp(b0 + 4086, "SWAPSPACE2", 10) ||
	    !memcmp(b0 + 4086, "SWAP-SPACE", 10))
		return "swap";
	if (!memcmp(b0 + 512, "EFI PART", 8))
		return "GPT partition table";
	if (!memcmp(b0 + 512, "LABELONE", 8))
		return "LVM2";
	if (!memcmp(b16 + 64, "_BHRfS_M", 8))
		return "btrfs";
	if (b0[510] == 0x55 && b0[511] == 0xaa)
		return "DOS partition table";
	return NULL;
}

/* Caller holds store.lock (or the store is not yet visible). */
static void kvtier_sb_fill(struct kvtier_store *st, struct kvtier_disk_super *sb,
			   u64 generation, u64 ckpt_bytes, u32 ckpt_crc)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = cpu_to_le64(KVTIER_SB_MAGIC);
	sb->version = cpu_to_le32(st->version);
	sb->header_size = cpu_to_le32(sizeof(*sb));
	memcpy(sb->uuid, st->uuid, sizeof(sb->uuid));
	sb->format_time = cpu_to_le64(st->format_time);
	sb->nr_blocks = cpu_to_le64(st->nr_blocks);
	sb->meta_start = cpu_to_le64(st->meta_start);
	sb->meta_blocks = cpu_to_le64(st->meta_blocks);
	sb->data_start = cpu_to_le64(st->data_start);
	sb->nr_slots = cpu_to_le64(st->nr_slots);
	sb->max_regions = cpu_to_le64(st->max_regions);
	sb->generation = cpu_to_le64(generation);
	sb->commit_time = cpu_to_le64(ktime_get_real_seconds());
	sb->ckpt_bytes = cpu_to_le64(ckpt_bytes);
	sb->ckpt_crc = cpu_to_le32(ckpt_crc);
	if (st->has_sealed)
		sb->feature_ro_compat |= cpu_to_le64(KVTIER_FEATURE_RO_COMPAT_SEALED);
	if (st->lease_block) {
		sb->feature_ro_compat |= cpu_to_le64(KVTIER_FEATURE_RO_COMPAT_LEASE);
		sb->lease_block = cpu_to_le64(st->lease_block);
	}
	if (st->journal_blocks) {
		sb->feature_incompat |= cpu_to_le64(KVTIER_FEATURE_INCOMPAT_JOURNAL);
		sb->journal_start = cpu_to_le64(st->journal_start);
		sb->journal_blocks = cpu_to_le64(st->journal_blocks);
		if (st->journal_start + st->journal_blocks != st->nr_slots)
			sb->feature_incompat |=
				cpu_to_le64(KVTIER_FEATURE_INCOMPAT_JOURNAL_RUN);
		/* The checkpoint holds everything the journal did. */
		sb->journal_head = cpu_to_le64(st->journal_pos);
	}
	if (kvtier_store_extents(st)) {
		sb->feature_incompat |= cpu_to_le64(KVTIER_FEATURE_INCOMPAT_EXTENTS);
		if (st->crcs_run)
			sb->feature_incompat |=
				cpu_to_le64(KVTIER_FEATURE_INCOMPAT_CRCS_RUN);
		if (kvtier_store_crc_runs(st))
			sb->feature_incompat |=
				cpu_to_le64(KVTIER_FEATURE_INCOMPAT_CRC_RUNS);
		if (kvtier_store_file_sizes(st))
			sb->feature_incompat |=
				cpu_to_le64(KVTIER_FEATURE_INCOMPAT_FILE_SIZES);
		sb->crcs_block[0] = cpu_to_le64(st->crcs_block[0]);
		sb->crcs_block[1] = cpu_to_le64(st->crcs_block[1]);
	}
	sb->crc = cpu_to_le32(kvtier_sb_crc(sb));
}

/*
 * The largest checkpoint (version 3: its index) of @max_regions regions
 * and @nr_slots pages, each its own extent in version 3.
 */
static u64 kvtier_ckpt_max_bytes(u64 max_regions, u64 nr_slots)
{
	return sizeof(struct kvtier_disk_ckpt) +
		max_regions * sizeof(struct kvtier_disk_region) +
		nr_slots * sizeof(struct kvtier_disk_page);
}

/* Blocks of a version-3 CRC section: a CRC32C for each of @nr_slots. */
static u64 kvtier_crcs_blocks(u64 nr_slots)
{
	return DIV_ROUND_UP(nr_slots * sizeof(__le32), KVTIER_BLOCK_SIZE);
}

/* Blocks of a checkpoint area of @version (its CRC section included). */
static u64 kvtier_area_blocks(u32 version, u64 max_regions, u64 nr_slots)
{
	u64 index = DIV_ROUND_UP(kvtier_ckpt_max_bytes(max_regions, nr_slots),
				 KVTIER_BLOCK_SIZE);

	return index + (version >= 3 ? kvtier_crcs_blocks(nr_slots) : 0);
}

/*
 * Lay out a namespace of @nr_blocks: as many data slots as fit beside two
 * checkpoint areas that can name every one of them.
 */
static int kvtier_store_geometry(struct kvtier_store *st, u64 nr_blocks)
{
	u64 regions = clamp_t(u64, nr_blocks / 64, 64, 1 << 20);
	u64 fixed = kvtier_area_blocks(st->version, regions, 0);
	u64 slots, mb, d;

	if (nr_blocks < 2 + 2 * fixed + KVTIER_MIN_SLOTS)
		return -ENOSPC;
	/*
	 * Each slot costs its block and 2 x 16 bytes of checkpoint (2 x 20
	 * in version 3, with its CRC): start just above the answer.
	 */
	slots = (nr_blocks - 2 - 2 * fixed) * 128 / 129;
	slots = min_t(u64, slots, KVT_SLOT_MASK);
	for (;;) {
		mb = kvtier_area_blocks(st->version, regions, slots);
		if (2 + 2 * mb + slots <= nr_blocks)
			break;
		/* Version 3 starts up to 0.2 % too high: close in faster. */
		d = max_t(u64, 1, (2 + 2 * mb + slots - nr_blocks) / 2);
		if (d >= slots)
			return -ENOSPC;
		slots -= d;
	}
	if (slots < KVTIER_MIN_SLOTS)
		return -ENOSPC;
	st->nr_blocks = nr_blocks;
	st->meta_start = 2;
	st->meta_blocks = mb;
	st->data_start = 2 + 2 * mb;
	st->nr_slots = slots;
	st->max_regions = regions;
	st->crcs_block[0] = 0;
	st->crcs_block[1] = 0;
	st->crcs_run = false;
	st->ckpt_extents = kvtier_store_extents(st);
	if (kvtier_store_extents(st)) {
		u64 index = mb - kvtier_crcs_blocks(slots);

		st->crcs_block[0] = st->meta_start + index;
		st->crcs_block[1] = st->meta_start + mb + index;
	}
	st->journal_start = 0;
	st->journal_blocks = 0;
	if (st->version >= 2) {
		st->journal_blocks = kvtier_journal_blocks(slots);
		if (slots - st->journal_blocks < KVTIER_MIN_SLOTS)
			return -ENOSPC;
		st->journal_start = slots - st->journal_blocks;
	}
	return 0;
}

/*
 * The in-memory side of an attached store: the slot allocator and the
 * checkpoint buffer. Nothing here grows with the namespace: a blank
 * namespace of any size is one free extent, and the buffer is 1 MiB and
 * the region records once a checkpoint went through it (more if a journal
 * transaction needed it), kept, so the commit that makes room on a full
 * namespace under memory pressure usually allocates nothing.
 */
static int kvtier_store_alloc(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	u64 end = st->journal_start + st->journal_blocks;
	unsigned long run[3][2];	/* slot, count */
	int i, n = 0, ret;

	st->ckpt = NULL;
	st->ckpt_size = 0;
	kvtier_extents_init(&st->releasing);
	/*
	 * The journal's slots are never handed out: at format it is the
	 * last slots, outside the allocator; an upgrade from version 1 put
	 * it where it found room, and it stays allocated. So do the CRC
	 * sections an upgrade from version 2 put in runs of data slots (the
	 * geometry check keeps the runs apart and inside the allocator).
	 */
	if (st->journal_blocks && end != st->nr_slots) {
		run[n][0] = st->journal_start;
		run[n++][1] = st->journal_blocks;
	}
	for (i = 0; st->crcs_run && i < 2; i++) {
		run[n][0] = st->crcs_block[i] - st->data_start;
		run[n++][1] = kvtier_crcs_blocks(st->nr_slots);
	}
	ret = kvtier_slots_init(&tier->slots, st->journal_blocks && end == st->nr_slots ?
				st->journal_start : st->nr_slots);
	for (i = 0; !ret && i < n; i++) {
		ret = kvtier_slots_claim(&tier->slots, run[i][0], run[i][1]);
		while (ret && i--)
			kvtier_slots_free(&tier->slots, run[i][0], run[i][1]);
	}
	if (ret)
		kvtier_slots_exit(&tier->slots);
	return ret;
}

/*
 * The checkpoint buffer, at least @size bytes (a multiple of the block
 * size); NULL, with the old buffer kept, when it cannot grow.
 */
void *kvtier_ckpt_buf(struct kvtier_store *st, size_t size)
{
	void *buf;

	if (st->ckpt && st->ckpt_size >= size)
		return st->ckpt;
	/* kvmalloc() refuses more than INT_MAX bytes; vmalloc takes those. */
	if (size <= INT_MAX)
		buf = kvmalloc(size, GFP_KERNEL | __GFP_NOWARN);
	else
		buf = __vmalloc(size, GFP_KERNEL | __GFP_NOWARN);
	if (!buf)
		return NULL;
	kvfree(st->ckpt);
	st->ckpt = buf;
	st->ckpt_size = size;
	return buf;
}

static void kvtier_store_free(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	int i;

	/*
	 * Slots that wait for a commit that did not come (it failed, and the
	 * tier is detaching): the namespace keeps what the last commit names,
	 * and memory forgets the rest.
	 */
	kvtier_slots_freeze(&tier->slots, &st->releasing);
	kvtier_slots_release(&tier->slots, &st->releasing);
	kvtier_slots_forget(&tier->slots, atomic_long_xchg(&st->lost_slots, 0));
	/* A journal inside the allocator's range (an upgrade put it there). */
	if (st->journal_blocks && tier->slots.nr > st->journal_start)
		kvtier_slots_free(&tier->slots, st->journal_start, st->journal_blocks);
	/* CRC sections in runs of data slots (an upgrade to version 3). */
	for (i = 0; st->crcs_run && i < 2; i++)
		kvtier_slots_free(&tier->slots, st->crcs_block[i] - st->data_start,
				  kvtier_crcs_blocks(st->nr_slots));
	kvtier_slots_exit(&tier->slots);
	kvfree(st->ckpt);
	st->ckpt = NULL;
	st->ckpt_size = 0;
	kvfree(st->map_buf);
	st->map_buf = NULL;
	spin_lock(&tier->regions_lock);
	kvtier_journal_dels_free(&st->dels);
	spin_unlock(&tier->regions_lock);
}

/*
 * Is @r one kvtier_persistent_get() hands out for @how? A lost region
 * (pagemap.c: its map is damaged) is in no commit: a checkpoint that does
 * not list it deletes it, as its unlink, which follows, does.
 */
static bool kvtier_persistent_wanted(struct kvtier_region *r,
				     enum kvtier_get_how how)
{
	if (!r->linked || !r->persistent)
		return false;
	if (how == KVT_GET_ALL)
		return true;
	if (READ_ONCE(r->map.lost))
		return false;
	return how != KVT_GET_TXN || atomic_read(&r->jr_changed);
}

/*
 * The linked persistent regions, each with a reference, in list order:
 * *@out (kmalloc'ed, NULL if none) and *@n. For a commit (@how not
 * KVT_GET_ALL) the same regions_lock section takes the changes: it moves
 * the names unlinked since the last commit to @dels, and exchanges each
 * region's jr_changed to 0 (KVT_GET_TXN lists only those where it was
 * set); a checkpoint clears store.need_full there, since it records every
 * change made before. Errors: -ENOMEM, with nothing taken; a snapshot
 * must never mistake a failed allocation for "no regions".
 */
int kvtier_persistent_get(struct kvtier_tier *tier, struct kvtier_region ***out,
			  unsigned int *n, enum kvtier_get_how how,
			  struct list_head *dels)
{
	struct kvtier_region **v = NULL, *r;
	unsigned int max = 0;

	*out = NULL;
	*n = 0;
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node)
		max += kvtier_persistent_wanted(r, how);
	spin_unlock(&tier->regions_lock);
	if (max) {
		v = kmalloc_array(max, sizeof(*v), GFP_NOIO);
		if (!v)
			return -ENOMEM;
	}
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node) {
		if (!kvtier_persistent_wanted(r, how))
			continue;
		/*
		 * Created or changed after the count, so after the deferred
		 * slots were frozen: the commit its creator or fsync makes
		 * next records it.
		 */
		if (*n == max || !kvtier_region_tryget(r))
			continue;
		if (how != KVT_GET_ALL)
			atomic_set(&r->jr_changed, 0);
		v[(*n)++] = r;
	}
	if (how != KVT_GET_ALL)
		list_splice_init(&tier->store.dels, dels);
	if (how == KVT_GET_CKPT)
		WRITE_ONCE(tier->store.need_full, false);
	spin_unlock(&tier->regions_lock);
	*out = v;
	return 0;
}

/*
 * A checkpoint in the making, written to its area in pieces so that the
 * memory it takes does not grow with the pages stored. The page records
 * (version 3: extent records) go through @chunk (bytes [@chunk_base,
 * @pos) of the checkpoint), written each time it fills; the header and
 * the region records, which come first but whose counts are known only at
 * the end, are in @head with the first records (those that share the
 * region records' last block), written last. @crc_rest is the CRC of the
 * bytes [@head_end, @chunk_base) written so far, and kvtier_crc32c_cat()
 * puts the head in front of it. @map_crc is the CRC of the region's
 * records being written, up to @map_pos (pagemap.c keeps it, to check
 * them when it reads them back).
 *
 * Version 3 extends a run of pages into one extent record while their
 * slots follow each other (@ext_*), and writes each page's CRC to the CRC
 * section through @crcs (its bytes [@crcs_base, @crcs_pos)), written each
 * time it fills; @crcs_crc is the CRC of the region's CRCs up to
 * @crcs_crc_pos. @chunk and @crcs are halves of the checkpoint buffer's
 * first KVT_CKPT_CHUNK bytes (version 1 and 2: @chunk is all of them),
 * @head the rest.
 *
 * Version 4 sends a region's CRCs to runs of fresh data slots first
 * (crcruns.c): through @rbuf, the second half of @crcs's half, placed
 * each time it fills and at the region's end, the runs it got in
 * @rruns; once no slot is free (@rfull) the rest of the region's go to
 * the CRC section. Its CRC run records follow its extent records. Blocks
 * placed in slots that follow the ones placed before (the regions of a
 * checkpoint get theirs one after another) wait in @rbuf (@rpend of them,
 * from slot @pend_slot, earlier regions' too) and go out in one write,
 * at the latest before the header: the region's own CRCs are at @rcur,
 * after them, @rlen bytes of the @rroom left.
 */
struct kvt_ckpt_out {
	struct kvtier_tier *tier;
	u64 area;		/* first block of the area */
	u64 limit;		/* bytes of the area (version 3: before @crcs_block) */
	u8 *head;		/* @head_end bytes */
	u64 head_end;		/* the records' end, rounded up to a block */
	u8 *chunk;		/* @chunk_size bytes */
	size_t chunk_size;
	u64 chunk_base;		/* a block boundary at or past @head_end */
	u64 pos;		/* bytes of the checkpoint so far */
	u32 crc_rest;
	u64 map_pos;
	u32 map_crc;
	u64 r_pages;		/* pages recorded of the region */
	u64 r_extents;		/* extent records of the region */
	bool extents;		/* version 3 */
	u64 ext_slot;		/* the run being extended: @ext_len pages */
	u32 ext_index;
	u32 ext_len;
	u64 crcs_block;		/* first block of the CRC section */
	u64 crcs_limit;		/* its bytes */
	u8 *crcs;		/* @chunk_size bytes */
	u64 crcs_base;		/* a block boundary unless written last */
	u64 crcs_pos;
	u64 crcs_crc_pos;
	u32 crcs_crc;
	size_t crcs_size;	/* bytes of @crcs (and of @rbuf) */
	bool runs;		/* version 4 */
	u8 *rbuf;		/* blocks placed, not written; the region's CRCs */
	u64 pend_slot;
	u32 rpend;
	u8 *rcur;
	size_t rlen;
	size_t rroom;
	bool rfull;
	struct kvtier_crc_runs *rruns;	/* the region's runs */
	u64 r_runs;		/* CRC run records of the region */
	struct kvtier_map_win win[2];	/* for kvtier_pagemap_copy() */
};

/* Add the records from @map_pos to @pos to @map_crc, before the chunk moves on. */
static void kvt_ckpt_map_crc(struct kvt_ckpt_out *o)
{
	while (o->map_pos < o->pos) {
		u64 end = o->map_pos < o->head_end ? min(o->pos, o->head_end) : o->pos;
		const u8 *p = o->map_pos < o->head_end ? o->head + o->map_pos :
			      o->chunk + (o->map_pos - o->chunk_base);

		o->map_crc = kvtier_crc32c_cat(o->map_crc,
					       kvtier_crc32c(p, end - o->map_pos),
					       end - o->map_pos);
		o->map_pos = end;
	}
}

/* Add the CRCs from @crcs_crc_pos to @crcs_pos to @crcs_crc, likewise. */
static void kvt_ckpt_crcs_crc(struct kvt_ckpt_out *o)
{
	const u8 *p = o->crcs + (o->crcs_crc_pos - o->crcs_base);
	u64 n = o->crcs_pos - o->crcs_crc_pos;

	o->crcs_crc = kvtier_crc32c_cat(o->crcs_crc, kvtier_crc32c(p, n), n);
	o->crcs_crc_pos = o->crcs_pos;
}

/* Where the next record goes: NULL if the chunk must be written first. */
static void *kvt_ckpt_next(struct kvt_ckpt_out *o)
{
	if (o->pos < o->head_end)
		return o->head + o->pos;
	if (o->pos - o->chunk_base == o->chunk_size)
		return NULL;
	return o->chunk + (o->pos - o->chunk_base);
}

/* Whether the chunk or the CRCs must be written before the next page. */
static bool kvt_ckpt_full(struct kvt_ckpt_out *o)
{
	return !kvt_ckpt_next(o) ||
	       (o->extents && o->crcs_pos - o->crcs_base == o->crcs_size) ||
	       (o->runs && o->rlen == o->rroom);
}

/* Write @n bytes of @buf at @block, zero to the end of their last block. */
static int kvt_ckpt_write_piece(struct kvt_ckpt_out *o, u64 block, u8 *buf, size_t n)
{
	memset(buf + n, 0, round_up(n, KVTIER_BLOCK_SIZE) - n);
	return kvtier_io_meta(o->tier, REQ_OP_WRITE, block, buf,
			      DIV_ROUND_UP(n, KVTIER_BLOCK_SIZE), 0);
}

/*
 * Write what the chunk holds; the chunk then starts at @pos (a block
 * boundary unless this is the last piece).
 */
static int kvt_ckpt_flush(struct kvt_ckpt_out *o)
{
	size_t n;
	int ret;

	kvt_ckpt_map_crc(o);
	if (o->pos <= o->chunk_base)
		return 0;
	n = o->pos - o->chunk_base;
	ret = kvt_ckpt_write_piece(o, o->area + o->chunk_base / KVTIER_BLOCK_SIZE,
				   o->chunk, n);
	if (ret)
		return ret;
	o->crc_rest = kvtier_crc32c_cat(o->crc_rest, kvtier_crc32c(o->chunk, n), n);
	o->chunk_base = o->pos;
	return 0;
}

/* Write what @crcs holds, as kvt_ckpt_flush() does the chunk. */
static int kvt_ckpt_crcs_flush(struct kvt_ckpt_out *o)
{
	int ret;

	kvt_ckpt_crcs_crc(o);
	if (o->crcs_pos <= o->crcs_base)
		return 0;
	ret = kvt_ckpt_write_piece(o, o->crcs_block + o->crcs_base / KVTIER_BLOCK_SIZE,
				   o->crcs, o->crcs_pos - o->crcs_base);
	if (ret)
		return ret;
	kvtier_count(o->tier, KVT_STAT_CKPT_CRC_BYTES, o->crcs_pos - o->crcs_base);
	o->crcs_base = o->crcs_pos;
	return 0;
}

/* Append @n bytes of CRCs to the CRC section, writing it as it fills. */
static int kvt_ckpt_section_put(struct kvt_ckpt_out *o, const u8 *p, size_t n)
{
	size_t k;
	int ret;

	if (o->crcs_pos + n > o->crcs_limit)
		return -EOVERFLOW;
	for (; n; p += k, n -= k) {
		k = min(n, o->crcs_size - (size_t)(o->crcs_pos - o->crcs_base));
		memcpy(o->crcs + (o->crcs_pos - o->crcs_base), p, k);
		o->crcs_pos += k;
		if (o->crcs_pos - o->crcs_base < o->crcs_size)
			continue;
		ret = kvt_ckpt_crcs_flush(o);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Version 4: write the blocks @rbuf holds placed, from slot @pend_slot;
 * the region's CRCs not placed yet, after them, come to its front.
 */
static int kvt_ckpt_runs_write(struct kvt_ckpt_out *o)
{
	int ret;

	if (!o->rpend)
		return 0;
	ret = kvtier_io_meta(o->tier, REQ_OP_WRITE,
			     o->tier->store.data_start + o->pend_slot, o->rbuf,
			     o->rpend, 0);
	if (ret)
		return ret;
	memmove(o->rbuf, o->rcur, round_up(o->rlen, KVTIER_BLOCK_SIZE));
	o->rpend = 0;
	o->rcur = o->rbuf;
	o->rroom = o->crcs_size;
	return 0;
}

/*
 * Version 4: place the region's CRCs at @rcur in fresh data slots, the
 * rest of their last block zero, and add the runs to @rruns; blocks that
 * follow the ones waiting in @rbuf wait with them, others make those go
 * out first. What finds no free slot goes to the CRC section, and so
 * does every later CRC of the region (@rfull): the stream's runs come
 * first, its section part after. -ENOMEM, -EIO, -EOVERFLOW.
 */
static int kvt_ckpt_runs_flush(struct kvt_ckpt_out *o)
{
	struct kvtier_tier *tier = o->tier;
	u64 nb = DIV_ROUND_UP(o->rlen, KVTIER_BLOCK_SIZE);
	unsigned long slot, got;
	size_t n;
	int ret;

	if (!o->rlen)
		return 0;
	memset(o->rcur + o->rlen, 0, nb * KVTIER_BLOCK_SIZE - o->rlen);
	while (nb) {
		ret = kvtier_crc_runs_room(&tier->store, &o->rruns);
		if (ret)
			return ret;
		slot = kvtier_slots_alloc(&tier->slots, nb, &got);
		if (slot == KVTIER_NO_SLOT)
			break;
		/* In @rruns first: a failure from here on gives them back. */
		kvtier_crc_runs_add(o->rruns, slot, got, true);
		if (o->rpend && slot != o->pend_slot + o->rpend) {
			ret = kvt_ckpt_runs_write(o);
			if (ret)
				return ret;
		}
		if (!o->rpend)
			o->pend_slot = slot;
		n = min_t(u64, o->rlen, (u64)got * KVTIER_BLOCK_SIZE);
		o->crcs_crc = kvtier_crc32c_cat(o->crcs_crc, kvtier_crc32c(o->rcur, n), n);
		kvtier_count(tier, KVT_STAT_CKPT_CRC_BYTES, n);
		o->rpend += got;
		o->rcur += (size_t)got * KVTIER_BLOCK_SIZE;
		o->rroom -= (size_t)got * KVTIER_BLOCK_SIZE;
		o->rlen -= n;
		nb -= got;
	}
	ret = 0;
	if (nb) {
		o->rfull = true;
		ret = kvt_ckpt_section_put(o, o->rcur, o->rlen);
		o->rlen = 0;
	}
	/* Full: what waits goes out, and the next CRCs have room. */
	if (!ret && !o->rroom)
		ret = kvt_ckpt_runs_write(o);
	return ret;
}

/*
 * Append @n bytes of the region's CRC stream: to its runs (version 4,
 * while slots are free), else to the CRC section.
 */
static int kvt_ckpt_crcs_put(struct kvt_ckpt_out *o, const u8 *p, size_t n)
{
	size_t k;
	int ret;

	while (n && o->runs && !o->rfull) {
		k = min(n, o->rroom - o->rlen);
		memcpy(o->rcur + o->rlen, p, k);
		o->rlen += k;
		p += k;
		n -= k;
		if (o->rlen < o->rroom)
			continue;
		ret = kvt_ckpt_runs_flush(o);
		if (ret)
			return ret;
	}
	return n ? kvt_ckpt_section_put(o, p, n) : 0;
}

/* Write whichever of the chunk and the CRCs is full. */
static int kvt_ckpt_write_full(struct kvt_ckpt_out *o)
{
	int ret = 0;

	if (!kvt_ckpt_next(o))
		ret = kvt_ckpt_flush(o);
	if (!ret && o->extents && o->crcs_pos - o->crcs_base == o->crcs_size)
		ret = kvt_ckpt_crcs_flush(o);
	if (!ret && o->runs && o->rlen == o->rroom)
		ret = kvt_ckpt_runs_flush(o);
	return ret;
}

/*
 * Version 4: a region's CRC stream begins; @old are the runs its records
 * on the media name, which a copy of them keeps (NULL: it is written
 * anew). -ENOMEM.
 */
static int kvt_ckpt_runs_begin(struct kvt_ckpt_out *o,
			       const struct kvtier_crc_runs *old)
{
	o->rlen = 0;
	o->rfull = false;
	o->r_runs = 0;
	o->rruns = kvtier_crc_runs_new(&o->tier->store, old, 0);
	if (!o->rruns)
		return -ENOMEM;
	o->rruns->keep = o->rruns->nr;
	return 0;
}

/*
 * Version 4: the region's CRCs are all in: place the last of them and
 * record its runs after its extent records. -ENOMEM, -EIO, -EOVERFLOW.
 */
static int kvt_ckpt_runs_end(struct kvt_ckpt_out *o)
{
	struct kvtier_disk_extent *e;
	u32 i;
	int ret;

	ret = kvt_ckpt_runs_flush(o);
	for (i = 0; !ret && i < o->rruns->nr; i++) {
		ret = kvt_ckpt_write_full(o);
		if (ret)
			break;
		if (o->pos + sizeof(*e) > o->limit)
			return -EOVERFLOW;
		e = kvt_ckpt_next(o);
		*e = o->rruns->run[i];
		o->pos += sizeof(*e);
		o->r_runs++;
	}
	return ret;
}

/* Record the run of pages being extended, if any (version 3). */
static int kvt_ckpt_extent_end(struct kvt_ckpt_out *o)
{
	struct kvtier_disk_extent *e;

	if (!o->ext_len)
		return 0;
	if (o->pos + sizeof(*e) > o->limit)
		return -EOVERFLOW;
	e = kvt_ckpt_next(o);
	e->slot = cpu_to_le64(o->ext_slot);
	e->index = cpu_to_le32(o->ext_index);
	e->len = cpu_to_le32(o->ext_len);
	o->pos += sizeof(*e);
	o->r_extents++;
	o->ext_len = 0;
	return 0;
}

/*
 * Record page @index of the region at @slot with @crc; pages come in
 * increasing index. There must be room (!kvt_ckpt_full()); the caller
 * writes what filled before the next. -EOVERFLOW: past the area.
 */
static int kvt_ckpt_page(struct kvt_ckpt_out *o, u32 index, u64 slot, u32 crc)
{
	struct kvtier_disk_page *rec;
	int ret;

	if (o->extents) {
		if (o->runs && !o->rfull) {
			*(__le32 *)(o->rcur + o->rlen) = cpu_to_le32(crc);
			o->rlen += sizeof(__le32);
		} else {
			if (o->crcs_pos + sizeof(__le32) > o->crcs_limit)
				return -EOVERFLOW;
			*(__le32 *)(o->crcs + (o->crcs_pos - o->crcs_base)) =
				cpu_to_le32(crc);
			o->crcs_pos += sizeof(__le32);
		}
		o->r_pages++;
		if (o->ext_len && o->ext_len < U32_MAX &&
		    index == o->ext_index + o->ext_len &&
		    slot == o->ext_slot + o->ext_len) {
			o->ext_len++;
			return 0;
		}
		ret = kvt_ckpt_extent_end(o);
		o->ext_slot = slot;
		o->ext_index = index;
		o->ext_len = 1;
		return ret;
	}
	if (o->pos + sizeof(*rec) > o->limit)
		return -EOVERFLOW;
	rec = kvt_ckpt_next(o);
	rec->slot = cpu_to_le64(slot);
	rec->index = cpu_to_le32(index);
	rec->crc = cpu_to_le32(crc);
	o->pos += sizeof(*rec);
	o->r_pages++;
	return 0;
}

/*
 * Record the @n pages of an extent from @index (slots from @slot, CRCs
 * @crcs) in @o, writing full pieces as they fill. No lock held.
 */
static int kvtier_snapshot_extent(struct kvt_ckpt_out *o, pgoff_t index,
				  unsigned long slot, const u32 *crcs,
				  unsigned int n)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = kvt_ckpt_page(o, index + i, slot + i, crcs[i]);
		if (!ret && kvt_ckpt_full(o))
			ret = kvt_ckpt_write_full(o);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Record @r's pages in @o from its xarray: 0 or -errno (-EOVERFLOW: past
 * the area; a write of a full piece failed). Pairs are read under the
 * region's xa_lock, which is dropped every so often, to write a full
 * piece and to record an extent (whose CRCs are copied first); a page
 * that changes meanwhile is recorded old or new, both of which are
 * complete on the media.
 */
static int kvtier_snapshot_pages(struct kvtier_region *r, struct kvt_ckpt_out *o)
{
	bool journal = r->tier->store.journal_blocks;
	u32 crcs[KVT_EXTENT_PAGES];
	unsigned long group = ULONG_MAX;
	XA_STATE(xas, &r->pages, 0);
	unsigned int batch = 0, i;
	bool marked;
	void *entry;
	int ret;

	xas_lock(&xas);
	/* Changes from here on are not all in this checkpoint. */
	r->map.next_seq = atomic_read(&r->map.changes);
	xas_for_each(&xas, entry, r->nr_pages - 1) {
		unsigned long slot;
		pgoff_t base, start;
		unsigned int n;
		u32 crc = 0;

		if (xas_retry(&xas, entry))
			continue;
		if (kvt_is_extent(entry)) {
			/*
			 * From where the walk is: it may have left the lock
			 * inside the group, before the group became one.
			 */
			base = xas.xa_index & ~(KVT_EXTENT_PAGES - 1);
			start = xas.xa_index;
			n = base + KVT_EXTENT_PAGES - start;
			for (i = 0; i < n; i++) {
				crcs[i] = 0;
				kvtier_crcs_get(r, start + i, &crcs[i]);
			}
			/* Not xas_pause(): it steps a whole group from start. */
			xas_set(&xas, base + KVT_EXTENT_PAGES);
			xas_unlock(&xas);
			ret = kvtier_snapshot_extent(o, start,
						     kvt_shadow_slot(entry, start),
						     crcs, n);
			if (ret)
				return ret;
			cond_resched();
			xas_lock(&xas);
			continue;
		}
		slot = xa_is_value(entry) ? kvt_shadow_slot(entry, xas.xa_index) :
			((struct kvtier_page *)entry)->slot;
		/* Recorded here: a transaction need not again. */
		marked = journal && xas_get_mark(&xas, KVT_XA_CHANGED);
		if (marked) {
			xas_clear_mark(&xas, KVT_XA_CHANGED);
			atomic_long_dec(&r->jr_pages);
		}
		if (slot != KVTIER_NO_SLOT) {
			kvtier_crcs_get(r, xas.xa_index, &crc);
			ret = kvt_ckpt_page(o, xas.xa_index, slot, crc);
			if (ret) {
				xas_unlock(&xas);
				return ret;
			}
		}
		/* Its group may be an extent once the walk has left it. */
		if (marked)
			kvtier_mapext_walked(r, &xas, &group);
		/* Full (only ever just now): written outside the lock. */
		if (kvt_ckpt_full(o)) {
			xas_pause(&xas);
			xas_unlock(&xas);
			ret = kvt_ckpt_write_full(o);
			if (ret)
				return ret;
			xas_lock(&xas);
			continue;
		}
		if (++batch % 4096 == 0) {
			xas_pause(&xas);
			xas_unlock(&xas);
			cond_resched();
			xas_lock(&xas);
		}
	}
	kvtier_mapext_walked(r, NULL, &group);
	xas_unlock(&xas);
	return 0;
}

/*
 * kvtier_pagemap_copy() for a checkpoint: @n bytes of a closed region's
 * records (@crcs: of its CRCs in the CRC section) as they are, appended
 * to @o a piece at a time (version 4: the CRCs to runs if slots are
 * free). @arg is the checkpoint's out.
 */
static int kvtier_snapshot_copy(void *arg, bool crcs, const void *p, size_t n)
{
	struct kvt_ckpt_out *o = arg;
	size_t k;
	int ret;

	if (crcs)
		return kvt_ckpt_crcs_put(o, p, n);
	if (o->pos + n > o->limit)
		return -EOVERFLOW;
	for (; n; p += k, n -= k) {
		/* Whole records: the head's end and a chunk are blocks. */
		k = min_t(u64, n, o->pos < o->head_end ? o->head_end - o->pos :
			  o->chunk_size - (o->pos - o->chunk_base));
		memcpy(kvt_ckpt_next(o), p, k);
		o->pos += k;
		ret = kvt_ckpt_write_full(o);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * kvtier_pagemap_walk() for the checkpoint of an upgrade to version 3: a
 * closed region's page records recorded page by page, so that they are
 * joined into runs. @arg is the checkpoint's out.
 */
static int kvtier_snapshot_convert(struct kvtier_region *r, void *arg,
				   const struct kvtier_disk_page *p, size_t n)
{
	struct kvt_ckpt_out *o = arg;
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = kvt_ckpt_page(o, le32_to_cpu(p[i].index),
				    le64_to_cpu(p[i].slot), le32_to_cpu(p[i].crc));
		/* Full: written before the next page (as snapshot_pages). */
		if (!ret)
			ret = kvt_ckpt_write_full(o);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Whether no page of loaded region @r got a new slot since its records
 * were taken. Under its xa_lock: write-back completion marks the region
 * changed for the journal (jr_changed, which this checkpoint cleared when
 * it took the region) and bumps map.changes under it, so a page is either
 * counted here (the map is walked) or still marked for the next journal
 * transaction.
 */
static bool kvtier_snapshot_unchanged(struct kvtier_region *r)
{
	bool same;

	xa_lock(&r->pages);
	same = atomic_read(&r->map.changes) == r->map.seq;
	xa_unlock(&r->pages);
	return same;
}

/*
 * Record @r's pages in @o from memory, or as the checkpoint on the media
 * has them if its map is unloaded (version 4: or unchanged since); 0 or
 * -errno. Its map's next place is noted, taken once the checkpoint is
 * (pagemap.c).
 */
static int kvtier_snapshot_map(struct kvtier_region *r, struct kvt_ckpt_out *o,
			       u64 attempt)
{
	bool same = r->tier->store.ckpt_extents == o->extents;
	u64 start, crcs_start;
	bool copy;
	int ret;

	/* The last region's last record may have filled the chunk. */
	ret = kvt_ckpt_write_full(o);
	if (ret)
		return ret;
	start = o->pos;
	crcs_start = o->crcs_pos;
	o->map_pos = o->pos;
	o->map_crc = ~0U;	/* the CRC of nothing */
	o->crcs_crc_pos = o->crcs_pos;
	o->crcs_crc = ~0U;
	o->r_pages = 0;
	o->r_extents = 0;
	o->r_runs = 0;
	/*
	 * Records on the media that are the map, as this checkpoint writes
	 * them, are copied. Version 4 copies a loaded region's too when no
	 * page got a new slot since they were taken: its CRCs stay in its
	 * runs, not written again (a page that changes meanwhile is the
	 * next commit's, as for a walk).
	 */
	copy = same && (r->map.unloaded ||
			(o->runs && r->map.valid && !r->map.lost &&
			 kvtier_snapshot_unchanged(r)));
	if (o->runs) {
		ret = kvt_ckpt_runs_begin(o, copy ? r->map.runs : NULL);
		if (ret)
			return ret;
	}
	if (copy) {
		r->map.next_seq = r->map.seq;
		ret = kvtier_pagemap_copy(r, o->win, kvtier_snapshot_copy, o);
		/*
		 * A loaded map is whole in memory: the next attempt (this one
		 * fails, whatever failed) records it from there instead.
		 */
		if (ret && !r->map.unloaded)
			r->map.valid = false;
		else if (ret == -EUCLEAN)
			kvtier_pagemap_damaged(r);
		o->r_pages = r->map.pages;
		o->r_extents = kvtier_map_extent_records(&r->map);
	} else if (r->map.unloaded) {
		/* An upgrade to version 3: page records made extents. */
		r->map.next_seq = r->map.seq;
		ret = kvtier_pagemap_walk(r, kvtier_snapshot_convert, o);
		if (ret == -EBADMSG)	/* version 3's CRCs: not read here */
			ret = -EUCLEAN;
		if (ret == -EUCLEAN)
			kvtier_pagemap_damaged(r);
	} else {
		ret = kvtier_snapshot_pages(r, o);
	}
	/* The last run's record, with room made for it. */
	if (!ret)
		ret = kvt_ckpt_write_full(o);
	if (!ret)
		ret = kvt_ckpt_extent_end(o);
	if (!ret && o->runs)
		ret = kvt_ckpt_runs_end(o);
	if (ret)
		return ret;
	kvt_ckpt_map_crc(o);
	if (o->extents)
		kvt_ckpt_crcs_crc(o);
	if (o->runs) {
		/* The stream is as it was: only where its tail is may differ. */
		if (copy)
			o->crcs_crc = r->map.crcs_crc;
		/* The runs as they are: unchanged, or none before nor now. */
		if (o->rruns->nr == o->rruns->keep && (copy || !r->map.runs))
			kvtier_crc_runs_free(&r->tier->store, o->rruns);
		else
			r->map.next_runs = o->rruns;
		o->rruns = NULL;
	}
	r->map.next_ckpt = attempt;
	r->map.next_off = start;
	r->map.next_count = o->extents ? o->r_extents + o->r_runs : o->r_pages;
	r->map.next_crc = o->map_crc;
	r->map.next_pages = o->r_pages;
	r->map.next_crcs_off = crcs_start;
	r->map.next_crcs_crc = o->crcs_crc;
	return 0;
}

/* @r's record, with nr_pages zero. */
void kvtier_region_record(struct kvtier_region *r, struct kvtier_disk_region *rec)
{
	memset(rec, 0, sizeof(*rec));
	strscpy_pad(rec->name, r->name, sizeof(rec->name));
	rec->size = cpu_to_le64(kvtier_region_size(r));
	rec->created = cpu_to_le64(r->created);
	rec->last_used = cpu_to_le64(kvtier_region_last_used(r));
	rec->owner = cpu_to_le32(from_kuid(&init_user_ns, r->owner));
	rec->group = cpu_to_le32(from_kgid(&init_user_ns, r->gid));
	rec->mode = cpu_to_le32(r->mode);
	rec->flags = cpu_to_le32((READ_ONCE(r->pinned) ?
				  KVTIER_DISK_REGION_PINNED : 0) |
				 (READ_ONCE(r->sealed) ?
				  KVTIER_DISK_REGION_SEALED : 0));
}

/*
 * Write the checkpoint of generation @gen to area @copy: the page records
 * (version 3: extent records and CRCs) as each region's xarray has them,
 * a piece at a time, then the header and the region records ahead of
 * them. *@bytes and *@crc get its size and CRC for the superblock
 * (version 3: of its index). Caller holds store.lock and is in a
 * memalloc_noio scope. Errors: -EOVERFLOW (it does not fit its area),
 * -ENOMEM, -EIO.
 */
static int kvtier_snapshot_write(struct kvtier_tier *tier, u64 gen, int copy,
				 u64 *bytes, u32 *crc)
{
	struct kvtier_store *st = &tier->store;
	bool extents = kvtier_store_extents(st);
	u64 area = st->meta_start + copy * st->meta_blocks;
	struct kvt_ckpt_out o = {
		.tier = tier,
		.area = area,
		.limit = kvtier_index_blocks(st, copy) * KVTIER_BLOCK_SIZE,
		.crc_rest = ~0U,	/* the CRC of nothing */
		.chunk_size = extents ? KVT_CKPT_CHUNK / 2 : KVT_CKPT_CHUNK,
		.crcs_size = KVT_CKPT_CHUNK / (kvtier_store_crc_runs(st) ? 4 : 2),
		.extents = extents,
		.runs = kvtier_store_crc_runs(st),
		.crcs_block = st->crcs_block[copy],
		.crcs_limit = st->nr_slots * sizeof(__le32),
	};
	struct kvtier_disk_ckpt *hdr;
	struct kvtier_disk_region *rec;
	struct kvtier_region **v;
	u64 attempt = ++st->ckpt_attempt;
	unsigned int i, n;
	LIST_HEAD(dels);
	u64 nr_pages = 0, nr_extents = 0, nr_runs = 0, used;
	int ret;

	ret = kvtier_persistent_get(tier, &v, &n, KVT_GET_CKPT, &dels);
	if (ret)
		return ret;
	/* A checkpoint lists what is linked: what is not is deleted. */
	kvtier_journal_dels_free(&dels);
	o.pos = sizeof(*hdr) + (u64)n * sizeof(*rec);
	o.head_end = round_up(o.pos, KVTIER_BLOCK_SIZE);
	o.chunk_base = o.head_end;
	ret = -EOVERFLOW;
	if (n > st->max_regions || o.head_end > o.limit)
		goto out;
	/* The chunk, then the head: kept, so a commit seldom allocates. */
	o.chunk = kvtier_ckpt_buf(st, KVT_CKPT_CHUNK + o.head_end);
	ret = -ENOMEM;
	if (!o.chunk) {
		dev_err_ratelimited(&tier->dev, "no memory for a checkpoint of %u regions\n", n);
		goto out;
	}
	o.crcs = o.chunk + o.chunk_size;
	o.rbuf = o.crcs + o.crcs_size;
	o.rcur = o.rbuf;
	o.rroom = o.crcs_size;
	o.head = o.chunk + KVT_CKPT_CHUNK;
	memset(o.head, 0, o.head_end);
	/*
	 * Version 3: the superblock copy of this area may name what is in
	 * it, whose regions' CRCs are checked only when each is read. Make
	 * that checkpoint fail its CRC (its header zero) before any CRC
	 * moves: a torn write must not leave it whole over the new CRCs.
	 */
	if (extents) {
		ret = kvtier_io_meta(tier, REQ_OP_WRITE | REQ_FUA, area, o.head, 1, 0);
		if (ret)
			goto out;
	}
	hdr = (void *)o.head;
	rec = (void *)(hdr + 1);
	st->has_sealed = false;
	for (i = 0; i < n; i++) {
		kvtier_region_record(v[i], &rec[i]);
		st->has_sealed |= READ_ONCE(v[i]->sealed);
		ret = kvtier_snapshot_map(v[i], &o, attempt);
		if (ret)
			goto out;
		rec[i].nr_pages = cpu_to_le64(o.r_pages);
		nr_pages += o.r_pages;
		if (extents) {
			rec[i].nr_extents = cpu_to_le64(o.r_extents);
			rec[i].crcs_crc = cpu_to_le32(o.crcs_crc);
			rec[i].nr_crc_runs = cpu_to_le32(o.r_runs);
			nr_extents += o.r_extents;
			nr_runs += o.r_runs;
		}
	}
	ret = kvt_ckpt_flush(&o);
	if (!ret && extents)
		ret = kvt_ckpt_crcs_flush(&o);
	/* The CRC runs still waiting, before the header and superblock. */
	if (!ret && o.runs)
		ret = kvt_ckpt_runs_write(&o);
	if (ret)
		goto out;
	hdr->magic = cpu_to_le64(KVTIER_CKPT_MAGIC);
	hdr->generation = cpu_to_le64(gen);
	hdr->nr_regions = cpu_to_le64(n);
	hdr->nr_pages = cpu_to_le64(nr_pages);
	hdr->nr_extents = cpu_to_le64(nr_extents);
	hdr->nr_crc_runs = cpu_to_le64(nr_runs);
	/* The head's unused tail is zero (memset above). */
	used = min(o.pos, o.head_end);
	ret = kvtier_io_meta(tier, REQ_OP_WRITE, area, o.head,
			     DIV_ROUND_UP(used, KVTIER_BLOCK_SIZE), 0);
	if (ret)
		goto out;
	*bytes = o.pos;
	*crc = kvtier_crc32c_cat(kvtier_crc32c(o.head, used), o.crc_rest,
				 o.pos - used);
out:
	/* A region's runs being made when it failed (the others': pagemap.c). */
	if (o.rruns) {
		kvtier_crc_runs_put_slots(tier, o.rruns, o.rruns->keep, true);
		kvtier_crc_runs_free(st, o.rruns);
	}
	for (i = 0; i < n; i++)
		kvtier_region_put(v[i]);
	kfree(v);
	if (ret == -EOVERFLOW)
		dev_err(&tier->dev, "checkpoint does not fit its area\n");
	return ret;
}

/*
 * Free the slots of the last commit's set, discarding them. Under
 * store.lock. A direct read may have looked up one of them before the
 * commit (direct.c) and still be reading it: wait for those first, so no
 * read gets another page's bytes (or a discarded slot's).
 */
static void kvtier_store_release(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	struct kvtier_extent *e;

	lockdep_assert_held(&st->lock);
	if (st->releasing.units)
		synchronize_srcu(&tier->direct_srcu);
	for (e = rb_entry_safe(rb_first(&st->releasing.root), struct kvtier_extent, node);
	     e; e = rb_entry_safe(rb_next(&e->node), struct kvtier_extent, node))
		kvtier_io_discard(tier, e->start, e->len);
	kvtier_slots_release(&tier->slots, &st->releasing);
}

/*
 * Write the checkpoint and superblock of generation @gen (see the top of
 * the file) to the copy the last checkpoint did not use. Caller holds
 * store.lock, in a memalloc_noio scope.
 */
static int kvtier_checkpoint_write(struct kvtier_tier *tier, u64 gen)
{
	struct kvtier_store *st = &tier->store;
	/*
	 * Those the crash points (freeze_at) stop, for the tests to cut: a
	 * checkpoint that compacts the journal, and the upgrade's.
	 */
	bool stops = st->journal_pos != st->journal_head || st->upgrading;
	int copy = !st->ckpt_copy;
	struct kvtier_disk_super *sb;
	u64 bytes;
	u32 crc;
	int ret;

	sb = kmalloc(KVTIER_BLOCK_SIZE, GFP_NOIO | __GFP_ZERO);
	if (!sb)
		return -ENOMEM;
	ret = kvtier_snapshot_write(tier, gen, copy, &bytes, &crc);
	if (ret)
		goto fail;
	if (stops)
		kvtier_freeze_point(tier, KVT_FREEZE_CKPT_AREA);
	kvtier_sb_fill(st, sb, gen, bytes, crc);
	ret = kvtier_io_meta(tier, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA,
			     copy, sb, 1, 0);
	if (ret)
		goto fail;
	if (stops)
		kvtier_freeze_point(tier, KVT_FREEZE_CKPT_SUPER);
	st->ckpt_copy = copy;
	st->ckpt_extents = kvtier_store_extents(st);
	st->journal_head = st->journal_pos;
	kvtier_pagemap_checkpointed(tier, st->ckpt_attempt, true);
	kvtier_pagemap_unload_closed(tier);
	if (READ_ONCE(st->bad_copy) == copy)
		WRITE_ONCE(st->bad_copy, -1);
	kfree(sb);
	return 0;
fail:
	/* Version 4: the CRC runs it made are no region's. */
	kvtier_pagemap_checkpointed(tier, st->ckpt_attempt, false);
	kfree(sb);
	return ret;
}

/*
 * Commit generation st->generation + 1 (at least st->gen_min): a journal
 * transaction where the store has a journal and one will do, else a
 * checkpoint. Caller holds store.lock.
 */
static int kvtier_commit_locked(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	s64 changes = atomic64_read(&st->changes);
	u64 gen = max(st->generation + 1, st->gen_min);
	int hist = KVT_HIST_COMMIT_JOURNAL;
	unsigned int noio;
	int ret = -E2BIG;
	u64 t0;

	lockdep_assert_held(&st->lock);
	kvtier_slots_freeze(&tier->slots, &st->releasing);
	if (changes == st->committed_changes && !st->releasing.units)
		return 0;

	t0 = ktime_get_ns();
	noio = memalloc_noio_save();
	if (st->journal_blocks && !READ_ONCE(st->need_full))
		ret = kvtier_journal_commit(tier, gen);
	if (ret == -E2BIG) {
		hist = KVT_HIST_COMMIT_CKPT;
		ret = kvtier_checkpoint_write(tier, gen);
	}
	memalloc_noio_restore(noio);
	kvtier_hist_add(&tier->lat[hist], ktime_get_ns() - t0);
	if (ret) {
		/* What the failed commit took is recorded nowhere. */
		if (st->journal_blocks)
			WRITE_ONCE(st->need_full, true);
		dev_err_ratelimited(&tier->dev, "commit of generation %llu failed: %d\n",
				    gen, ret);
		return ret;
	}
	st->generation = gen;
	st->committed_changes = changes;
	kvtier_count(tier, KVT_STAT_COMMIT, 1);
	kvtier_store_release(tier);
	return 0;
}

/*
 * Make every persistent region's written-back pages and its attributes
 * durable. A no-op when nothing changed since the last commit.
 */
int kvtier_store_commit(struct kvtier_tier *tier)
{
	int ret;

	/* Nothing a read-only tier allows changes what a commit records. */
	if (tier->backing.read_only)
		return 0;
	if (kvtier_fenced(tier))
		return -EBUSY;
	mutex_lock(&tier->store.lock);
	ret = kvtier_commit_locked(tier);
	mutex_unlock(&tier->store.lock);
	return ret;
}

/*
 * Write zeros to the @nr blocks from @block through the checkpoint buffer
 * (what it held is lost). Caller holds store.lock or the store is not yet
 * visible; a memalloc_noio scope where a commit could be waited for.
 */
static int kvtier_store_zero(struct kvtier_tier *tier, u64 block, u64 nr)
{
	void *zero = kvtier_ckpt_buf(&tier->store, KVT_CKPT_CHUNK);
	u64 n;
	int ret = 0;

	if (!zero)
		return -ENOMEM;
	memset(zero, 0, KVT_CKPT_CHUNK);
	for (; nr && !ret; block += n, nr -= n) {
		n = min_t(u64, nr, KVT_CKPT_CHUNK / KVTIER_BLOCK_SIZE);
		ret = kvtier_io_meta(tier, REQ_OP_WRITE, block, zero, n, 0);
	}
	return ret;
}

/*
 * @nr consecutive free data slots for an upgrade: the first, or
 * KVTIER_NO_SLOT when no free run is that long.
 */
static unsigned long kvtier_upgrade_run(struct kvtier_tier *tier, unsigned long nr)
{
	unsigned long start, got;

	start = kvtier_slots_alloc(&tier->slots, nr, &got);
	if (start == KVTIER_NO_SLOT || got == nr)
		return start;
	kvtier_slots_free(&tier->slots, start, got);
	return KVTIER_NO_SLOT;
}

/*
 * Commit the checkpoint of an upgrade, even if nothing changed since the
 * last commit; it stops at the crash points (freeze_at). Caller holds
 * store.lock.
 */
static int kvtier_upgrade_commit(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	int ret;

	WRITE_ONCE(st->need_full, true);
	atomic64_inc(&st->changes);
	st->upgrading = true;
	ret = kvtier_commit_locked(tier);
	st->upgrading = false;
	return ret;
}

/*
 * Give the attached version-1 namespace the journal of version 2, in
 * place: claim a free run of data slots, zero it, and commit a checkpoint
 * whose superblock names it. Until that superblock is on the media the
 * namespace is version 1, whole: the run was free in its checkpoint.
 * Caller holds store.lock, in a memalloc_noio scope, right after a
 * commit. Errors: -ENOSPC (no run, or too little left), -EIO and the
 * errors of the zeroing or the commit, with the namespace still version 1.
 */
static int kvtier_upgrade_journal(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	unsigned long start, jb, nfree;
	int ret;

	jb = kvtier_journal_blocks(st->nr_slots);
	/*
	 * As much free as the journal takes stays free, so that taking it
	 * does not make write-back reclaim regions for room at once.
	 */
	nfree = READ_ONCE(tier->slots.nr) - READ_ONCE(tier->slots.used);
	if (nfree < 2 * jb) {
		dev_err(&tier->dev, "%s: %lu free data slots: upgrading to format version 2 needs %lu (a journal of %lu, as many left)\n",
			tier->backing.path, nfree, 2 * jb, jb);
		return -ENOSPC;
	}
	start = kvtier_upgrade_run(tier, jb);
	if (start == KVTIER_NO_SLOT) {
		dev_err(&tier->dev, "%s: no free run of %lu data slots for the journal: cannot upgrade to format version 2\n",
			tier->backing.path, jb);
		return -ENOSPC;
	}
	/* No block of the run may read as a transaction. */
	ret = kvtier_store_zero(tier, st->data_start + start, jb);
	if (ret) {
		kvtier_slots_free(&tier->slots, start, jb);
		return ret;
	}
	/*
	 * Before the checkpoint: a page written back from here on is marked
	 * for the journal, one written back before is in the checkpoint.
	 */
	st->version = 2;
	st->journal_start = start;
	st->journal_head = 0;
	st->journal_pos = 0;
	WRITE_ONCE(st->journal_blocks, jb);
	ret = kvtier_upgrade_commit(tier);
	if (ret) {
		WRITE_ONCE(st->journal_blocks, 0);
		st->journal_start = 0;
		st->version = 1;
		/*
		 * The failed commit's superblock, naming the run, may have
		 * reached the media: the run is not handed out before the
		 * next commit has overwritten that copy.
		 */
		kvtier_slots_defer(&tier->slots, start, jb);
		return ret;
	}
	dev_info(&tier->dev, "%s: upgraded to format version 2: a journal of %lu blocks at data slot %lu\n",
		 tier->backing.path, jb, start);
	return 0;
}

/*
 * Make the attached version-2 namespace version 3, in place: its areas
 * have no room for CRC sections, so claim two free runs of data slots for
 * them (INCOMPAT_CRCS_RUN) and commit a checkpoint of version 3 (closed
 * regions' page records are made extents as it copies them) whose
 * superblock names them. Until that superblock is on the media the
 * namespace is version 2, whole: the runs were free in its checkpoint,
 * and nothing reads a CRC section before a superblock names it, so they
 * need no zeroing. Caller as kvtier_upgrade_journal(). Errors: -ENOSPC,
 * -EIO and the errors of the commit, with the namespace still version 2.
 */
static int kvtier_upgrade_extents(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	unsigned long c = kvtier_crcs_blocks(st->nr_slots);
	unsigned long start[2], nfree;
	int i, ret;

	/* As much free stays free, as for the journal. */
	nfree = READ_ONCE(tier->slots.nr) - READ_ONCE(tier->slots.used);
	if (nfree < 4 * c) {
		dev_err(&tier->dev, "%s: %lu free data slots: upgrading to format version 3 needs %lu (two CRC sections of %lu, as many left)\n",
			tier->backing.path, nfree, 4 * c, c);
		return -ENOSPC;
	}
	for (i = 0; i < 2; i++) {
		start[i] = kvtier_upgrade_run(tier, c);
		if (start[i] != KVTIER_NO_SLOT)
			continue;
		if (i)
			kvtier_slots_free(&tier->slots, start[0], c);
		dev_err(&tier->dev, "%s: no two free runs of %lu data slots for the CRC sections: cannot upgrade to format version 3\n",
			tier->backing.path, c);
		return -ENOSPC;
	}
	st->version = 3;
	st->crcs_run = true;
	for (i = 0; i < 2; i++)
		st->crcs_block[i] = st->data_start + start[i];
	ret = kvtier_upgrade_commit(tier);
	if (ret) {
		st->version = 2;
		st->crcs_run = false;
		st->crcs_block[0] = 0;
		st->crcs_block[1] = 0;
		/* As the journal's run: the failed superblock may name them. */
		for (i = 0; i < 2; i++)
			kvtier_slots_defer(&tier->slots, start[i], c);
		return ret;
	}
	dev_info(&tier->dev, "%s: upgraded to format version 3: CRC sections of %lu blocks at data slots %lu and %lu\n",
		 tier->backing.path, c, start[0], start[1]);
	return 0;
}

/*
 * Upgrade the attached namespace from version @to - 1 to @to by its next
 * checkpoint, written as @to, when @to needs no new run: version 4 (a
 * version-3 checkpoint reads as a version-4 one without CRC runs, and
 * this one moves every region's CRCs from the CRC section to runs of
 * free data slots; those that find none stay in the section, as version
 * 4 allows) and version 5 (every version-4 size is a whole number of
 * blocks, which version 5 reads alike). Until its superblock is on the
 * media the namespace is the older version, whole: the runs were free in
 * its checkpoint. Caller as kvtier_upgrade_journal(). Errors: those of
 * the commit, with the namespace still at the older version.
 */
static int kvtier_upgrade_by_checkpoint(struct kvtier_tier *tier,
					unsigned int to, const char *what)
{
	struct kvtier_store *st = &tier->store;
	int ret;

	st->version = to;
	ret = kvtier_upgrade_commit(tier);
	if (ret) {
		st->version = to - 1;
		return ret;
	}
	dev_info(&tier->dev, "%s: upgraded to format version %u: %s\n",
		 tier->backing.path, to, what);
	return 0;
}

/*
 * Upgrade the attached namespace to format @version (2 to 5) in place,
 * a version at a time: kvtier_upgrade_journal(), kvtier_upgrade_extents(),
 * kvtier_upgrade_by_checkpoint() (to 4, then 5). Caller holds
 * tier->lock, the tier attached.
 * Returns 0, also when the namespace has that version already; -EINVAL
 * (not 2 to 5), -EROFS (a
 * read-only attach), -EBUSY (the lease was lost), and their errors, with
 * the namespace at the last version it reached.
 */
int kvtier_store_upgrade(struct kvtier_tier *tier, unsigned int version)
{
	struct kvtier_store *st = &tier->store;
	unsigned int noio;
	int ret;

	if (version < 2 || version > KVTIER_FORMAT_VERSION)
		return -EINVAL;
	if (tier->backing.read_only)
		return -EROFS;
	mutex_lock(&st->lock);
	ret = -EBUSY;
	if (kvtier_fenced(tier))
		goto out;
	ret = 0;
	if (st->version >= version)
		goto out;
	/* Slots let go of since the last commit are free only after one. */
	ret = kvtier_commit_locked(tier);
	if (ret)
		goto out;
	noio = memalloc_noio_save();
	if (st->version == 1)
		ret = kvtier_upgrade_journal(tier);
	if (!ret && version >= 3 && st->version == 2)
		ret = kvtier_upgrade_extents(tier);
	if (!ret && version >= 4 && st->version == 3)
		ret = kvtier_upgrade_by_checkpoint(tier, 4,
						   "regions' CRCs in runs of data slots");
	if (!ret && version >= 5 && st->version == 4)
		ret = kvtier_upgrade_by_checkpoint(tier, 5,
						   "regions have sizes in bytes (kvtierfs files)");
	memalloc_noio_restore(noio);
out:
	mutex_unlock(&st->lock);
	return ret;
}

static void kvtier_commit_work(struct work_struct *work)
{
	struct kvtier_tier *tier = container_of(work, struct kvtier_tier,
						store.commit_work);

	kvtier_store_commit(tier);
}

/* A persistent region let go of slots: commit soon so they can be reused. */
void kvtier_store_kick(struct kvtier_tier *tier)
{
	queue_work(kvtier_wq, &tier->store.commit_work);
}

/*
 * The persistent region capacity reclaim takes (kvtier_user_lru_victim():
 * the least recently used unused one, of @owner first, the owner of the
 * region whose write-back asked for room last: one user's write pressure
 * takes another user's durable regions only when the writer has none left
 * to give), unlinked, with the name's user reference passed to the
 * caller; NULL if there is none.
 */
static struct kvtier_region *kvtier_capacity_victim(struct kvtier_tier *tier,
						    kuid_t owner)
{
	struct kvtier_journal_del *del = kvtier_journal_del_new();
	struct kvtier_region *victim;

	spin_lock(&tier->regions_lock);
	victim = kvtier_user_lru_victim(tier, owner);
	if (victim) {
		kvtier_name_unhash(victim);
		kvtier_journal_unlinked(victim, del);
		del = NULL;
	}
	spin_unlock(&tier->regions_lock);
	kfree(del);
	return victim;
}

/*
 * The namespace is full. First commit, which frees the slots persistent
 * regions let go of since the last commit; if that frees nothing, reclaim
 * the least recently used unused persistent region, @owner's first (the
 * owner of the region whose write-back needs the room). The victim is only
 * unlinked until the commit that records it is on the media, and named
 * again if that commit fails: a region destroyed before would be unlinked
 * for good by the first commit that succeeds, and each retry of the writer
 * took the next one (an NVMe-oF path flap emptied a namespace so). Runs on
 * the room work only, never under a page lock. @asked_used is how many
 * slots were in use when the write-back found none free: if fewer are
 * now, something freed slots since (another run, an unlink, a commit) and
 * nothing is destroyed. Returns 0 if slots were freed or can be after one
 * more commit (try again), -ENOSPC if nothing can be freed, or the error
 * of the commit that failed (nothing reclaimed).
 */
static int kvtier_store_make_room(struct kvtier_tier *tier, kuid_t owner,
				  unsigned long asked_used)
{
	struct kvtier_slots *slots = &tier->slots;
	unsigned long used = READ_ONCE(slots->used);
	struct kvtier_region *victim;
	bool orphan = false;
	unsigned int noio;
	int ret;

	if (used < asked_used)
		return 0;
	ret = kvtier_store_commit(tier);
	if (READ_ONCE(slots->used) < used)
		return 0;
	if (ret)
		return ret;

	/*
	 * The victim's records move with the next checkpoint: read them now.
	 * No reclaim under store.lock (a commit's rule).
	 */
	mutex_lock(&tier->store.lock);
	noio = memalloc_noio_save();
	victim = kvtier_capacity_victim(tier, owner);
	ret = victim ? kvtier_pagemap_load_to_unlink(victim) : 0;
	if (ret) {
		/*
		 * Named again before any commit can leave it out; the next
		 * commit is a checkpoint, which drops its deletion record.
		 */
		WRITE_ONCE(tier->store.need_full, true);
		orphan = !kvtier_name_relink(victim);
		if (orphan)
			WRITE_ONCE(victim->map.lost, true);	/* its name is another's */
	}
	memalloc_noio_restore(noio);
	mutex_unlock(&tier->store.lock);
	if (orphan)
		kvtier_region_put_user(victim);	/* destroys it, outside the lock */
	if (ret)
		return ret;
	if (!victim)
		return -ENOSPC;
	atomic64_inc(&tier->store.changes);
	ret = kvtier_store_commit(tier);
	if (ret) {
		/*
		 * Named again, unless a region of that name was created while
		 * it was not (it then replaces the victim, as an unlink and a
		 * create would have).
		 */
		if (!kvtier_name_relink(victim))
			kvtier_region_put_user(victim);
		return ret;
	}
	kvtier_count(tier, KVT_STAT_REGION_RECLAIM, 1);
	dev_info(&tier->dev, "reclaimed persistent region '%s' (%llu bytes on the namespace%s, unused for %lu s) for space\n",
		 victim->name, (u64)atomic_long_read(&victim->nr_slots) << PAGE_SHIFT,
		 READ_ONCE(victim->map.unloaded) ?
		 ", its records damaged: freed at the next attach" : "",
		 (jiffies - READ_ONCE(victim->last_use)) / HZ);
	/* The name's reference: destroys it, deferring its slots... */
	kvtier_region_put_user(victim);
	/* ...which this commit frees (or a later one, if it fails). */
	kvtier_store_commit(tier);
	return 0;
}

static void kvtier_room_work(struct work_struct *work)
{
	struct kvtier_tier *tier = container_of(work, struct kvtier_tier,
						store.room_work);
	struct kvtier_store *st = &tier->store;
	int ret = -ENOSPC;

	if (!READ_ONCE(st->closing))
		ret = kvtier_store_make_room(tier, READ_ONCE(st->room_owner),
					     READ_ONCE(st->room_used));
	WRITE_ONCE(st->room_err, ret);
	/*
	 * Stalled charges look again; with room, the background worker goes
	 * on with whatever it was asked (watermark or shrinker).
	 */
	kvtier_pool_wake(&tier->pool);
	if (!ret)
		queue_work(kvtier_wq, &tier->pool.reclaim_work);
}

/*
 * A write-back found no free slot for a page of a region of @owner: queue
 * the room work. Never waits: write-back calls it with page locks held,
 * and the store's commits must not run under them.
 */
void kvtier_store_need_room(struct kvtier_tier *tier, kuid_t owner)
{
	struct kvtier_store *st = &tier->store;

	WRITE_ONCE(st->room_owner, owner);
	WRITE_ONCE(st->room_used, READ_ONCE(tier->slots.used));
	atomic_inc(&st->room_asked);
	queue_work(kvtier_wq, &st->room_work);
}

/* Taken before a write-back whose -ENOSPC the caller may wait out. */
unsigned int kvtier_store_room_ticket(struct kvtier_tier *tier)
{
	return atomic_read(&tier->store.room_asked);
}

/*
 * A write-back begun at @ticket returned -ENOSPC. If it asked for room
 * (kvtier_store_need_room()), wait for the room work and return what it
 * did: 0 if it freed slots or a retry may find some, -ENOSPC if nothing
 * can be freed, or the error of the commit that failed (nothing was
 * reclaimed). If nobody asked since @ticket, the -ENOSPC was the device's
 * (a thin-provisioned target out of space): -ENOSPC, nothing to wait for.
 * It never queues the work itself: every run may reclaim a region. No
 * page lock may be held.
 */
int kvtier_store_wait_room(struct kvtier_tier *tier, unsigned int ticket)
{
	if (atomic_read(&tier->store.room_asked) == ticket)
		return -ENOSPC;
	flush_work(&tier->store.room_work);
	return READ_ONCE(tier->store.room_err);
}

/*
 * Write back [@first, @last] of @region (kvtier_region_writeback(); with
 * @evict, drop it from the pool), waiting for the room work whenever the
 * namespace was full, until the pages are written or no room can be made
 * (each wait either frees slots or ends in an error). For fsync, DONTNEED,
 * seal and detach. Returns the first error, as kvtier_region_writeback()
 * and kvtier_store_wait_room() do.
 */
int kvtier_store_writeback(struct kvtier_region *region, pgoff_t first,
			   pgoff_t last, bool evict)
{
	pgoff_t pages = READ_ONCE(region->nr_pages);
	unsigned int ticket;
	int ret, err;

	/* An empty file (version 5) has no page; a range may say "to the end". */
	if (first >= pages)
		return 0;
	last = min(last, pages - 1);
	for (;;) {
		ticket = kvtier_store_room_ticket(region->tier);
		ret = kvtier_region_writeback(region, first, last, evict);
		if (ret != -ENOSPC)
			return ret;
		err = kvtier_store_wait_room(region->tier, ticket);
		if (err)
			return err;
	}
}

/* Format @nr_blocks: zero the signature blocks and commit an empty store. */
static int kvtier_store_format(struct kvtier_tier *tier, u64 nr_blocks)
{
	struct kvtier_store *st = &tier->store;
	int ret;

	st->version = READ_ONCE(tier->knobs.format_version);
	/* The last block is the ownership lease's. */
	ret = kvtier_store_geometry(st, nr_blocks - 1);
	if (ret) {
		dev_err(&tier->dev, "%s: too small to format (%llu bytes)\n",
			tier->backing.path, nr_blocks * KVTIER_BLOCK_SIZE);
		return ret;
	}
	st->nr_blocks = nr_blocks;
	st->lease_block = nr_blocks - 1;
	ret = kvtier_store_alloc(tier);
	if (ret)
		return ret;
	generate_random_uuid(st->uuid);
	st->format_time = ktime_get_real_seconds();
	st->generation = 0;
	/* Generation 1 is a checkpoint, to copy 1. */
	st->ckpt_copy = 0;
	st->journal_head = 0;
	st->journal_pos = 0;
	st->need_full = true;
	st->committed_changes = atomic64_read(&st->changes) - 1;

	/* Blocks 0..16: both superblocks and any old signature (btrfs: 16). */
	ret = kvtier_store_zero(tier, 0, min_t(u64, 17, st->data_start));
	if (ret)
		goto err;
	/* Whatever was in the lease block is not a record of this uuid. */
	ret = kvtier_lease_format(tier);
	if (ret)
		goto err;
	/* Generation 1 goes to copy 1; copy 0 stays zero until the next checkpoint. */
	ret = kvtier_store_commit(tier);
	if (ret)
		goto err;
	ret = kvtier_lease_acquire(tier, NULL);
	if (ret)
		goto err;
	dev_info(&tier->dev, "formatted %s: format version %u, %llu data slots of %u bytes (%llu for the journal), uuid %pU\n",
		 tier->backing.path, st->version, st->nr_slots, KVTIER_BLOCK_SIZE,
		 st->journal_blocks, st->uuid);
	return 0;
err:
	kvtier_store_free(tier);
	return ret;
}

static int kvtier_geometry_check(struct kvtier_store *st,
				 const struct kvtier_disk_super *sb)
{
	u64 mb = le64_to_cpu(sb->meta_blocks);
	u64 slots = le64_to_cpu(sb->nr_slots);
	u64 regions = le64_to_cpu(sb->max_regions);
	u64 index, crcs, c0, c1, js, je;
	bool run = le64_to_cpu(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_CRCS_RUN;

	/* CRC sections in runs of data slots: areas as version 2 had them. */
	if (le64_to_cpu(sb->meta_start) != 2 || !slots || !regions ||
	    slots > KVT_SLOT_MASK || regions > (1 << 20) || mb > slots ||
	    kvtier_area_blocks(run ? 2 : le32_to_cpu(sb->version), regions, slots) > mb ||
	    le64_to_cpu(sb->data_start) != 2 + 2 * mb ||
	    le64_to_cpu(sb->data_start) + slots > le64_to_cpu(sb->nr_blocks) ||
	    le64_to_cpu(sb->ckpt_bytes) > mb * KVTIER_BLOCK_SIZE ||
	    le64_to_cpu(sb->ckpt_bytes) < sizeof(struct kvtier_disk_ckpt))
		return -EUCLEAN;
	if (le32_to_cpu(sb->version) == 1 ?
	    sb->journal_start || sb->journal_blocks || sb->journal_head :
	    !le64_to_cpu(sb->journal_blocks) ||
	    le64_to_cpu(sb->journal_blocks) > KVTIER_JOURNAL_MAX_BLOCKS ||
	    slots < KVTIER_MIN_SLOTS + le64_to_cpu(sb->journal_blocks) ||
	    le64_to_cpu(sb->journal_start) > slots - le64_to_cpu(sb->journal_blocks) ||
	    (le64_to_cpu(sb->journal_start) + le64_to_cpu(sb->journal_blocks) != slots &&
	     !(le64_to_cpu(sb->feature_incompat) & KVTIER_FEATURE_INCOMPAT_JOURNAL_RUN)) ||
	    le64_to_cpu(sb->journal_head) >= KVTIER_JOURNAL_POS_MAX)
		return -EUCLEAN;
	/*
	 * Version 3: each area's CRC section at its end, after the index; or
	 * (CRCS_RUN) two runs of data slots, apart from each other and from
	 * the journal, the index having all of its area.
	 */
	crcs = kvtier_crcs_blocks(slots);
	index = mb - crcs;
	c0 = le64_to_cpu(sb->crcs_block[0]) - le64_to_cpu(sb->data_start);
	c1 = le64_to_cpu(sb->crcs_block[1]) - le64_to_cpu(sb->data_start);
	js = le64_to_cpu(sb->journal_start);
	je = js + le64_to_cpu(sb->journal_blocks);
	if (le32_to_cpu(sb->version) < 3 ? sb->crcs_block[0] || sb->crcs_block[1] :
	    !run ? le64_to_cpu(sb->crcs_block[0]) != 2 + index ||
		   le64_to_cpu(sb->crcs_block[1]) != 2 + mb + index ||
		   le64_to_cpu(sb->ckpt_bytes) > index * KVTIER_BLOCK_SIZE :
	    le64_to_cpu(sb->crcs_block[0]) < le64_to_cpu(sb->data_start) ||
	    le64_to_cpu(sb->crcs_block[1]) < le64_to_cpu(sb->data_start) ||
	    c0 > slots - crcs || c1 > slots - crcs ||
	    (c0 < c1 + crcs && c1 < c0 + crcs) ||
	    (c0 < je && js < c0 + crcs) || (c1 < je && js < c1 + crcs))
		return -EUCLEAN;
	memcpy(st->uuid, sb->uuid, sizeof(st->uuid));
	st->format_time = le64_to_cpu(sb->format_time);
	st->nr_blocks = le64_to_cpu(sb->nr_blocks);
	st->meta_start = 2;
	st->meta_blocks = mb;
	st->data_start = le64_to_cpu(sb->data_start);
	st->nr_slots = slots;
	st->max_regions = regions;
	st->generation = le64_to_cpu(sb->generation);
	st->version = le32_to_cpu(sb->version);
	st->journal_start = le64_to_cpu(sb->journal_start);
	st->journal_blocks = le64_to_cpu(sb->journal_blocks);
	st->journal_head = le64_to_cpu(sb->journal_head);
	st->journal_pos = st->journal_head;
	st->crcs_block[0] = le64_to_cpu(sb->crcs_block[0]);
	st->crcs_block[1] = le64_to_cpu(sb->crcs_block[1]);
	st->crcs_run = run;
	st->ckpt_extents = le32_to_cpu(sb->version) >= 3;
	st->need_full = false;
	return 0;
}

/*
 * Whether @rec is a region record this store could hold: -EUCLEAN if it
 * contradicts itself or the geometry. Its pages are checked as they load.
 */
int kvtier_record_check(struct kvtier_tier *tier,
			const struct kvtier_disk_region *rec)
{
	u64 size = le64_to_cpu(rec->size);
	u64 blocks = DIV_ROUND_UP_ULL(size, KVTIER_BLOCK_SIZE);
	char name[KVTIER_NAME_MAX];

	memcpy(name, rec->name, sizeof(name));
	/* Version 5: any size, 0 included (a file); else whole blocks. */
	if (!kvtier_store_file_sizes(&tier->store) &&
	    (!size || size % KVTIER_BLOCK_SIZE))
		return -EUCLEAN;
	if (kvtier_name_valid(name) || blocks > (u64)U32_MAX + 1 ||
	    size > tier->store.nr_slots * KVTIER_BLOCK_SIZE ||
	    le64_to_cpu(rec->nr_pages) > blocks ||
	    le32_to_cpu(rec->mode) & ~0777U ||
	    le32_to_cpu(rec->flags) & ~(KVTIER_DISK_REGION_PINNED |
					KVTIER_DISK_REGION_SEALED))
		return -EUCLEAN;
	return 0;
}

/* Set @r's attributes from @rec (checked). */
void kvtier_record_attrs(struct kvtier_region *r,
			 const struct kvtier_disk_region *rec)
{
	time64_t now = ktime_get_real_seconds(), last;
	u32 flags = le32_to_cpu(rec->flags);

	r->owner = make_kuid(&init_user_ns, le32_to_cpu(rec->owner));
	r->gid = make_kgid(&init_user_ns, le32_to_cpu(rec->group));
	r->mode = le32_to_cpu(rec->mode);
	r->created = le64_to_cpu(rec->created);
	last = min_t(time64_t, le64_to_cpu(rec->last_used), now);
	WRITE_ONCE(r->last_use, jiffies -
		   min_t(u64, now - last, 10ULL * 365 * 86400) * HZ);
	WRITE_ONCE(r->pinned, flags & KVTIER_DISK_REGION_PINNED);
	WRITE_ONCE(r->sealed, flags & KVTIER_DISK_REGION_SEALED);
}

/*
 * A persistent region from @rec (checked), with no pages, published and
 * linked; its only user is the name. @unloaded: its map stays in the
 * checkpoint (the caller says where), and it has no inode until it is
 * loaded (pagemap.c). Errors: -EUCLEAN (the name is taken), -ENOMEM.
 */
struct kvtier_region *kvtier_region_from_record(struct kvtier_tier *tier, bool unloaded,
						const struct kvtier_disk_region *rec)
{
	struct kvtier_region *r;
	struct inode *inode = NULL;
	char name[KVTIER_NAME_MAX];
	int ret;

	memcpy(name, rec->name, sizeof(name));
	r = kvtier_name_get(tier, name);
	if (r) {
		kvtier_region_put_user(r);
		return ERR_PTR(-EUCLEAN);
	}
	if (!unloaded) {
		inode = alloc_anon_inode(kvtier_mnt->mnt_sb);
		if (IS_ERR(inode))
			return ERR_CAST(inode);
	}
	r = kvtier_region_new(tier, inode, le64_to_cpu(rec->size));
	if (inode)
		iput(inode);
	if (IS_ERR(r))
		return r;
	strscpy_pad(r->name, name, sizeof(r->name));
	kvtier_record_attrs(r, rec);
	r->persistent = true;
	/* The only user is the name: this is the creator's reference. */
	ret = kvtier_region_publish(r);
	if (!ret) {
		spin_lock(&tier->regions_lock);
		ret = kvtier_name_hash(r);
		spin_unlock(&tier->regions_lock);
	}
	if (ret) {
		kvtier_region_put_user(r);	/* never linked */
		return ERR_PTR(ret == -EEXIST ? -EUCLEAN : ret);
	}
	if (unloaded) {
		r->map.unloaded = true;
		atomic_long_inc(&tier->store.nr_unloaded);
	}
	return r;
}

/* Slots claimed under one hold of the allocator's lock, at most. */
#define KVT_CLAIM_RUN	4096

/*
 * Claim the slots of @nr page records of @r, which leaves them on the
 * namespace (its map unloaded, pagemap.c); *@prev is the index of the
 * region's last page so far (-1 before its first): indexes must increase.
 * Errors: -EUCLEAN (a record contradicts the region or another), -ENOMEM.
 */
static int kvtier_claim_pages(struct kvtier_tier *tier, struct kvtier_region *r,
			      const struct kvtier_disk_page *pages, u64 nr, s64 *prev)
{
	u64 i, j, k;
	int ret;

	for (k = 0; k < nr; k++) {
		if (!kvtier_record_index_next(r, le32_to_cpu(pages[k].index), prev))
			return -EUCLEAN;
	}
	for (i = 0; i < nr; i = j) {
		u64 slot = le64_to_cpu(pages[i].slot);

		/* A run of consecutive slots is claimed at once. */
		for (j = i + 1; j < nr && j - i < KVT_CLAIM_RUN &&
		     le64_to_cpu(pages[j].slot) == slot + (j - i); j++)
			;
		ret = kvtier_slots_claim(&tier->slots, slot, j - i);
		if (ret)
			return ret;
		/* Those the region names go with it (pagemap.c loads them). */
		atomic_long_add(j - i, &r->nr_slots);
		cond_resched();
	}
	return 0;
}

/*
 * Claim the slots of @nr extent records of @r (version 3), as
 * kvtier_claim_pages() does page records; *@pages counts the pages they
 * map.
 */
static int kvtier_claim_extents(struct kvtier_tier *tier, struct kvtier_region *r,
				const struct kvtier_disk_extent *ext, u64 nr,
				s64 *prev, u64 *pages)
{
	u64 k;
	int ret;

	for (k = 0; k < nr; k++) {
		u64 slot = le64_to_cpu(ext[k].slot);
		u32 index = le32_to_cpu(ext[k].index);
		u64 len = le32_to_cpu(ext[k].len);

		if (!len || !kvtier_record_index_next(r, index, prev) ||
		    index + len > r->nr_pages || slot + len < slot)
			return -EUCLEAN;
		*prev = index + len - 1;
		ret = kvtier_slots_claim(&tier->slots, slot, len);
		if (ret)
			return ret;
		atomic_long_add(len, &r->nr_slots);
		*pages += len;
		cond_resched();
	}
	return 0;
}

/*
 * Claim the slots of @nr CRC run records of @r (version 4) and add them
 * to its runs, which have room: each must start the stream where the
 * ones before end.
 */
static int kvtier_claim_crc_runs(struct kvtier_tier *tier, struct kvtier_region *r,
				 const struct kvtier_disk_extent *run, u64 nr)
{
	u64 k;
	int ret;

	for (k = 0; k < nr; k++) {
		u64 slot = le64_to_cpu(run[k].slot);
		u32 len = le32_to_cpu(run[k].len);

		if (!len || le32_to_cpu(run[k].index) != r->map.runs->blocks ||
		    slot + len < slot || slot + len > tier->slots.nr)
			return -EUCLEAN;
		ret = kvtier_slots_claim(&tier->slots, slot, len);
		if (ret)
			return ret;
		kvtier_crc_runs_add(r->map.runs, slot, len, false);
	}
	return 0;
}

/*
 * A checkpoint being read, front to back, through the checkpoint buffer:
 * its head (header and region records, and the page records that share
 * their last block: bytes [0, @head_end)) stays in @head; the rest passes
 * through @win a window at a time, @len bytes of it from byte @base.
 * @crc is the CRC of the bytes read so far, in order.
 */
struct kvt_ckpt_in {
	struct kvtier_tier *tier;
	u64 area;		/* first block of the area */
	u64 bytes;		/* of the checkpoint */
	u8 *win;		/* KVT_CKPT_CHUNK bytes */
	u8 *head;		/* @head_end bytes */
	u64 head_end;
	u64 base;
	size_t len;
	u32 crc;
};

/* Read the next window, from byte @base + @len; -EUCLEAN past the end. */
static int kvt_ckpt_next_window(struct kvt_ckpt_in *in)
{
	u64 blocks_end = round_up(in->bytes, KVTIER_BLOCK_SIZE);
	size_t n;
	int ret;

	in->base += in->len;
	in->len = 0;
	if (in->base >= in->bytes)
		return -EUCLEAN;
	n = min_t(u64, KVT_CKPT_CHUNK, blocks_end - in->base);
	ret = kvtier_io_meta(in->tier, REQ_OP_READ,
			     in->area + in->base / KVTIER_BLOCK_SIZE, in->win,
			     n / KVTIER_BLOCK_SIZE, 0);
	if (ret)
		return ret;
	in->len = min_t(u64, n, in->bytes - in->base);
	in->crc = kvtier_crc32c_cat(in->crc, kvtier_crc32c(in->win, in->len), in->len);
	cond_resched();
	return 0;
}

/*
 * The page records from byte @off (past the head, at or after the last
 * one asked for), as many as the window holds up to byte @end: *@got
 * bytes at the returned pointer, good until the next call. Page records
 * never cross a window: 16 bytes each, from a 16-byte boundary, and a
 * window is whole blocks.
 */
static const void *kvt_ckpt_pages(struct kvt_ckpt_in *in, u64 off, u64 end,
				  size_t *got)
{
	int ret;

	while (off >= in->base + in->len) {
		ret = kvt_ckpt_next_window(in);
		if (ret)
			return ERR_PTR(ret);
	}
	*got = min(end, in->base + in->len) - off;
	return in->win + (off - in->base);
}

/*
 * Load the regions of the checkpoint in @in, whose head is read and
 * checked: region records from the head, page records from the head's
 * tail and then the windows, in order. *@i gets the region record it
 * stopped at. Errors: -EUCLEAN (the records contradict each other, the
 * geometry or the header), -ENOMEM, -EIO.
 */
static int kvt_ckpt_load_regions(struct kvtier_tier *tier, struct kvt_ckpt_in *in,
				 u64 *i)
{
	const struct kvtier_disk_ckpt *hdr = (void *)in->head;
	const struct kvtier_disk_region *recs = (void *)(hdr + 1);
	bool extents = kvtier_store_extents(&tier->store);
	bool crc_runs = kvtier_store_crc_runs(&tier->store);
	u64 nr_regions = le64_to_cpu(hdr->nr_regions);
	u64 nr_pages = le64_to_cpu(hdr->nr_pages);
	u64 nr_extents = le64_to_cpu(hdr->nr_extents);
	u64 nr_runs = crc_runs ? le64_to_cpu(hdr->nr_crc_runs) : 0;
	u64 off = sizeof(*hdr) + nr_regions * sizeof(*recs), crcs_off = 0;
	/* Page and extent records are both 16 bytes. */
	const size_t psz = sizeof(struct kvtier_disk_page);
	int ret;

	for (*i = 0; *i < nr_regions; (*i)++) {
		u64 pages = le64_to_cpu(recs[*i].nr_pages), end, ext_end, mapped = 0;
		u64 n = extents ? le64_to_cpu(recs[*i].nr_extents) : pages;
		u64 runs = crc_runs ? le32_to_cpu(recs[*i].nr_crc_runs) : 0;
		struct kvtier_region *r;
		const void *p;
		s64 prev = -1;
		size_t got;

		if (pages > nr_pages || (extents && (n > nr_extents || n > pages)) ||
		    runs > nr_runs)
			return -EUCLEAN;
		nr_pages -= pages;
		if (extents)
			nr_extents -= n;
		nr_runs -= runs;
		ret = kvtier_record_check(tier, &recs[*i]);
		if (ret)
			return ret;
		/*
		 * Left where they are until the region is used (pagemap.c);
		 * unloaded from the first claim, so that a failure part-way
		 * forgets what it claimed (kvtier_region_destroy()).
		 */
		r = kvtier_region_from_record(tier, true, &recs[*i]);
		if (IS_ERR(r))
			return PTR_ERR(r);
		r->map.off = off;
		r->map.count = n + runs;
		r->map.crc = ~0U;	/* the CRC of nothing */
		r->map.pages = pages;
		r->map.crcs_crc = le32_to_cpu(recs[*i].crcs_crc);
		if (runs) {
			r->map.runs = kvtier_crc_runs_new(&tier->store, NULL, runs);
			if (!r->map.runs)
				return -ENOMEM;
		}
		/* The extent (or page) records, then the CRC run records. */
		ext_end = off + n * psz;
		for (end = ext_end + runs * psz; off < end; off += got) {
			u64 stop = off < ext_end ? ext_end : end;

			if (off < in->head_end) {
				p = in->head + off;
				got = min(stop, in->head_end) - off;
			} else {
				p = kvt_ckpt_pages(in, off, stop, &got);
				if (IS_ERR(p))
					return PTR_ERR(p);
			}
			r->map.crc = kvtier_crc32c_cat(r->map.crc, kvtier_crc32c(p, got), got);
			if (off >= ext_end)
				ret = kvtier_claim_crc_runs(tier, r, p, got / psz);
			else if (extents)
				ret = kvtier_claim_extents(tier, r, p, got / psz, &prev,
							   &mapped);
			else
				ret = kvtier_claim_pages(tier, r, p, got / psz, &prev);
			if (ret)
				return ret;
		}
		if (extents && mapped != pages)
			return -EUCLEAN;
		/* Runs hold no block past the stream's. */
		if (r->map.runs && r->map.runs->blocks >
		    DIV_ROUND_UP(pages * sizeof(__le32), KVTIER_BLOCK_SIZE))
			return -EUCLEAN;
		r->map.crcs_off = crcs_off;
		crcs_off += kvtier_crcs_tail(pages, r->map.runs);
		r->map.valid = true;
	}
	return nr_pages || (extents && nr_extents) || nr_runs ? -EUCLEAN : 0;
}

/*
 * Read and check the checkpoint that superblock copy @copy (@sb) names,
 * load its regions and replay the journal after it. The checkpoint is
 * read twice through the checkpoint buffer: once for its CRC, so nothing
 * in it is used before the whole is checked, then to load it, checking
 * that it read the same.
 */
static int kvtier_store_load(struct kvtier_tier *tier,
			     const struct kvtier_disk_super *sb, int copy)
{
	struct kvtier_store *st = &tier->store;
	u64 bytes = le64_to_cpu(sb->ckpt_bytes);
	struct kvt_ckpt_in in = {
		.tier = tier,
		.area = st->meta_start + copy * st->meta_blocks,
		.bytes = bytes,
		.crc = ~0U,	/* the CRC of nothing */
	};
	struct kvtier_disk_ckpt hdr;
	u64 nr_regions, nr_pages, nr_recs, nr_runs, i = 0, used;
	int ret;

	ret = kvtier_store_alloc(tier);
	if (ret)
		return ret;
	in.win = kvtier_ckpt_buf(st, KVT_CKPT_CHUNK);
	ret = -ENOMEM;
	if (!in.win)
		goto nomem;
	/* Pass 1: the CRC of the whole, a window at a time. */
	while (in.base + in.len < bytes) {
		ret = kvt_ckpt_next_window(&in);
		if (ret)
			goto err;
		if (!in.base)	/* bytes >= sizeof(hdr): the geometry check */
			memcpy(&hdr, in.win, sizeof(hdr));
	}
	nr_regions = le64_to_cpu(hdr.nr_regions);
	nr_pages = le64_to_cpu(hdr.nr_pages);
	/*
	 * Version 3: extent records follow the regions (version 4: and CRC
	 * run records); else page records.
	 */
	nr_recs = kvtier_store_extents(st) ? le64_to_cpu(hdr.nr_extents) : nr_pages;
	nr_runs = kvtier_store_crc_runs(st) ? le64_to_cpu(hdr.nr_crc_runs) : 0;
	ret = -EUCLEAN;
	if (in.crc != le32_to_cpu(sb->ckpt_crc) ||
	    le64_to_cpu(hdr.magic) != KVTIER_CKPT_MAGIC ||
	    le64_to_cpu(hdr.generation) != st->generation ||
	    nr_regions > st->max_regions || nr_pages > st->nr_slots ||
	    nr_recs > nr_pages || nr_runs > st->nr_slots ||
	    bytes != sizeof(hdr) + nr_regions * sizeof(struct kvtier_disk_region) +
		     (nr_recs + nr_runs) * sizeof(struct kvtier_disk_page))
		goto damaged;

	/* Pass 2: the head whole, then the windows after it. */
	in.head_end = round_up(sizeof(hdr) + nr_regions * sizeof(struct kvtier_disk_region),
			       KVTIER_BLOCK_SIZE);
	in.win = kvtier_ckpt_buf(st, KVT_CKPT_CHUNK + in.head_end);
	ret = -ENOMEM;
	if (!in.win)
		goto nomem;
	in.head = in.win + KVT_CKPT_CHUNK;
	used = min(bytes, in.head_end);
	ret = kvtier_io_meta(tier, REQ_OP_READ, in.area, in.head,
			     DIV_ROUND_UP(used, KVTIER_BLOCK_SIZE), 0);
	if (ret)
		goto err;
	in.crc = ~0U;
	in.base = in.head_end;
	in.len = 0;
	if (memcmp(in.head, &hdr, sizeof(hdr)))
		goto reread;
	ret = kvt_ckpt_load_regions(tier, &in, &i);
	if (ret) {
		if (ret == -EUCLEAN)
			dev_err(&tier->dev, "%s: checkpoint of generation %llu names inconsistent regions or pages (record %llu)\n",
				tier->backing.path, st->generation, i);
		goto err_drop;
	}
	/* Every window was read (the page records end the checkpoint). */
	if (in.base + in.len != bytes && bytes > in.head_end)
		goto reread_drop;
	if (kvtier_crc32c_cat(kvtier_crc32c(in.head, used), in.crc, bytes - used) !=
	    le32_to_cpu(sb->ckpt_crc))
		goto reread_drop;
	dev_info(&tier->dev, "%s: generation %llu, %llu persistent regions, %llu pages on the namespace (checkpoint of %llu KiB, %llu %s records)\n",
		 tier->backing.path, st->generation, nr_regions, nr_pages,
		 DIV_ROUND_UP(bytes, 1024), nr_recs,
		 kvtier_store_extents(st) ? "extent" : "page");
	st->ckpt_copy = copy;
	ret = kvtier_journal_replay(tier);
	kvtier_users_lru_sort(tier);
	/*
	 * A read-only attach shares the namespace with a writer, whose
	 * checkpoints overwrite the area: read every map now, as it is.
	 */
	if (!ret && tier->backing.read_only)
		ret = kvtier_pagemap_load_all(tier);
	if (ret)
		goto err_drop;
	st->committed_changes = atomic64_read(&st->changes);
	return 0;

nomem:
	dev_err(&tier->dev, "%s: no memory to read the checkpoint of generation %llu\n",
		tier->backing.path, st->generation);
	goto err;
damaged:
	dev_err(&tier->dev, "%s: checkpoint of generation %llu is damaged\n",
		tier->backing.path, st->generation);
	goto err;
reread_drop:
	kvtier_store_drop_regions(tier);
reread:
	ret = -EUCLEAN;
	dev_err(&tier->dev, "%s: checkpoint of generation %llu read back differently the second time\n",
		tier->backing.path, st->generation);
	goto err;
err_drop:
	kvtier_store_drop_regions(tier);
err:
	kvtier_store_free(tier);
	return ret;
}

/*
 * Check @sb's (superblock copy @copy) geometry against the device and
 * load what it names. A
 * read-write attach takes the lease first; @lease_found (PAGE_SIZE) gets
 * the lease block as it was (kvtier_lease_acquire()).
 */
static int kvtier_store_use(struct kvtier_tier *tier,
			    const struct kvtier_disk_super *sb, int copy,
			    u64 nr_blocks, void *lease_found)
{
	struct kvtier_store *st = &tier->store;
	const char *path = tier->backing.path;
	int ret;

	if (kvtier_geometry_check(st, sb)) {
		dev_err(&tier->dev, "%s: kvtier superblock geometry of generation %llu is inconsistent\n",
			path, le64_to_cpu(sb->generation));
		return -EUCLEAN;
	}
	if (st->nr_blocks > nr_blocks) {
		dev_err(&tier->dev, "%s: namespace has %llu blocks but was formatted with %llu\n",
			path, nr_blocks, st->nr_blocks);
		return -EUCLEAN;
	}
	st->lease_block = 0;
	if (le64_to_cpu(sb->feature_ro_compat) & KVTIER_FEATURE_RO_COMPAT_LEASE) {
		st->lease_block = le64_to_cpu(sb->lease_block);
		if (st->lease_block < st->data_start + st->nr_slots ||
		    st->lease_block >= st->nr_blocks) {
			dev_err(&tier->dev, "%s: ownership lease block %llu is outside the namespace's free tail\n",
				path, st->lease_block);
			return -EUCLEAN;
		}
	}
	/* Before anything is loaded: a refused attach costs one read. */
	if (!tier->backing.read_only) {
		ret = kvtier_lease_acquire(tier, lease_found);
		if (ret)
			return ret;
	}
	ret = kvtier_store_load(tier, sb, copy);
	/*
	 * Refused: put the lease block back now, while the store still names
	 * the block and uuid this copy gave. A fallback to the other copy may
	 * name another block (a damaged field): the one written is restored.
	 */
	if (ret)
		kvtier_lease_release(tier, lease_found);
	return ret;
}

/*
 * Open the store of the namespace being attached: format it if @format or
 * if it is blank, load it if it is a kvtier namespace. Caller holds
 * tier->lock; the block device is open. Nothing is written unless the
 * namespace is formatted. Errors: -EMEDIUMTYPE (foreign data), -EUCLEAN
 * (damaged kvtier metadata, or the namespace shrank), -EOPNOTSUPP (a newer
 * format), -ENOSPC (too small), -EIO, -ENOMEM.
 */
int kvtier_store_open(struct kvtier_tier *tier, bool format)
{
	struct kvtier_store *st = &tier->store;
	const char *path = tier->backing.path;
	u64 nr_blocks = tier->backing.nr_sectors >> (PAGE_SHIFT - SECTOR_SHIFT);
	enum kvtier_sb_state state[2];
	struct kvtier_disk_super *sb[2];
	const char *foreign;
	u8 *buf;
	int ret, best = -1, i;

	BUILD_BUG_ON(PAGE_SIZE != KVTIER_BLOCK_SIZE);
	BUILD_BUG_ON(sizeof(struct kvtier_disk_super) != 256);
	BUILD_BUG_ON(sizeof(struct kvtier_disk_ckpt) != 64);
	BUILD_BUG_ON(sizeof(struct kvtier_disk_region) != 128);
	BUILD_BUG_ON(sizeof(struct kvtier_disk_page) != 16);
	st->dropping = false;
	/*
	 * No work (unload, room, background write-back) runs on a store
	 * being loaded: a replay kicks the unload work, and a region it finds
	 * damaged is to be unlinked, which commits. kvtier_store_opened()
	 * lets them run.
	 */
	WRITE_ONCE(st->closing, true);
	/* Background write-back was cancelled at the last close: no pause. */
	tier->pool.clean_pause = 0;
	st->bad_copy = -1;
	st->gen_min = 0;
	st->lease_block = 0;
	st->lease_held = false;
	st->lease_lost = false;
	if (tier->backing.read_only && (format || nr_blocks < 17)) {
		dev_err(&tier->dev, "%s: read-only attach cannot format\n", path);
		return -EROFS;
	}
	if (format)
		return kvtier_store_format(tier, nr_blocks);
	if (nr_blocks < 17)
		return kvtier_store_format(tier, nr_blocks);	/* -ENOSPC */

	buf = kvmalloc(4 * KVTIER_BLOCK_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	ret = kvtier_io_meta(tier, REQ_OP_READ, 0, buf, 2, 0);
	if (!ret)
		ret = kvtier_io_meta(tier, REQ_OP_READ, 16,
				     buf + 2 * KVTIER_BLOCK_SIZE, 1, 0);
	if (ret)
		goto out;
	for (i = 0; i < 2; i++) {
		sb[i] = (void *)(buf + i * KVTIER_BLOCK_SIZE);
		state[i] = kvtier_sb_check(sb[i]);
		/* Unknown read-only-compatible features: fine to read. */
		if (state[i] == KVT_SB_READ_ONLY)
			state[i] = tier->backing.read_only ? KVT_SB_VALID :
				   KVT_SB_NEWER;
		if (state[i] == KVT_SB_VALID &&
		    (best < 0 || le64_to_cpu(sb[i]->generation) >
				 le64_to_cpu(sb[best]->generation)))
			best = i;
	}
	foreign = state[0] == KVT_SB_NONE ?
		kvtier_foreign_signature(buf, buf + 2 * KVTIER_BLOCK_SIZE) : NULL;

	ret = -EOPNOTSUPP;
	if (state[0] == KVT_SB_NEWER || state[1] == KVT_SB_NEWER) {
		struct kvtier_disk_super *n = sb[state[0] == KVT_SB_NEWER ? 0 : 1];
		bool ro = !(le64_to_cpu(n->feature_incompat) &
			    ~KVTIER_FEATURE_INCOMPAT_SUPP) &&
			  le32_to_cpu(n->version) == KVTIER_FORMAT_VERSION;

		dev_err(&tier->dev, "%s: kvtier format version %u, features incompat %#llx ro_compat %#llx, is newer than this module's (version %u, features %#llx %#llx); refusing to attach%s\n",
			path, le32_to_cpu(n->version),
			le64_to_cpu(n->feature_incompat),
			le64_to_cpu(n->feature_ro_compat), KVTIER_FORMAT_VERSION,
			KVTIER_FEATURE_INCOMPAT_SUPP, KVTIER_FEATURE_RO_COMPAT_SUPP,
			ro ? " read-write (read_only=1 attaches it read-only)" : "");
		goto out;
	}
	ret = -EMEDIUMTYPE;
	if (foreign) {
		dev_err(&tier->dev, "%s: not a kvtier namespace (%s signature); refusing to attach (write the path to 'format' to destroy it and format)\n",
			path, foreign);
		goto out;
	}
	if (best < 0) {
		if (state[0] == KVT_SB_DAMAGED || state[1] == KVT_SB_DAMAGED) {
			ret = -EUCLEAN;
			dev_err(&tier->dev, "%s: kvtier superblock damaged (both copies fail their checksum); refusing to attach (write the path to 'format' to start over)\n",
				path);
			goto out;
		}
		/* Blank: blocks 0, 1 and 16 (where btrfs puts its own) zero. */
		if (memchr_inv(buf, 0, 3 * KVTIER_BLOCK_SIZE)) {
			dev_err(&tier->dev, "%s: not a kvtier namespace (unrecognised data); refusing to attach (write the path to 'format' to destroy it and format)\n",
				path);
			goto out;
		}
		ret = -EROFS;
		if (tier->backing.read_only) {
			dev_err(&tier->dev, "%s: blank namespace: nothing to attach read-only\n",
				path);
			goto out;
		}
		dev_info(&tier->dev, "%s: blank namespace, formatting\n", path);
		ret = kvtier_store_format(tier, nr_blocks);
		goto out;
	}
	if (state[!best] == KVT_SB_DAMAGED) {
		dev_warn(&tier->dev, "%s: superblock copy %d is damaged; using copy %d (generation %llu)\n",
			 path, !best, best, le64_to_cpu(sb[best]->generation));
		st->bad_copy = !best;
	}
	ret = kvtier_store_use(tier, sb[best], best, nr_blocks,
			       buf + 3 * KVTIER_BLOCK_SIZE);
	/*
	 * The newest checkpoint is damaged but the other copy is valid: a
	 * commit retried after an error may have been cut while rewriting the
	 * area a superblock that did reach the media names. The older
	 * generation's area is intact; pages whose slots were reused since
	 * fail their CRC and read as errors, never as wrong bytes.
	 */
	if (ret == -EUCLEAN && state[!best] == KVT_SB_VALID) {
		dev_warn(&tier->dev, "%s: falling back to superblock copy %d (generation %llu)\n",
			 path, !best, le64_to_cpu(sb[!best]->generation));
		ret = kvtier_store_use(tier, sb[!best], !best, nr_blocks,
				       buf + 3 * KVTIER_BLOCK_SIZE);
		st->bad_copy = best;
		/*
		 * The journal may hold transactions that follow the newer
		 * copy's checkpoint, generation + 1 to + journal_blocks at
		 * most: the next commit starts past them.
		 */
		if (!ret && st->journal_blocks)
			st->gen_min = le64_to_cpu(sb[best]->generation) +
				      st->journal_blocks + 1;
	}
	/* A damaged copy is rewritten by the next commit: a checkpoint. */
	if (!ret && st->bad_copy >= 0)
		st->need_full = true;
	if (ret == -EUCLEAN)
		dev_err(&tier->dev, "%s: kvtier metadata damaged; refusing to attach (write the path to 'format' to start over)\n",
			path);
out:
	kvfree(buf);
	return ret;
}

/*
 * The store kvtier_store_open() opened is attached: its work may run. The
 * unload work looks at once for closed maps to unload and for regions an
 * attach found damaged, which it unlinks. Caller holds tier->lock.
 */
void kvtier_store_opened(struct kvtier_tier *tier)
{
	WRITE_ONCE(tier->store.closing, false);
	kvtier_pagemap_kick(tier);
}

/*
 * Drop every persistent region from memory without touching the namespace
 * (its slots are freed in memory only). Caller holds tier->lock; no file
 * of the tier is open.
 */
void kvtier_store_drop_regions(struct kvtier_tier *tier)
{
	struct kvtier_region *r;

	tier->store.dropping = true;
	for (;;) {
		spin_lock(&tier->regions_lock);
		list_for_each_entry(r, &tier->regions, node) {
			if (r->linked && r->persistent)
				break;
		}
		if (list_entry_is_head(r, &tier->regions, node)) {
			spin_unlock(&tier->regions_lock);
			break;
		}
		kvtier_name_unhash(r);
		spin_unlock(&tier->regions_lock);
		kvtier_region_put_user(r);
	}
	cancel_work_sync(&tier->store.commit_work);
	cancel_work_sync(&tier->store.room_work);
	cancel_delayed_work_sync(&tier->store.unload_work);
	/*
	 * Only these were forgotten. A fallback attach to the other
	 * superblock copy goes on with this store: from now on a destroyed
	 * persistent region's slots wait for the commit that unlinks it.
	 */
	WRITE_ONCE(tier->store.dropping, false);
}

/*
 * Write back the dirty pages of the @n regions of @v, each let go of after
 * its turn; with @evict, drop them all from the pool too. Returns the
 * first error.
 */
static int kvtier_writeback_each(struct kvtier_region **v, unsigned long n,
				 bool evict)
{
	unsigned long i;
	int ret = 0, err;

	for (i = 0; i < n; i++) {
		err = kvtier_store_writeback(v[i], 0, v[i]->nr_pages - 1, evict);
		if (err && !ret)
			ret = err;
		kvtier_region_put(v[i]);
	}
	return ret;
}

/* kvtier_writeback_each() of every persistent region. */
static int kvtier_store_writeback_all(struct kvtier_tier *tier, bool evict)
{
	struct kvtier_region **v;
	unsigned int n;
	int ret, err;

	ret = kvtier_persistent_get(tier, &v, &n, KVT_GET_ALL, NULL);
	err = kvtier_writeback_each(v, n, evict);
	kfree(v);
	return ret ? ret : err;
}

/*
 * syncfs() and unmount of a kvtierfs mount: every persistent region's
 * dirty pages reach the namespace, and a commit makes them durable.
 * Returns the first write-back or commit error.
 */
int kvtier_store_sync(struct kvtier_tier *tier)
{
	struct kvtier_region **v = NULL, *r;
	unsigned long n = 0, room = 0, i;
	int ret, err;

	/*
	 * Only regions with pages in the pool (dirty ones, and those whose
	 * write-back is in flight, are among them), each held until its
	 * turn: a held region is no victim for capacity reclaim.
	 */
	for (;;) {
		spin_lock(&tier->regions_lock);
		n = 0;
		list_for_each_entry(r, &tier->regions, node) {
			if (!r->persistent || !atomic_long_read(&r->nr_resident))
				continue;
			if (n < room && kvtier_region_tryget(r))
				v[n] = r;
			else if (n < room)
				continue;
			n++;
		}
		spin_unlock(&tier->regions_lock);
		if (n <= room)
			break;
		for (i = 0; i < room; i++)
			kvtier_region_put(v[i]);
		kvfree(v);
		room = n + n / 8 + 8;
		v = kvmalloc_array(room, sizeof(*v), GFP_KERNEL);
		if (!v)
			return -ENOMEM;
	}
	ret = kvtier_writeback_each(v, n, false);
	kvfree(v);
	err = kvtier_store_commit(tier);
	return ret ? ret : err;
}

/*
 * Detach: write back every persistent region, commit, and forget them.
 * Caller holds tier->lock; no file of the tier is open. Returns the first
 * write-back or commit error; the store is closed either way.
 */
int kvtier_store_close(struct kvtier_tier *tier)
{
	int ret, err;

	ret = kvtier_store_writeback_all(tier, true);
	/*
	 * No room, unload or background write-back work from here on: a run
	 * behind the final commit would commit again, or write, after the
	 * lease is given back.
	 */
	WRITE_ONCE(tier->store.closing, true);
	cancel_work_sync(&tier->store.room_work);
	cancel_delayed_work_sync(&tier->pool.clean_work);
	cancel_delayed_work_sync(&tier->store.unload_work);
	/* Left with an empty journal: the next attach replays nothing. */
	if (tier->store.journal_blocks &&
	    tier->store.journal_pos != tier->store.journal_head) {
		WRITE_ONCE(tier->store.need_full, true);
		atomic64_inc(&tier->store.changes);
	}
	err = kvtier_store_commit(tier);
	if (err && !ret)
		ret = err;
	if (ret)
		dev_err(&tier->dev, "%s: detaching after error %d: persistent regions are as of generation %llu\n",
			tier->backing.path, ret, tier->store.generation);
	kvtier_lease_release(tier, NULL);
	kvtier_store_drop_regions(tier);
	kvtier_store_free(tier);
	return ret;
}

/*
 * What the tier's metadata costs in kernel memory now (struct
 * kvtier_meta_mem). A page xarray has a leaf node for each 64 pages it
 * maps at most, and a CRC chunk covers 62 pages, so 31 leaves stand for
 * each 32 chunks, less one for each extent (a group held in the node
 * above: mapext.c); one node in 63 above them is the interior of a dense
 * tree. No lock: gauges read with READ_ONCE.
 */
void kvtier_meta_mem(struct kvtier_tier *tier, struct kvtier_meta_mem *m)
{
	u64 chunks = max(atomic_long_read(&tier->crc_chunks), 0L);
	u64 extents = max(atomic_long_read(&tier->xa_extents), 0L);
	u64 leaves = chunks - chunks / 32;
	struct kvtier_store *st = &tier->store;
	unsigned long nr = READ_ONCE(tier->nr_regions);
	unsigned long unloaded = max(atomic_long_read(&st->nr_unloaded), 0L);

	/* A region whose map is unloaded has no inode. */
	m->regions = (u64)nr * sizeof(struct kvtier_region) +
		     (u64)(nr > unloaded ? nr - unloaded : 0) * sizeof(struct inode) +
		     max(atomic_long_read(&st->crc_runs_bytes), 0L);
	m->page_maps = (leaves - min(leaves, extents) + DIV_ROUND_UP(chunks, 63)) *
		       sizeof(struct xa_node);
	m->crcs = chunks * kvtier_crcs_chunk_bytes();
	m->allocator = (u64)(kvtier_slots_extents(&tier->slots) +
			     READ_ONCE(st->releasing.nr)) *
		       sizeof(struct kvtier_extent);
	m->buffer = READ_ONCE(st->ckpt_size) +
		    (READ_ONCE(st->map_buf) ? KVT_CKPT_CHUNK : 0);
}

void kvtier_store_init(struct kvtier_store *st)
{
	mutex_init(&st->lock);
	atomic64_set(&st->changes, 0);
	INIT_LIST_HEAD(&st->dels);
	INIT_LIST_HEAD(&st->retired_runs);
	INIT_WORK(&st->commit_work, kvtier_commit_work);
	INIT_WORK(&st->room_work, kvtier_room_work);
	kvtier_pagemap_init(st);
	atomic_set(&st->room_asked, 0);
	init_waitqueue_head(&st->freeze_wait);
	kvtier_lease_init(st);
}
