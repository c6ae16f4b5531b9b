// SPDX-License-Identifier: GPL-2.0
/*
 * A closed persistent region's page map, left on the namespace.
 *
 * Every persistent page costs memory while its region's map is loaded: an
 * xarray entry for its slot and a CRC (about 16 bytes). A region nobody
 * has open needs neither, as long as the checkpoint on the media holds
 * exactly its page records: then @pages and @crcs are emptied ("unloaded"),
 * its inode (the address_space of its mappings) is let go too, and only
 * the place of the records is kept (struct kvtier_region_map),
 * and the map is read back from there when the region is next opened,
 * unlinked, or changed by the journal's replay. So the kernel memory of a
 * tier follows the regions in use, not what the namespace stores.
 *
 * Attach leaves every region of the checkpoint unloaded (store.c claims
 * their slots as it streams the records). A region is unloaded again
 * when its last file closes, or its last page leaves the pool after that,
 * if no page got a new slot since the checkpoint took its records; a
 * region changed since is unloaded by the checkpoint after (the journal's
 * transactions only hold what changed, so its map is whole in memory
 * only until then). A checkpoint copies an unloaded region's records
 * from the area the newest superblock names into the one it writes
 * (store.c), checking their CRC.
 *
 * Locking: @map's fields are under store.lock, which also keeps the
 * checkpoint area they point into from being rewritten. Unloading sets
 * @map.unloaded in a regions_lock section that finds the name the only
 * user; an opener takes its user reference under regions_lock, then reads
 * @map.unloaded (acquire) and, if it is set, loads under store.lock. So a
 * region is never unloaded under a file, and a file never sees a region
 * that is not loaded. Loading publishes @map.unloaded = false with release
 * after the entries are in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include <linux/kvtier_format.h>

#include "kvtier.h"

/* How long kicks gather before the unload work runs: 100 ms. */
#define KVT_UNLOAD_DELAY	(HZ / 10)

/*
 * Records of one kind read front to back from the namespace through @buf
 * (@cap bytes, whole blocks), from byte @off to @end of what starts at
 * block @block, with the CRC of what was handed out. A record never
 * crosses a block: records are 16 or 4 bytes, at a multiple of their size.
 * With @win (a checkpoint's copy), each read fills @buf up to @limit
 * bytes from @block, and @win says what @buf holds, so that the next
 * regions' records, which follow, are mostly read already. With @runs
 * (version 4's CRC runs) block b of the stream is where they put it,
 * not at @block + b.
 */
struct kvt_map_in {
	struct kvtier_tier *tier;
	const struct kvtier_crc_runs *runs;
	u64 block;
	u64 off;
	u64 end;
	u8 *buf;
	size_t cap;
	u8 *p;			/* the next @avail bytes read */
	size_t avail;
	u32 crc;
	struct kvtier_map_win *win;
	u64 limit;
};

/*
 * The next bytes, at most @max (reading them if none are left): *@got
 * bytes at the returned pointer, good until the next read. @off < @end.
 */
static const void *kvt_map_in_next(struct kvt_map_in *in, size_t max, size_t *got)
{
	const void *p;
	int ret;

	if (!in->avail) {
		u64 block = in->off / KVTIER_BLOCK_SIZE;
		struct kvtier_map_win *w = in->win;
		u64 nb;

		if (w && w->nr && block >= w->first && block < w->first + w->nr) {
			block = w->first;
			nb = w->nr;
		} else {
			u64 at = in->block + block, left = U64_MAX;

			if (in->runs) {
				at = kvtier_crc_runs_slot(in->runs, block, &left);
				if (at == KVTIER_NO_SLOT)
					return ERR_PTR(-EUCLEAN);
				at += in->tier->store.data_start;
			}
			nb = min_t(u64, min_t(u64, in->cap / KVTIER_BLOCK_SIZE, left),
				   DIV_ROUND_UP(w ? in->limit : in->end,
						KVTIER_BLOCK_SIZE) - block);
			if (w)
				w->nr = 0;	/* @buf is being overwritten */
			ret = kvtier_io_meta(in->tier, REQ_OP_READ, at, in->buf, nb, 0);
			if (ret)
				return ERR_PTR(ret);
			if (w) {
				w->first = block;
				w->nr = nb;
			}
			cond_resched();
		}
		in->p = in->buf + (in->off - block * KVTIER_BLOCK_SIZE);
		in->avail = min(in->end, (block + nb) * KVTIER_BLOCK_SIZE) - in->off;
	}
	*got = min(max, in->avail);
	in->crc = kvtier_crc32c_cat(in->crc, kvtier_crc32c(in->p, *got), *got);
	p = in->p;
	in->p += *got;
	in->avail -= *got;
	in->off += *got;
	return p;
}

/* The map buffer (KVT_CKPT_CHUNK bytes), allocated on first use. */
static void *kvtier_map_buf(struct kvtier_store *st)
{
	if (!st->map_buf)
		st->map_buf = kvmalloc(KVT_CKPT_CHUNK, GFP_NOIO | __GFP_NOWARN);
	return st->map_buf;
}

/* @r's records in the area the newest superblock names, as a stream. */
static void kvt_map_in_records(struct kvt_map_in *in, struct kvtier_region *r,
			       void *buf, size_t cap)
{
	struct kvtier_store *st = &r->tier->store;

	*in = (struct kvt_map_in) {
		.tier = r->tier,
		.block = st->meta_start + (u64)st->ckpt_copy * st->meta_blocks,
		.off = r->map.off,
		/* Page and extent records are both 16 bytes. */
		.end = r->map.off + r->map.count * sizeof(struct kvtier_disk_page),
		.buf = buf,
		.cap = cap,
		.crc = ~0U,	/* the CRC of nothing */
	};
}

/*
 * Version 3: @r's CRCs as two streams through halves of @buf: in[0]
 * what its CRC runs hold (version 4), in[1] the rest, in the CRC section
 * of that area.
 */
static void kvt_map_in_crcs(struct kvt_map_in in[2], struct kvtier_region *r,
			    void *buf, size_t cap)
{
	struct kvtier_store *st = &r->tier->store;
	u64 tail = kvtier_crcs_tail(r->map.pages, r->map.runs);

	in[0] = (struct kvt_map_in) {
		.tier = r->tier,
		.runs = r->map.runs,
		.end = r->map.pages * sizeof(__le32) - tail,
		.buf = buf,
		.cap = cap / 2,
		.crc = ~0U,
	};
	in[1] = (struct kvt_map_in) {
		.tier = r->tier,
		.block = st->crcs_block[st->ckpt_copy],
		.off = r->map.crcs_off,
		.end = r->map.crcs_off + tail,
		.buf = buf + cap / 2,
		.cap = cap / 2,
		.crc = ~0U,
	};
}

/* The next of @in's CRCs (kvt_map_in_crcs()), as kvt_map_in_next(). */
static const void *kvt_map_in_next_crc(struct kvt_map_in in[2], size_t max,
				       size_t *got)
{
	return kvt_map_in_next(in[0].off < in[0].end ? &in[0] : &in[1], max, got);
}

/* Version 1 and 2: the page records, a window at a time. */
static int kvtier_pagemap_walk_pages(struct kvtier_region *r, struct kvt_map_in *in,
				     int (*fn)(struct kvtier_region *r, void *arg,
					       const struct kvtier_disk_page *p, size_t n),
				     void *arg)
{
	const void *p;
	size_t got;
	int ret;

	while (in->off < in->end) {
		p = kvt_map_in_next(in, SIZE_MAX, &got);
		if (IS_ERR(p))
			return PTR_ERR(p);
		ret = fn(r, arg, p, got / sizeof(struct kvtier_disk_page));
		if (ret)
			return ret;
	}
	return in->crc == r->map.crc ? 0 : -EUCLEAN;
}

/*
 * Version 3: the extent records through the first quarter of the buffer,
 * the CRCs through the second, and page records made of them in the
 * second half, passed to @fn as it fills.
 */
static int kvtier_pagemap_walk_extents(struct kvtier_region *r, struct kvt_map_in *ext,
				       int (*fn)(struct kvtier_region *r, void *arg,
						 const struct kvtier_disk_page *p, size_t n),
				       void *arg)
{
	struct kvtier_store *st = &r->tier->store;
	struct kvtier_disk_page *out = st->map_buf + KVT_CKPT_CHUNK / 2;
	const size_t room = KVT_CKPT_CHUNK / 2 / sizeof(*out);
	u64 ext_end = r->map.off + kvtier_map_extent_records(&r->map) *
			       sizeof(struct kvtier_disk_extent);
	struct kvt_map_in crcs[2];
	size_t n = 0, got, j;
	int ret;

	kvt_map_in_crcs(crcs, r, st->map_buf + KVT_CKPT_CHUNK / 4, KVT_CKPT_CHUNK / 4);
	while (ext->off < ext_end) {
		const struct kvtier_disk_extent *e;
		u64 slot, index, len, i;

		e = kvt_map_in_next(ext, sizeof(*e), &got);
		if (IS_ERR(e))
			return PTR_ERR(e);
		slot = le64_to_cpu(e->slot);
		index = le32_to_cpu(e->index);
		len = le32_to_cpu(e->len);
		/* Checked at attach; the CRCs say if they changed since. */
		if (!len || index + len > r->nr_pages || slot + len < slot ||
		    slot + len > st->nr_slots)
			return -EUCLEAN;
		for (i = 0; i < len; i += got / sizeof(__le32)) {
			const __le32 *c;

			if (crcs[0].off >= crcs[0].end && crcs[1].off >= crcs[1].end)
				return -EUCLEAN;
			c = kvt_map_in_next_crc(crcs, (len - i) * sizeof(__le32), &got);
			if (IS_ERR(c))
				return PTR_ERR(c);
			for (j = 0; j < got / sizeof(__le32); j++) {
				out[n].slot = cpu_to_le64(slot + i + j);
				out[n].index = cpu_to_le32(index + i + j);
				out[n].crc = c[j];
				if (++n < room)
					continue;
				ret = fn(r, arg, out, n);
				if (ret)
					return ret;
				n = 0;
			}
		}
	}
	if (n) {
		ret = fn(r, arg, out, n);
		if (ret)
			return ret;
	}
	/* The CRC run records: in memory since attach; their CRC is the map's. */
	while (ext->off < ext->end) {
		const void *p = kvt_map_in_next(ext, SIZE_MAX, &got);

		if (IS_ERR(p))
			return PTR_ERR(p);
	}
	if (crcs[0].off != crcs[0].end || crcs[1].off != crcs[1].end ||
	    ext->crc != r->map.crc)
		return -EUCLEAN;
	return kvtier_crc32c_cat(crcs[0].crc, crcs[1].crc,
				 crcs[1].end - r->map.crcs_off) == r->map.crcs_crc ?
	       0 : -EBADMSG;
}

/*
 * Pass @r's pages, as the checkpoint on the media has them, to @fn as
 * page records, a window at a time; then check their CRC. Caller holds
 * store.lock (or the store is not yet visible). Errors: what @fn returns,
 * -EIO, -ENOMEM, -EUCLEAN (the records are not what the checkpoint wrote;
 * @fn saw them already: it must undo), -EBADMSG (version 3: the extent
 * records are, but not the CRCs in them, which are wrong).
 */
int kvtier_pagemap_walk(struct kvtier_region *r,
			int (*fn)(struct kvtier_region *r, void *arg,
				  const struct kvtier_disk_page *p, size_t n),
			void *arg)
{
	struct kvtier_store *st = &r->tier->store;
	struct kvt_map_in in;
	u8 *buf = kvtier_map_buf(st);

	BUILD_BUG_ON(sizeof(struct kvtier_disk_extent) != sizeof(struct kvtier_disk_page));
	if (!buf)
		return -ENOMEM;
	if (!st->ckpt_extents) {
		kvt_map_in_records(&in, r, buf, KVT_CKPT_CHUNK);
		return kvtier_pagemap_walk_pages(r, &in, fn, arg);
	}
	kvt_map_in_records(&in, r, buf, KVT_CKPT_CHUNK / 4);
	return kvtier_pagemap_walk_extents(r, &in, fn, arg);
}

/*
 * Pass @r's map, as the checkpoint on the media has it, to @fn as it is
 * there, a window at a time: its records (@crcs false; version 4: its
 * extent records, not its CRC run records), then, version 3, its CRCs in
 * the CRC section (@crcs true; version 4: those its runs do not hold);
 * then check their CRCs (version 4: the CRCs only when the section holds
 * all). For a checkpoint, which copies a closed region's map as it is
 * (version 3's runs are already whole) and passes the same @win[2],
 * zeroed at its start, for every region, so that the map buffer's two
 * halves are read once for many regions. Caller holds store.lock. Errors: what @fn returns, -EIO,
 * -ENOMEM, -EUCLEAN (@fn saw them already).
 */
int kvtier_pagemap_copy(struct kvtier_region *r, struct kvtier_map_win *win,
			int (*fn)(void *arg, bool crcs, const void *p, size_t n),
			void *arg)
{
	struct kvtier_store *st = &r->tier->store;
	struct kvt_map_in in[3], *sec = &in[2];
	u8 *buf = kvtier_map_buf(st);
	const void *p;
	u64 ext_end;
	size_t got;
	int ret;

	if (!buf)
		return -ENOMEM;
	kvt_map_in_records(&in[0], r, buf, KVT_CKPT_CHUNK / 2);
	kvt_map_in_crcs(&in[1], r, buf + KVT_CKPT_CHUNK / 2, KVT_CKPT_CHUNK / 2);
	/* Reads stop at the end of the index, and of the CRC section. */
	in[0].limit = kvtier_index_blocks(st, st->ckpt_copy) * KVTIER_BLOCK_SIZE;
	sec->limit = st->nr_slots * sizeof(__le32);
	in[0].win = &win[0];
	sec->win = &win[1];
	ext_end = r->map.off + kvtier_map_extent_records(&r->map) *
			       sizeof(struct kvtier_disk_extent);
	/* The CRC run records are read for the map's CRC only. */
	while (in[0].off < in[0].end) {
		bool ext = in[0].off < ext_end;

		p = kvt_map_in_next(&in[0], ext ? ext_end - in[0].off : SIZE_MAX, &got);
		if (IS_ERR(p))
			return PTR_ERR(p);
		ret = ext ? fn(arg, false, p, got) : 0;
		if (ret)
			return ret;
	}
	while (st->ckpt_extents && sec->off < sec->end) {
		p = kvt_map_in_next(sec, SIZE_MAX, &got);
		if (IS_ERR(p))
			return PTR_ERR(p);
		ret = fn(arg, true, p, got);
		if (ret)
			return ret;
	}
	if (in[0].crc != r->map.crc)
		return -EUCLEAN;
	/* Version 4's runs are checked when the region is read. */
	if (st->ckpt_extents && sec->end - r->map.crcs_off == r->map.pages * sizeof(__le32) &&
	    sec->crc != r->map.crcs_crc)
		return -EUCLEAN;
	return 0;
}

/*
 * Empty @r's page map and CRCs, and let its inode go (no file or mapping
 * uses it): the records on the media hold the map.
 */
static void kvtier_pagemap_drop(struct kvtier_region *r)
{
	kvtier_mapext_forget(r);
	xa_destroy(&r->pages);
	kvtier_crcs_destroy(r);
	if (r->inode)
		iput(r->inode);
	r->inode = NULL;
}

/* kvtier_pagemap_walk() for a load: *@arg is the index before @p's. */
static int kvtier_pagemap_fill(struct kvtier_region *r, void *arg,
			       const struct kvtier_disk_page *p, size_t n)
{
	s64 *prev = arg;
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		u64 slot = le64_to_cpu(p[i].slot);
		u32 index = le32_to_cpu(p[i].index);

		if (!kvtier_record_index_next(r, index, prev) ||
		    slot >= r->tier->slots.nr)
			return -EUCLEAN;
		ret = kvtier_crcs_reserve(r, index, GFP_KERNEL);
		if (!ret)
			ret = xa_err(xa_store(&r->pages, index, kvt_mk_shadow(slot, 0),
					      GFP_KERNEL | __GFP_NOWARN));
		if (ret)
			return ret;
		kvtier_crcs_set(r, index, le32_to_cpu(p[i].crc), false);
	}
	return 0;
}

/*
 * Read @r's page map back if it is unloaded; with @slots, damaged CRCs
 * (version 3's CRC section) keep the slots loaded and the region lost,
 * and a region found lost before is read for its slots.
 */
static int kvtier_pagemap_load_map(struct kvtier_region *r, bool slots)
{
	unsigned int noio;
	s64 prev = -1;
	int ret;

	if (!r->map.unloaded)
		return 0;
	if (r->map.lost && !slots)
		return -EUCLEAN;
	/* Its slots are claimed: no allocation here may wait for them. */
	noio = memalloc_noio_save();
	r->inode = alloc_anon_inode(kvtier_mnt->mnt_sb);
	if (IS_ERR(r->inode)) {
		ret = PTR_ERR(r->inode);
		r->inode = NULL;
	} else {
		ret = kvtier_pagemap_walk(r, kvtier_pagemap_fill, &prev);
	}
	memalloc_noio_restore(noio);
	if (ret == -EBADMSG && slots) {
		kvtier_pagemap_damaged(r);
		ret = 0;
	} else if (ret == -EBADMSG) {
		ret = -EUCLEAN;
	}
	if (ret) {
		kvtier_pagemap_drop(r);
		if (ret == -EUCLEAN)
			kvtier_pagemap_damaged(r);
		return ret;
	}
	kvtier_mapext_make_all(r);
	kvtier_count(r->tier, KVT_STAT_MAP_LOAD, 1);
	atomic_long_dec(&r->tier->store.nr_unloaded);
	/* Pairs with kvtier_pagemap_load()'s acquire: the entries first. */
	smp_store_release(&r->map.unloaded, false);
	return 0;
}

/*
 * Read @r's page map back if it is unloaded. Caller holds store.lock (or
 * the store is not yet visible). Errors: -EIO, -ENOMEM, -EUCLEAN (the
 * records are damaged, now or when they were read before); the region
 * stays unloaded then.
 */
int kvtier_pagemap_load_locked(struct kvtier_region *r)
{
	return kvtier_pagemap_load_map(r, false);
}

/*
 * kvtier_pagemap_load_locked() for a journal replay, which must free and
 * claim a region's slots as the commits it replays did, whatever its CRCs:
 * a later transaction may give a slot the region let go of to another
 * region. If only the CRCs are damaged (version 3's CRC section, which an
 * attach does not read; the extent records were checked), the slots are
 * loaded and the region is lost: it is never opened nor checkpointed, and
 * is unlinked once the attach is done. Errors: as _locked().
 */
int kvtier_pagemap_load_replay(struct kvtier_region *r)
{
	return kvtier_pagemap_load_map(r, true);
}

/*
 * Make sure the page map of @r, which the caller holds a user reference
 * of, is in memory before a file uses the region. See the top of the file
 * for why the lockless check is enough.
 */
int kvtier_pagemap_load(struct kvtier_region *r)
{
	struct kvtier_store *st = &r->tier->store;
	int ret;

	/* Lost only ever before a file is bound: a replay, or unloaded. */
	if (READ_ONCE(r->map.lost))
		return -EUCLEAN;
	/* Pairs with the release in _locked(): loaded means entries seen. */
	if (!smp_load_acquire(&r->map.unloaded))
		return 0;
	mutex_lock(&st->lock);
	ret = kvtier_pagemap_load_locked(r);
	mutex_unlock(&st->lock);
	return ret;
}

/*
 * @r's page records failed their CRC (reading them back for an open, an
 * unlink or a checkpoint): its pages can never be found again. It is
 * unlinked by the unload work, as capacity reclaim would, so that the
 * next checkpoint, which could not copy its records, goes on without it.
 * Its slots are freed with it if only its CRCs are damaged (version 3:
 * the extent records say which); else they stay taken until the next
 * attach, which finds them named by no region. Caller holds store.lock.
 */
void kvtier_pagemap_damaged(struct kvtier_region *r)
{
	if (r->map.lost)
		return;
	WRITE_ONCE(r->map.lost, true);
	dev_err(&r->tier->dev, "page records of region '%s' in the checkpoint are damaged: its %lu pages on the namespace are lost%s\n",
		r->name, atomic_long_read(&r->nr_slots),
		r->tier->backing.read_only ? "" : "; unlinking it");
	kvtier_pagemap_kick(r->tier);
}

/*
 * @r is about to be unlinked (by a user, the replay of a deletion, the
 * unload work or capacity reclaim): load its map while the records are
 * where @map says, so that its slots can be freed when it goes. Damaged
 * records do not stop the unlink (see kvtier_pagemap_damaged()): if only
 * the CRCs are (version 3), the extent records, checked at attach, still
 * say which slots to free; otherwise, or once a checkpoint has left a
 * lost region out (its records may be overwritten: !map.valid), they stay
 * taken until the next attach. Caller holds store.lock (or the store is
 * not yet visible). Errors: -EIO, -ENOMEM: the unlink must not go on.
 */
int kvtier_pagemap_load_to_unlink(struct kvtier_region *r)
{
	bool lost = r->map.lost;
	int ret;

	if (lost && !r->map.valid)
		return 0;
	ret = kvtier_pagemap_load_map(r, true);
	if (lost && ret && ret != -EUCLEAN)
		dev_warn_ratelimited(&r->tier->dev, "region '%s' with damaged page records: its slots stay taken until the next attach (%d)\n",
				     r->name, ret);
	return lost || ret == -EUCLEAN ? 0 : ret;
}

/*
 * Unload @r, which the caller holds one reference of, if the checkpoint
 * on the media holds its map and nothing uses it. Returns 1 if it did,
 * -EBUSY if only a short holder (an evictor, a prefetch) stopped it: try
 * again soon; 0 if it stays. Caller holds store.lock.
 */
static int kvtier_pagemap_unload(struct kvtier_region *r)
{
	struct kvtier_tier *tier = r->tier;
	unsigned long index = 0, seen = 0;
	void *entry;
	bool ok, busy;

	/* Cheap checks first: the scan below is as long as the region. */
	if (!r->persistent || r->map.unloaded || !r->map.valid || r->map.lost ||
	    tier->backing.read_only ||
	    atomic_read(&r->map.changes) != r->map.seq ||
	    atomic_long_read(&r->nr_resident) || refcount_read(&r->users) != 1)
		return 0;
	/* Only slots (shadow entries) left: resident pages stay mapped. */
	xa_for_each(&r->pages, index, entry) {
		if (!xa_is_value(entry))
			return 0;
		if (++seen % 4096 == 0)
			cond_resched();
	}
	spin_lock(&tier->regions_lock);
	ok = r->linked && refcount_read(&r->users) == 1 &&
	     !atomic_long_read(&r->nr_resident);
	busy = ok && refcount_read(&r->ref) != 2;
	ok = ok && !busy;
	if (ok)
		WRITE_ONCE(r->map.unloaded, true);
	spin_unlock(&tier->regions_lock);
	if (!ok)
		return busy ? -EBUSY : 0;
	atomic_long_inc(&tier->store.nr_unloaded);
	kvtier_pagemap_drop(r);
	kvtier_count(tier, KVT_STAT_MAP_UNLOAD, 1);
	return 1;
}

/*
 * Unload every closed region whose map the checkpoint on the media holds;
 * those a short holder kept are tried again after KVT_UNLOAD_DELAY.
 * Caller holds store.lock.
 */
void kvtier_pagemap_unload_closed(struct kvtier_tier *tier)
{
	struct kvtier_region **v;
	unsigned int i, n;
	bool again = false;

	lockdep_assert_held(&tier->store.lock);
	if (kvtier_persistent_get(tier, &v, &n, KVT_GET_ALL, NULL))
		return;		/* no memory: the next close tries again */
	for (i = 0; i < n; i++) {
		again |= kvtier_pagemap_unload(v[i]) == -EBUSY;
		kvtier_region_put(v[i]);
		cond_resched();
	}
	kfree(v);
	if (again)
		kvtier_pagemap_kick(tier);
}

/* Unlink the regions whose records were found damaged. */
static void kvtier_pagemap_unlink_lost(struct kvtier_tier *tier)
{
	struct kvtier_region **v;
	unsigned int i, n;
	int ret;

	if (kvtier_persistent_get(tier, &v, &n, KVT_GET_ALL, NULL))
		return;
	for (i = 0; i < n; i++) {
		struct kvtier_region *r = v[i];

		/* map.lost is only ever set: a stale false waits a kick. */
		if (!READ_ONCE(r->map.lost) || !refcount_inc_not_zero(&r->users)) {
			kvtier_region_put(r);
			continue;
		}
		/* The user reference keeps it; destroying it waits for refs. */
		kvtier_region_put(r);
		ret = kvtier_name_unlink(r);
		if (ret)
			dev_err_ratelimited(&tier->dev, "region '%s' with damaged page records: unlink failed (%d)\n",
					    r->name, ret);
		kvtier_region_put_user(r);
	}
	kfree(v);
}

static void kvtier_pagemap_work(struct work_struct *work)
{
	struct kvtier_tier *tier = container_of(to_delayed_work(work),
						struct kvtier_tier,
						store.unload_work);
	struct kvtier_store *st = &tier->store;

	/* Detach cancels this work after setting closing: no commit after. */
	if (READ_ONCE(st->closing) || READ_ONCE(st->dropping))
		return;
	mutex_lock(&st->lock);
	kvtier_pagemap_unload_closed(tier);
	mutex_unlock(&st->lock);
	if (!tier->backing.read_only && !kvtier_fenced(tier) &&
	    !READ_ONCE(st->closing))
		kvtier_pagemap_unlink_lost(tier);
}

/*
 * A persistent region of @tier may have become closed: look for maps to
 * unload after KVT_UNLOAD_DELAY, which gathers the kicks of many closes
 * into one pass and lets the short holders of a region (the evictor that
 * kicked) let go first. Any context; the region need not be held.
 */
void kvtier_pagemap_kick(struct kvtier_tier *tier)
{
	queue_delayed_work(kvtier_wq, &tier->store.unload_work, KVT_UNLOAD_DELAY);
}

/*
 * Checkpoint attempt @attempt is on the media and the newest superblock
 * names it (@ok): what it wrote of each region is now where the records
 * are, and the CRC runs it replaced are deferred. Else (it failed) the
 * CRC runs it made are. Caller holds store.lock.
 */
void kvtier_pagemap_checkpointed(struct kvtier_tier *tier, u64 attempt, bool ok)
{
	struct kvtier_region *r;

	lockdep_assert_held(&tier->store.lock);
	spin_lock(&tier->regions_lock);
	list_for_each_entry(r, &tier->regions, node) {
		struct kvtier_region_map *m = &r->map;

		if (!r->persistent)
			continue;
		if (!ok) {
			if (m->next_ckpt == attempt)
				kvtier_crc_runs_abandon(&tier->store, m);
			continue;
		}
		if (m->next_ckpt != attempt) {
			/* Its records were in the other area: gone. */
			WARN_ON_ONCE(m->unloaded && r->linked && !m->lost);
			m->valid = false;
			continue;
		}
		m->off = m->next_off;
		m->count = m->next_count;
		m->crc = m->next_crc;
		m->pages = m->next_pages;
		m->crcs_off = m->next_crcs_off;
		m->crcs_crc = m->next_crcs_crc;
		kvtier_crc_runs_retire(&tier->store, m);
		m->seq = m->next_seq;
		m->valid = true;
	}
	spin_unlock(&tier->regions_lock);
	kvtier_crc_runs_release(tier);
}

/*
 * Load every region's map (a read-only attach, before the store is
 * visible). A region whose map is damaged is logged and stays listed,
 * lost: opening it fails with EUCLEAN (a read-only attach unlinks
 * nothing). Errors: -EIO, -ENOMEM.
 */
int kvtier_pagemap_load_all(struct kvtier_tier *tier)
{
	struct kvtier_region **v;
	unsigned int i, n;
	int ret;

	ret = kvtier_persistent_get(tier, &v, &n, KVT_GET_ALL, NULL);
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = kvtier_pagemap_load_locked(v[i]);
		if (ret == -EUCLEAN)
			ret = 0;
		kvtier_region_put(v[i]);
	}
	kfree(v);
	return ret;
}

void kvtier_pagemap_init(struct kvtier_store *st)
{
	INIT_DELAYED_WORK(&st->unload_work, kvtier_pagemap_work);
}
