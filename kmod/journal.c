// SPDX-License-Identifier: GPL-2.0
/*
 * The metadata journal of a version-2 store (INCOMPAT_JOURNAL): a commit
 * writes what changed since the last commit, not every record. The format
 * is in include/uapi/linux/kvtier_format.h (struct kvtier_disk_txn) and
 * Documentation/kvtier-format.rst.
 *
 * What changed is kept where it happens, so a commit never scans what did
 * not:
 *   - a page whose slot changed carries KVT_XA_CHANGED in its region's
 *     xarray (set with the slot under the xa_lock, writeback.c), and its
 *     region's jr_changed is set;
 *   - a created region, or one whose flags changed, has jr_changed set;
 *   - an unlinked persistent region leaves its name in store.dels, queued
 *     in the regions_lock section that unlinks it.
 *
 * A commit (kvtier_journal_commit, under store.lock) takes the changed
 * regions and the deleted names in one regions_lock section, after the
 * slot allocator's deferred slots were frozen: a slot frozen then was let
 * go of by a write-back that completed, or by a region unlinked, before
 * it, so the transaction records the page's new slot or the deletion, and
 * the frozen slots are free once it is on the media. It builds the
 * transaction (deletions first, then each changed region with its changed
 * pages, clearing their marks) and writes it with a cache flush before it
 * and FUA, so the data it names (written back before) and the
 * transaction are durable together, and a torn one fails its CRC.
 *
 * Anything that goes wrong after the marks were cleared (the transaction
 * did not fit, or its write failed) leaves store.need_full set: the next
 * commit writes a full checkpoint, which records everything. A
 * transaction that does not fit the journal's free space is not written;
 * the caller writes a checkpoint instead, which empties the journal.
 *
 * Attach (kvtier_journal_replay) loads the checkpoint, then applies the
 * transactions from journal_head while each is intact, names this
 * namespace and carries the next generation. A transaction never wraps:
 * one that would not fit before the journal's end starts at block 0 of
 * the next virtual lap, where the reader looks when the block after the
 * last transaction is not the next one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/xarray.h>

#include <linux/kvtier_format.h>

#include "kvtier.h"

/*
 * Journal blocks for a namespace of @nr_slots data slots, at format: 1 MiB
 * to 256 MiB, 1/256 of the data.
 */
u64 kvtier_journal_blocks(u64 nr_slots)
{
	return clamp_t(u64, nr_slots / 256, 256, KVTIER_JOURNAL_MAX_BLOCKS);
}

/*
 * A record for the unlink of a persistent region, allocated before the
 * regions_lock section that unlinks it. NULL when there is no memory: the
 * unlink then asks for a checkpoint (kvtier_journal_unlinked()).
 */
struct kvtier_journal_del *kvtier_journal_del_new(void)
{
	return kmalloc(sizeof(struct kvtier_journal_del), GFP_KERNEL);
}

/*
 * @r, persistent, was just unlinked. Caller holds regions_lock, in the
 * section that cleared r->linked. Takes @del (may be NULL), which is
 * freed if the store has no journal.
 */
void kvtier_journal_unlinked(struct kvtier_region *r,
			     struct kvtier_journal_del *del)
{
	struct kvtier_store *st = &r->tier->store;

	lockdep_assert_held(&r->tier->regions_lock);
	if (!READ_ONCE(st->journal_blocks)) {
		kfree(del);
		return;
	}
	if (!del) {
		WRITE_ONCE(st->need_full, true);
		return;
	}
	strscpy_pad(del->name, r->name, sizeof(del->name));
	list_add_tail(&del->node, &st->dels);
}

void kvtier_journal_dels_free(struct list_head *dels)
{
	struct kvtier_journal_del *d, *tmp;

	list_for_each_entry_safe(d, tmp, dels, node) {
		list_del(&d->node);
		kfree(d);
	}
}

/* @r's page @index got a new slot. Caller holds @r's xa_lock. */
void kvtier_journal_page_changed(struct kvtier_region *r, pgoff_t index)
{
	if (!r->persistent || !READ_ONCE(r->tier->store.journal_blocks))
		return;
	if (!xa_get_mark(&r->pages, index, KVT_XA_CHANGED)) {
		__xa_set_mark(&r->pages, index, KVT_XA_CHANGED);
		atomic_long_inc(&r->jr_pages);
	}
	atomic_set(&r->jr_changed, 1);
}

/* @r was created, or a flag of it changed: the next commit records it. */
void kvtier_journal_region_changed(struct kvtier_region *r)
{
	atomic_set(&r->jr_changed, 1);
}

/*
 * The page records of @r's changed pages at @pages (room for @room), their
 * marks cleared: how many, or -EOVERFLOW (some marks are cleared then;
 * the caller writes a checkpoint). Caller holds store.lock.
 */
static long kvtier_journal_pages(struct kvtier_region *r,
				 struct kvtier_disk_page *pages, u64 room)
{
	XA_STATE(xas, &r->pages, 0);
	unsigned long group = ULONG_MAX;
	unsigned int batch = 0;
	u64 n = 0;
	void *entry;

	xas_lock(&xas);
	xas_for_each_marked(&xas, entry, r->nr_pages - 1, KVT_XA_CHANGED) {
		unsigned long slot;
		u32 crc = 0;

		if (xas_retry(&xas, entry))
			continue;
		/* Marked: a page's own entry, never an extent. */
		slot = xa_is_value(entry) ? kvt_shadow_slot(entry, xas.xa_index) :
			((struct kvtier_page *)entry)->slot;
		xas_clear_mark(&xas, KVT_XA_CHANGED);
		atomic_long_dec(&r->jr_pages);
		/* A mark is set only with a slot; a page keeps its slot. */
		if (WARN_ON_ONCE(slot == KVTIER_NO_SLOT))
			continue;
		if (n == room) {
			xas_unlock(&xas);
			return -EOVERFLOW;
		}
		kvtier_crcs_get(r, xas.xa_index, &crc);
		pages[n].slot = cpu_to_le64(slot);
		pages[n].index = cpu_to_le32(xas.xa_index);
		pages[n].crc = cpu_to_le32(crc);
		n++;
		/* Recorded: the group may be an extent now. */
		kvtier_mapext_walked(r, &xas, &group);
		if (++batch % 4096 == 0) {
			xas_pause(&xas);
			xas_unlock(&xas);
			cond_resched();
			xas_lock(&xas);
		}
	}
	kvtier_mapext_walked(r, NULL, &group);
	xas_unlock(&xas);
	return n;
}

/*
 * Build the transaction of generation @gen at @buf (@size bytes): the
 * deletions @dels, then the regions @v[0..@n) with their changed pages.
 * Returns its bytes, or -EOVERFLOW.
 */
static long kvtier_journal_fill(struct kvtier_tier *tier, u64 gen,
				struct list_head *dels,
				struct kvtier_region **v, unsigned int n,
				void *buf, size_t size)
{
	struct kvtier_disk_txn *hdr = buf;
	struct kvtier_disk_region *rec = (void *)(hdr + 1);
	struct kvtier_disk_page *pages;
	struct kvtier_journal_del *d;
	u64 nr_pages = 0, nr_regions = 0, room;
	unsigned int i;

	list_for_each_entry(d, dels, node)
		nr_regions++;
	nr_regions += n;
	pages = (void *)(rec + nr_regions);
	if ((u8 *)pages - (u8 *)buf > size)
		return -EOVERFLOW;
	room = (size - ((u8 *)pages - (u8 *)buf)) / sizeof(*pages);
	list_for_each_entry(d, dels, node) {
		memset(rec, 0, sizeof(*rec));
		memcpy(rec->name, d->name, sizeof(rec->name));
		rec->flags = cpu_to_le32(KVTIER_DISK_REGION_DELETED);
		rec++;
	}
	for (i = 0; i < n; i++, rec++) {
		long got;

		kvtier_region_record(v[i], rec);
		got = kvtier_journal_pages(v[i], pages + nr_pages,
					   room - nr_pages);
		if (got < 0)
			return got;
		rec->nr_pages = cpu_to_le64(got);
		nr_pages += got;
	}
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = cpu_to_le64(KVTIER_TXN_MAGIC);
	hdr->seq = cpu_to_le64(gen);
	memcpy(hdr->uuid, tier->store.uuid, sizeof(hdr->uuid));
	hdr->nr_regions = cpu_to_le32(nr_regions);
	hdr->nr_pages = cpu_to_le32(nr_pages);
	return (u8 *)(pages + nr_pages) - (u8 *)hdr;
}

/*
 * Where a transaction of @nb blocks written after virtual block @pos
 * starts: @pos, or block 0 of the next lap if it would not fit before
 * the journal's end.
 */
static u64 kvtier_journal_start(const struct kvtier_store *st, u64 pos, u64 nb)
{
	if (pos % st->journal_blocks + nb > st->journal_blocks)
		return round_up(pos, st->journal_blocks);
	return pos;
}

/* Whether @nb blocks fit the journal after what it holds since its head. */
static bool kvtier_journal_fits(const struct kvtier_store *st, u64 nb)
{
	u64 start = kvtier_journal_start(st, st->journal_pos, nb);

	return nb <= st->journal_blocks &&
	       start + nb - st->journal_head <= st->journal_blocks &&
	       start + nb < KVTIER_JOURNAL_POS_MAX;
}

/*
 * Commit generation @gen as a transaction. Returns 0; -E2BIG when it does
 * not fit the journal (the caller writes a checkpoint: nothing was
 * written, but marks may be cleared); or the error that failed it, with
 * store.need_full set. Caller holds store.lock, in a memalloc_noio scope,
 * after freezing the deferred slots.
 */
int kvtier_journal_commit(struct kvtier_tier *tier, u64 gen)
{
	struct kvtier_store *st = &tier->store;
	struct kvtier_disk_txn *hdr;
	struct kvtier_region **v;
	struct kvtier_journal_del *d;
	unsigned int i, n, nr_dels = 0;
	LIST_HEAD(dels);
	u64 pages = 0, start, nb;
	size_t size;
	long bytes;
	int ret;

	lockdep_assert_held(&st->lock);
	ret = kvtier_persistent_get(tier, &v, &n, KVT_GET_TXN, &dels);
	if (ret)
		goto fail;
	/* An unlink found no memory for its record: only a checkpoint will do. */
	ret = -E2BIG;
	if (READ_ONCE(st->need_full))
		goto out;
	list_for_each_entry(d, &dels, node)
		nr_dels++;
	/*
	 * The pages marked now, and room for some marked meanwhile: more
	 * than that fails the fill, and a checkpoint records them.
	 */
	for (i = 0; i < n; i++)
		pages += atomic_long_read(&v[i]->jr_pages);
	pages += pages / 8 + 64;
	size = sizeof(*hdr) + (u64)(n + nr_dels) * sizeof(struct kvtier_disk_region) +
		pages * sizeof(struct kvtier_disk_page);
	if (!kvtier_journal_fits(st, DIV_ROUND_UP(size, KVTIER_BLOCK_SIZE)))
		goto out;
	ret = -ENOMEM;
	hdr = kvtier_ckpt_buf(st, round_up(size, KVTIER_BLOCK_SIZE));
	if (!hdr)
		goto out;
	bytes = kvtier_journal_fill(tier, gen, &dels, v, n, hdr,
				    round_up(size, KVTIER_BLOCK_SIZE));
	/* Pages written back since the count: more than it allowed for. */
	ret = bytes == -EOVERFLOW ? -E2BIG : bytes;
	if (bytes < 0)
		goto out;
	nb = DIV_ROUND_UP(bytes, KVTIER_BLOCK_SIZE);
	start = kvtier_journal_start(st, st->journal_pos, nb);
	memset((u8 *)hdr + bytes, 0, nb * KVTIER_BLOCK_SIZE - bytes);
	hdr->nr_blocks = cpu_to_le32(nb);
	hdr->pos = cpu_to_le64(start);
	hdr->bytes = cpu_to_le32(bytes);
	hdr->crc = cpu_to_le32(kvtier_crc32c(hdr, bytes));
	ret = kvtier_io_meta(tier, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA,
			     st->data_start + st->journal_start +
			     start % st->journal_blocks, hdr, nb, 0);
	if (!ret) {
		st->journal_pos = start + nb;
		kvtier_count(tier, KVT_STAT_JOURNAL_COMMIT, 1);
	}
out:
	for (i = 0; i < n; i++)
		kvtier_region_put(v[i]);
	kfree(v);
	kvtier_journal_dels_free(&dels);
fail:
	/* The changes it took are recorded nowhere now but in memory. */
	if (ret)
		WRITE_ONCE(st->need_full, true);
	return ret;
}

/*
 * Apply a deletion at attach: forget the region of @rec's name, freeing
 * its slots in memory (store.dropping is set). A name that is not there
 * was created and unlinked between two commits.
 */
static int kvtier_replay_delete(struct kvtier_tier *tier,
				const struct kvtier_disk_region *rec)
{
	char name[KVTIER_NAME_MAX];
	struct kvtier_region *r;
	bool was;
	int ret;

	memcpy(name, rec->name, sizeof(name));
	if (kvtier_name_valid(name) || rec->size || rec->nr_pages ||
	    le32_to_cpu(rec->flags) != KVTIER_DISK_REGION_DELETED)
		return -EUCLEAN;
	r = kvtier_name_get(tier, name);
	if (!r)
		return 0;
	/*
	 * Its slots are named by its records: read them to free them, its
	 * CRCs damaged or not (a later transaction may reuse them).
	 */
	ret = kvtier_pagemap_load_replay(r);
	if (ret) {
		kvtier_region_put_user(r);
		return ret;
	}
	spin_lock(&tier->regions_lock);
	was = kvtier_name_unhash(r);
	spin_unlock(&tier->regions_lock);
	if (was)
		kvtier_region_put_user(r);	/* the name's */
	kvtier_region_put_user(r);		/* ours: destroys it */
	return 0;
}

/*
 * Apply one changed page to @r at attach: the slot it names replaces the
 * page's old one (freed in memory), with its CRC.
 */
static int kvtier_replay_page(struct kvtier_tier *tier, struct kvtier_region *r,
			      const struct kvtier_disk_page *p)
{
	u64 slot = le64_to_cpu(p->slot);
	u32 index = le32_to_cpu(p->index);
	unsigned long old = KVTIER_NO_SLOT;
	void *entry;
	int ret;

	if (index >= r->nr_pages || slot >= tier->slots.nr)
		return -EUCLEAN;
	entry = xa_load(&r->pages, index);
	if (entry)
		old = kvt_shadow_slot(entry, index);
	if (old != slot) {
		ret = kvtier_slots_claim(&tier->slots, slot, 1);
		if (ret)
			return ret;
		ret = kvtier_crcs_reserve(r, index, GFP_KERNEL);
		if (!ret)
			ret = kvtier_mapext_split(r, index, GFP_KERNEL);
		if (!ret) {
			/* Split and stored under one lock: never over an extent. */
			xa_lock(&r->pages);
			ret = kvtier_mapext_split_locked(r, index);
			if (!ret)
				ret = xa_err(__xa_store(&r->pages, index,
							kvt_mk_shadow(slot, 0),
							GFP_KERNEL));
			if (!ret)
				kvtier_mapext_make_locked(r, index);
			xa_unlock(&r->pages);
		}
		if (ret) {
			kvtier_slots_free(&tier->slots, slot, 1);
			return ret;
		}
		if (old == KVTIER_NO_SLOT)
			atomic_long_inc(&r->nr_slots);
		else
			kvtier_slots_free(&tier->slots, old, 1);
	}
	kvtier_crcs_set(r, index, le32_to_cpu(p->crc), false);
	return 0;
}

/* Apply a created or changed region and its @rec->nr_pages @pages. */
static int kvtier_replay_set(struct kvtier_tier *tier,
			     const struct kvtier_disk_region *rec,
			     const struct kvtier_disk_page *pages)
{
	u64 nr = le64_to_cpu(rec->nr_pages), i;
	char name[KVTIER_NAME_MAX];
	struct kvtier_region *r;
	s64 prev = -1;
	int ret;

	ret = kvtier_record_check(tier, rec);
	if (ret)
		return ret;
	memcpy(name, rec->name, sizeof(name));
	r = kvtier_name_get(tier, name);
	if (r) {
		u64 size = le64_to_cpu(rec->size);

		/* Version 5: a file grew; a size never shrinks. */
		ret = -EUCLEAN;
		if (size != kvtier_region_size(r) &&
		    (!kvtier_store_file_sizes(&tier->store) ||
		     size < kvtier_region_size(r) ||
		     kvtier_region_set_size(r, size, true)))
			goto out;
		kvtier_record_attrs(r, rec);
		/* Its records in the checkpoint are what the pages change. */
		ret = nr ? kvtier_pagemap_load_replay(r) : 0;
		if (ret)
			goto out;
	} else {
		r = kvtier_region_from_record(tier, false, rec);
		if (IS_ERR(r))
			return PTR_ERR(r);
		refcount_inc(&r->users);	/* as kvtier_name_get() */
	}
	for (i = 0; i < nr; i++) {
		ret = -EUCLEAN;
		if ((s64)le32_to_cpu(pages[i].index) <= prev)
			goto out;
		prev = le32_to_cpu(pages[i].index);
		ret = kvtier_replay_page(tier, r, &pages[i]);
		if (ret)
			goto out;
		atomic_inc(&r->map.changes);
		if (i % 4096 == 4095)
			cond_resched();
	}
	ret = 0;
out:
	kvtier_region_put_user(r);
	return ret;
}

/*
 * Check transaction @hdr (its first block) read at virtual block @pos as
 * the one of generation @seq: its bytes, or 0 if it is not that one.
 */
static u32 kvtier_txn_header_ok(const struct kvtier_store *st,
				const struct kvtier_disk_txn *hdr, u64 pos,
				u64 seq)
{
	u32 bytes = le32_to_cpu(hdr->bytes);
	u32 nb = le32_to_cpu(hdr->nr_blocks);

	if (le64_to_cpu(hdr->magic) != KVTIER_TXN_MAGIC ||
	    memcmp(hdr->uuid, st->uuid, sizeof(hdr->uuid)) ||
	    le64_to_cpu(hdr->seq) != seq || le64_to_cpu(hdr->pos) != pos ||
	    bytes < sizeof(*hdr) || nb != DIV_ROUND_UP(bytes, KVTIER_BLOCK_SIZE) ||
	    pos % st->journal_blocks + nb > st->journal_blocks || hdr->reserved)
		return 0;
	return bytes;
}

/*
 * Read the transaction of generation @seq at virtual block @pos into the
 * checkpoint buffer: its bytes (0: it is not there, or torn), or a
 * negative errno (the read failed, or no memory).
 */
static long kvtier_txn_read(struct kvtier_tier *tier, u64 pos, u64 seq,
			    struct kvtier_disk_txn **out)
{
	struct kvtier_store *st = &tier->store;
	u64 block = st->data_start + st->journal_start + pos % st->journal_blocks;
	struct kvtier_disk_txn *hdr;
	u32 bytes, nb, crc;
	int ret;

	hdr = kvtier_ckpt_buf(st, KVTIER_BLOCK_SIZE);
	if (!hdr)
		return -ENOMEM;
	ret = kvtier_io_meta(tier, REQ_OP_READ, block, hdr, 1, 0);
	if (ret)
		return ret;
	bytes = kvtier_txn_header_ok(st, hdr, pos, seq);
	if (!bytes)
		return 0;
	nb = DIV_ROUND_UP(bytes, KVTIER_BLOCK_SIZE);
	if (nb > 1) {
		hdr = kvtier_ckpt_buf(st, (size_t)nb * KVTIER_BLOCK_SIZE);
		if (!hdr)
			return -ENOMEM;
		ret = kvtier_io_meta(tier, REQ_OP_READ, block, hdr, nb, 0);
		if (ret)
			return ret;
		if (!kvtier_txn_header_ok(st, hdr, pos, seq))
			return 0;
	}
	crc = le32_to_cpu(hdr->crc);
	hdr->crc = 0;
	if (kvtier_crc32c(hdr, bytes) != crc)
		return 0;	/* torn: the commit never completed */
	*out = hdr;
	return bytes;
}

/* Apply transaction @hdr (@bytes, intact). */
static int kvtier_txn_apply(struct kvtier_tier *tier,
			    const struct kvtier_disk_txn *hdr, u32 bytes)
{
	u32 nr_regions = le32_to_cpu(hdr->nr_regions);
	u32 nr_pages = le32_to_cpu(hdr->nr_pages);
	const struct kvtier_disk_region *rec = (const void *)(hdr + 1);
	const struct kvtier_disk_page *pages = (const void *)(rec + nr_regions);
	u64 done = 0, i;
	bool sets = false;
	int ret;

	if (bytes != sizeof(*hdr) + (u64)nr_regions * sizeof(*rec) +
		     (u64)nr_pages * sizeof(*pages))
		return -EUCLEAN;
	for (i = 0; i < nr_regions; i++) {
		u64 n = le64_to_cpu(rec[i].nr_pages);

		if (le32_to_cpu(rec[i].flags) & KVTIER_DISK_REGION_DELETED) {
			/* Deletions come first. */
			ret = sets ? -EUCLEAN : kvtier_replay_delete(tier, &rec[i]);
		} else {
			sets = true;
			ret = n > nr_pages - done ? -EUCLEAN :
				kvtier_replay_set(tier, &rec[i], pages + done);
			done += n;
		}
		if (ret)
			return ret;
	}
	if (done != nr_pages)
		return -EUCLEAN;
	spin_lock(&tier->regions_lock);
	ret = kvtier_nr_persistent(tier) > tier->store.max_regions ? -EUCLEAN : 0;
	spin_unlock(&tier->regions_lock);
	return ret;
}

/*
 * After the checkpoint is loaded: apply the journal's transactions from
 * journal_head. Sets the generation to the last one applied and the
 * position of the next. Errors: -EUCLEAN (an intact transaction that
 * contradicts the checkpoint or itself), -EIO, -ENOMEM. Caller holds
 * tier->lock, attaching; nothing else uses the store.
 */
int kvtier_journal_replay(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	u64 pos = st->journal_head, applied = 0;
	struct kvtier_disk_txn *hdr = NULL;
	long bytes;
	int ret = 0;

	if (!st->journal_blocks)
		return 0;
	WRITE_ONCE(st->dropping, true);
	for (;;) {
		u64 seq = st->generation + 1;

		u64 at = pos;

		bytes = kvtier_txn_read(tier, at, seq, &hdr);
		/* Not here: the writer may have skipped to the next lap. */
		if (!bytes && at % st->journal_blocks) {
			at = round_up(at, st->journal_blocks);
			bytes = kvtier_txn_read(tier, at, seq, &hdr);
		}
		if (bytes <= 0) {
			ret = bytes;
			break;
		}
		ret = kvtier_txn_apply(tier, hdr, bytes);
		if (ret) {
			if (ret == -EUCLEAN)
				dev_err(&tier->dev, "%s: journal transaction %llu names inconsistent regions or pages\n",
					tier->backing.path, seq);
			break;
		}
		st->generation = seq;
		pos = at + le32_to_cpu(hdr->nr_blocks);
		applied++;
		cond_resched();
	}
	WRITE_ONCE(st->dropping, false);
	if (ret)
		return ret;
	/* The next transaction overwrites whatever follows the last one. */
	st->journal_pos = pos;
	if (applied)
		dev_info(&tier->dev, "%s: replayed %llu journal transactions, generation %llu\n",
			 tier->backing.path, applied, st->generation);
	return 0;
}
