/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvtier on-namespace format, versions 1 to 4.
 *
 * Specified in Documentation/kvtier-format.rst. Everything is
 * little-endian; every structure has a fixed size and is padded with zero
 * reserved fields. The unit of the namespace is a 4096-byte block.
 *
 * Layout (block numbers):
 *
 *   0                 superblock copy 0
 *   1                 superblock copy 1
 *   meta_start        checkpoint area 0   (meta_blocks blocks)
 *   meta_start + mb   checkpoint area 1   (meta_blocks blocks)
 *   data_start        data slots 0 .. nr_slots - 1, one page each; with
 *                     INCOMPAT_JOURNAL (version 2) the last journal_blocks
 *                     of them are the metadata journal, never allocated
 *   lease_block       the ownership lease (RO_COMPAT_LEASE; the last block
 *                     at format time, after the data slots)
 *
 * A commit of generation G writes a complete checkpoint (header, region
 * records, page records) into area G % 2, then, with a cache flush before
 * it and FUA, superblock copy G % 2 naming it. Attach uses the valid copy
 * with the highest generation; the other area is never written while its
 * superblock is the newest valid one, so a torn commit leaves the previous
 * generation intact. Slots a committed checkpoint names are never
 * overwritten: a persistent page that changes is written to a fresh slot,
 * and the old one is reused only after the next commit.
 *
 * Version 2 (INCOMPAT_JOURNAL) alternates the checkpoint areas per
 * checkpoint (area and superblock copy i go together, whatever the
 * generation), and most commits write no checkpoint: they append one
 * transaction of what changed (struct kvtier_disk_txn) to the journal
 * with a cache flush before it and FUA. Attach loads the checkpoint and
 * replays the transactions that follow journal_head, generation + 1,
 * + 2, ..., up to the first that is not there or not intact.
 * Version 3 (INCOMPAT_JOURNAL | INCOMPAT_EXTENTS) is version 2 with a
 * checkpoint that maps pages by extents: after the region records come
 * extent records (struct kvtier_disk_extent), and the page CRCs are in a
 * CRC section (crcs_block), checked per region (struct
 * kvtier_disk_region.crcs_crc), so attach reads 16 bytes per extent, not
 * 16 per page.
 * Version 4 (version 3's flags and INCOMPAT_CRC_RUNS) keeps each region's
 * CRCs in runs of data slots of its own, named by CRC run records after
 * its extent records, so that a checkpoint rewrites the CRCs of regions
 * that changed, not of every region; the CRC section holds only what did
 * not fit in free slots.
 * Version 5 (version 4's flags and INCOMPAT_FILE_SIZES) gives a region a
 * size in bytes, any number of them, 0 included, so that a region is a
 * file (kvtierfs): its pages are the blocks its size covers. A journal
 * transaction may give a region of the checkpoint a larger size.
 */
#ifndef _UAPI_LINUX_KVTIER_FORMAT_H
#define _UAPI_LINUX_KVTIER_FORMAT_H

#include <linux/types.h>

#define KVTIER_BLOCK_SIZE		4096
#define KVTIER_SB_MAGIC			0x3152454954564b00ULL	/* "\0KVTIER1" LE */
#define KVTIER_CKPT_MAGIC		0x54504b4354564b00ULL	/* "\0KVTCKPT" LE */
#define KVTIER_LEASE_MAGIC		0x5341454c54564b00ULL	/* "\0KVTLEAS" LE */
#define KVTIER_TXN_MAGIC		0x4c4e524a54564b00ULL	/* "\0KVTJRNL" LE */
/* The newest version this header describes; a module formats 1 to 4. */
#define KVTIER_FORMAT_VERSION		5

/* Bounds of the version-2 journal: its size, and its virtual positions. */
#define KVTIER_JOURNAL_MAX_BLOCKS	65536ULL
#define KVTIER_JOURNAL_POS_MAX		(1ULL << 62)

/*
 * Feature flags. RO_COMPAT_SEALED: the checkpoint has sealed regions
 * (KVTIER_DISK_REGION_SEALED); a module that does not know it must not
 * write (it would not keep them immutable).
 */
#define KVTIER_FEATURE_RO_COMPAT_SEALED	(1ULL << 0)
/*
 * RO_COMPAT_LEASE: block @lease_block holds the ownership lease (struct
 * kvtier_disk_lease) that allows one read-write attach at a time; a module
 * that does not know it must not write (it would not honour the lease).
 */
#define KVTIER_FEATURE_RO_COMPAT_LEASE	(1ULL << 1)

#define KVTIER_FEATURE_COMPAT_SUPP	0ULL	/* may be ignored */
/* Unknown RO_COMPAT bits: no read-write attach (this module refuses any). */
#define KVTIER_FEATURE_RO_COMPAT_SUPP	(KVTIER_FEATURE_RO_COMPAT_SEALED | \
					 KVTIER_FEATURE_RO_COMPAT_LEASE)
/*
 * INCOMPAT_JOURNAL: commits append transactions to the journal
 * (journal_start, journal_blocks, journal_head), and checkpoint area i
 * belongs to superblock copy i. Set exactly when the version is 2; a
 * module that does not know it would miss every change since the last
 * checkpoint, so it must not attach at all.
 */
#define KVTIER_FEATURE_INCOMPAT_JOURNAL	(1ULL << 0)
/*
 * INCOMPAT_JOURNAL_RUN: the journal is a run of data slots that is not
 * the last ones (an upgrade from version 1 put it where it found room).
 * Only with INCOMPAT_JOURNAL. A module that knows only the journal at the
 * end would take the namespace for damaged, or fall back to an older
 * version-1 superblock copy and write over the upgrade: it must refuse.
 */
#define KVTIER_FEATURE_INCOMPAT_JOURNAL_RUN	(1ULL << 1)
/*
 * INCOMPAT_EXTENTS: the checkpoint maps each region's pages by extent
 * records and keeps their CRCs in the CRC section of its area (at block
 * @crcs_block[area]). Set exactly when the version is 3, with
 * INCOMPAT_JOURNAL: a module that does not know it would read extent
 * records as page records.
 */
#define KVTIER_FEATURE_INCOMPAT_EXTENTS	(1ULL << 2)
/*
 * INCOMPAT_CRCS_RUN: the two CRC sections are runs of data slots, not the
 * ends of the checkpoint areas (an upgrade from version 2, whose areas
 * have no room for them, put them where it found room). Only with
 * INCOMPAT_EXTENTS. A module that knows only CRC sections in the areas
 * would read CRCs from the wrong blocks: it must refuse.
 */
#define KVTIER_FEATURE_INCOMPAT_CRCS_RUN	(1ULL << 3)
/*
 * INCOMPAT_CRC_RUNS: a region record of the checkpoint may name runs of
 * data slots holding its CRCs (@nr_crc_runs CRC run records after its
 * extent records), and the CRC section holds only the rest. Set exactly
 * when the version is 4, with INCOMPAT_EXTENTS: a module that does not
 * know it would read CRC run records as extent records.
 */
#define KVTIER_FEATURE_INCOMPAT_CRC_RUNS	(1ULL << 4)
/*
 * INCOMPAT_FILE_SIZES: a region record's @size is any number of bytes,
 * 0 included, not a multiple of the block size; the region's pages are
 * the DIV_ROUND_UP(@size, KVTIER_BLOCK_SIZE) blocks it covers. A region
 * record of a transaction may give a region a larger size than the
 * checkpoint or an earlier transaction did (a file that grew). Set
 * exactly when the version is 5, with version 4's flags: a module that
 * does not know it would refuse such a size as damage.
 */
#define KVTIER_FEATURE_INCOMPAT_FILE_SIZES	(1ULL << 5)

/* Refuse attach if unknown. */
#define KVTIER_FEATURE_INCOMPAT_SUPP	(KVTIER_FEATURE_INCOMPAT_JOURNAL | \
					 KVTIER_FEATURE_INCOMPAT_JOURNAL_RUN | \
					 KVTIER_FEATURE_INCOMPAT_EXTENTS | \
					 KVTIER_FEATURE_INCOMPAT_CRCS_RUN | \
					 KVTIER_FEATURE_INCOMPAT_CRC_RUNS | \
					 KVTIER_FEATURE_INCOMPAT_FILE_SIZES)

/**
 * struct kvtier_disk_super - one superblock copy (block 0 or 1)
 * @magic: KVTIER_SB_MAGIC
 * @version: format version that wrote it: 1, 2 with INCOMPAT_JOURNAL, 3
 *           with INCOMPAT_JOURNAL and INCOMPAT_EXTENTS, or 4 with those and
 *           INCOMPAT_CRC_RUNS
 * @header_size: sizeof(struct kvtier_disk_super) that wrote it
 * @crc: CRC32C (seed ~0, final value not inverted, as the kernel's
 *       crc32c()) of the first @header_size bytes with this field zero
 * @reserved0: zero
 * @uuid: chosen at format time; names the namespace
 * @feature_compat: KVTIER_FEATURE_COMPAT_* bits
 * @feature_ro_compat: KVTIER_FEATURE_RO_COMPAT_* bits
 * @feature_incompat: KVTIER_FEATURE_INCOMPAT_* bits
 * @format_time: seconds since the epoch at format time
 * @nr_blocks: namespace size at format time, in blocks
 * @meta_start: first block of checkpoint area 0
 * @meta_blocks: blocks of each checkpoint area
 * @data_start: block of data slot 0
 * @nr_slots: data slots
 * @max_regions: region records a checkpoint area has room for
 * @generation: commit generation; version 1: this copy is block
 *              @generation % 2; version 2: the checkpoint's, and the
 *              journal's transactions after it are @generation + 1, ...
 * @commit_time: seconds since the epoch of this commit
 * @ckpt_bytes: bytes of the checkpoint in the area of this copy's index
 *              (version 1: area @generation % 2, which is the same);
 *              version 3: of its index (header, region and extent
 *              records), the CRC section not included
 * @ckpt_crc: CRC32C of those bytes (seeded like @crc)
 * @lease_block: block of the ownership lease with RO_COMPAT_LEASE, else 0
 * @journal_start: with INCOMPAT_JOURNAL, the data slot where the journal
 *                 begins (block @data_start + @journal_start): a run of
 *                 data slots that no page record names, within @nr_slots.
 *                 A format puts it last (@journal_start + @journal_blocks
 *                 == @nr_slots); an upgrade from version 1 where it found
 *                 a free run, with INCOMPAT_JOURNAL_RUN unless that is the
 *                 last slots. Else 0
 * @journal_blocks: blocks in the journal, 1 to KVTIER_JOURNAL_MAX_BLOCKS
 *                  (a module formats clamp(@nr_slots / 256, 256, 65536));
 *                  else 0
 * @journal_head: virtual block of the first transaction after this
 *                checkpoint (block @journal_head % @journal_blocks of the
 *                journal); below KVTIER_JOURNAL_POS_MAX; else 0
 * @crcs_block: version 3: block where the CRC section of checkpoint area
 *              0 and 1 starts, each DIV_ROUND_UP(4 * @nr_slots, 4096)
 *              blocks; a format puts it in its area, after room for the
 *              index of @max_regions regions and @nr_slots extents; an
 *              upgrade from version 2 in a run of data slots
 *              (INCOMPAT_CRCS_RUN), which no record names; else 0
 * @reserved: zero
 */
struct kvtier_disk_super {
	__le64 magic;
	__le32 version;
	__le32 header_size;
	__le32 crc;
	__le32 reserved0;
	__u8 uuid[16];
	__le64 feature_compat;
	__le64 feature_ro_compat;
	__le64 feature_incompat;
	__le64 format_time;
	__le64 nr_blocks;
	__le64 meta_start;
	__le64 meta_blocks;
	__le64 data_start;
	__le64 nr_slots;
	__le64 max_regions;
	__le64 generation;
	__le64 commit_time;
	__le64 ckpt_bytes;
	__le32 ckpt_crc;
	__le32 reserved1;
	__le64 lease_block;
	__le64 journal_start;
	__le64 journal_blocks;
	__le64 journal_head;
	__le64 crcs_block[2];
	__le64 reserved[7];
};

/**
 * struct kvtier_disk_ckpt - checkpoint header, at the start of its area
 * @magic: KVTIER_CKPT_MAGIC
 * @generation: equal to the superblock's that names this checkpoint
 * @nr_regions: region records that follow the header
 * @nr_pages: page records that follow the region records; version 3:
 *            pages the extent records map (CRCs in the CRC section)
 * @nr_extents: version 3: extent records that follow the region records;
 *              else 0
 * @nr_crc_runs: version 4: CRC run records among them (each region's
 *               follow its extent records); else 0
 * @reserved: zero
 *
 * Followed by @nr_regions struct kvtier_disk_region, then the page records
 * of every region in the order of the region records (each region's
 * nr_pages of them, in increasing index). Version 3: then the extent
 * records of every region in the same order (each region's nr_extents of
 * them, in increasing index); the CRC section of the area (crcs_block)
 * holds each region's nr_pages CRCs in the same order, the CRC of every
 * page of each extent in turn.
 */
struct kvtier_disk_ckpt {
	__le64 magic;
	__le64 generation;
	__le64 nr_regions;
	__le64 nr_pages;
	__le64 nr_extents;
	__le64 nr_crc_runs;
	__le64 reserved[2];
};

/* struct kvtier_disk_region.flags */
#define KVTIER_DISK_REGION_PINNED	(1U << 0)	/* never reclaimed for space */
#define KVTIER_DISK_REGION_SEALED	(1U << 1)	/* immutable (RO_COMPAT_SEALED) */
#define KVTIER_DISK_REGION_DELETED	(1U << 2)	/* in a transaction only */

/**
 * struct kvtier_disk_region - one persistent named region
 * @name: 1..63 bytes of 0x21..0x7e except '/', zero-padded
 * @size: bytes, a multiple of KVTIER_BLOCK_SIZE and not 0 (version 5:
 *        any number, 0 included; its pages are the blocks it covers)
 * @nr_pages: its page records (pages with data on the namespace);
 *            version 3: the pages its extent records map, and its CRCs
 * @created: seconds since the epoch
 * @last_used: seconds since the epoch of its last use before the commit
 * @owner: uid of the creator (initial user namespace)
 * @group: gid of the creator (initial user namespace)
 * @mode: permission bits, 0 to 0777
 * @flags: KVTIER_DISK_REGION_* bits
 * @nr_extents: version 3, in a checkpoint: its extent records; else 0
 * @crcs_crc: version 3, in a checkpoint: CRC32C (seeded like the
 *            superblock's) of its 4 x @nr_pages bytes of the CRC section
 *            (version 4: of its CRC runs, then the CRC section); else 0
 * @nr_crc_runs: version 4, in a checkpoint: its CRC run records, which
 *               follow its @nr_extents extent records; else 0
 */
struct kvtier_disk_region {
	char name[64];
	__le64 size;
	__le64 nr_pages;
	__le64 created;
	__le64 last_used;
	__le32 owner;
	__le32 group;
	__le32 mode;
	__le32 flags;
	__le64 nr_extents;
	__le32 crcs_crc;
	__le32 nr_crc_runs;
};

/**
 * struct kvtier_disk_page - where one page of a region is
 * @slot: data slot (block data_start + @slot) holding the page
 * @index: page index in the region (byte offset / KVTIER_BLOCK_SIZE)
 * @crc: CRC32C of the slot's 4096 bytes (seeded like the superblock's)
 */
struct kvtier_disk_page {
	__le64 slot;
	__le32 index;
	__le32 crc;
};

/**
 * struct kvtier_disk_extent - where a run of a region's pages is (version 3)
 * @slot: data slot of the first page; page @index + i is at @slot + i
 * @index: page index of the first page
 * @len: pages in the run, at least 1; @index + @len <= the next extent's
 *       @index, and within the region
 */
struct kvtier_disk_extent {
	__le64 slot;
	__le32 index;
	__le32 len;
};

/*
 * A CRC run record (version 4) is a struct kvtier_disk_extent too: @slot
 * is the data slot of its first block, @index the block of the region's
 * CRC stream that it starts (the runs of a region follow each other:
 * the first at 0, each at the end of the one before), @len its blocks.
 * The stream is the region's 4 x nr_pages bytes of CRCs in the order of
 * its extents; its runs hold its first 4096 x (their blocks) bytes (the
 * rest of the last block zero), the CRC section the remainder, if any.
 */

/**
 * struct kvtier_disk_txn - one journal transaction (version 2), at the
 *                          start of its first block
 * @magic: KVTIER_TXN_MAGIC
 * @crc: CRC32C (seeded like the superblock's) of the @bytes bytes of the
 *       transaction, this header first, with this field zero
 * @nr_blocks: blocks it takes: DIV_ROUND_UP(@bytes, KVTIER_BLOCK_SIZE); a
 *             transaction never wraps: one that would not fit before the
 *             journal's end starts at its block 0 (the next virtual lap)
 * @seq: the generation this commit makes; unique and increasing
 * @pos: virtual block it starts at (the block is @pos % journal_blocks)
 * @uuid: the namespace's: blocks of an earlier format are not replayed
 * @bytes: header, region records and page records
 * @nr_regions: region records after the header: the deleted ones
 *              (KVTIER_DISK_REGION_DELETED, @name alone, all else zero)
 *              first, then the created or changed ones
 * @nr_pages: page records after the region records: of every changed
 *            region in record order, its @nr_pages pages that changed
 *            since the last commit, in increasing index
 * @reserved: zero
 */
struct kvtier_disk_txn {
	__le64 magic;
	__le32 crc;
	__le32 nr_blocks;
	__le64 seq;
	__le64 pos;
	__u8 uuid[16];
	__le32 bytes;
	__le32 nr_regions;
	__le32 nr_pages;
	__le32 reserved;
};

/* struct kvtier_disk_lease.state */
#define KVTIER_LEASE_FREE		0	/* no read-write attach */
#define KVTIER_LEASE_HELD		1	/* attached read-write by @host */

/**
 * struct kvtier_disk_lease - who has the namespace attached read-write
 * @magic: KVTIER_LEASE_MAGIC
 * @crc: CRC32C (seeded like the superblock's) of the 256 bytes with this
 *       field zero
 * @state: KVTIER_LEASE_FREE or KVTIER_LEASE_HELD
 * @uuid: the namespace's (the superblock's @uuid)
 * @seq: bumped by every write of the record; a holder that is alive
 *       rewrites it every @interval_ms
 * @nonce: random, chosen by each read-write attach: tells one attach from
 *         another of the same host
 * @interval_ms: the holder's renewal interval, milliseconds
 * @tier: N of the holder's /dev/kvtierN
 * @acquired: seconds since the epoch when the holder attached
 * @renewed: seconds since the epoch of this write (the holder's clock)
 * @host: the holder's host name (utsname nodename), zero-padded
 * @reserved: zero
 *
 * At the start of block @lease_block; the rest of the block is zero.
 */
struct kvtier_disk_lease {
	__le64 magic;
	__le32 crc;
	__le32 state;
	__u8 uuid[16];
	__le64 seq;
	__le64 nonce;
	__le32 interval_ms;
	__le32 tier;
	__le64 acquired;
	__le64 renewed;
	char host[64];
	__le64 reserved[15];
};

#endif /* _UAPI_LINUX_KVTIER_FORMAT_H */
