/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kvtier on-namespace format, version 1.
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
 *   data_start        data slots 0 .. nr_slots - 1, one page each
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
 */
#ifndef _UAPI_LINUX_KVTIER_FORMAT_H
#define _UAPI_LINUX_KVTIER_FORMAT_H

#include <linux/types.h>

#define KVTIER_BLOCK_SIZE		4096
#define KVTIER_SB_MAGIC			0x3152454954564b00ULL	/* "\0KVTIER1" LE */
#define KVTIER_CKPT_MAGIC		0x54504b4354564b00ULL	/* "\0KVTCKPT" LE */
#define KVTIER_LEASE_MAGIC		0x5341454c54564b00ULL	/* "\0KVTLEAS" LE */
#define KVTIER_FORMAT_VERSION		1

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
#define KVTIER_FEATURE_INCOMPAT_SUPP	0ULL	/* refuse attach if unknown */

/**
 * struct kvtier_disk_super - one superblock copy (block 0 or 1)
 * @magic: KVTIER_SB_MAGIC
 * @version: KVTIER_FORMAT_VERSION that wrote it
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
 * @generation: commit generation; this copy is block @generation % 2
 * @commit_time: seconds since the epoch of this commit
 * @ckpt_bytes: bytes of the checkpoint in area @generation % 2
 * @ckpt_crc: CRC32C of those bytes (seeded like @crc)
 * @lease_block: block of the ownership lease with RO_COMPAT_LEASE, else 0
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
	__le64 reserved[12];
};

/**
 * struct kvtier_disk_ckpt - checkpoint header, at the start of its area
 * @magic: KVTIER_CKPT_MAGIC
 * @generation: equal to the superblock's that names this checkpoint
 * @nr_regions: region records that follow the header
 * @nr_pages: page records that follow the region records
 * @reserved: zero
 *
 * Followed by @nr_regions struct kvtier_disk_region, then the page records
 * of every region in the order of the region records (each region's
 * nr_pages of them, in increasing index).
 */
struct kvtier_disk_ckpt {
	__le64 magic;
	__le64 generation;
	__le64 nr_regions;
	__le64 nr_pages;
	__le64 reserved[4];
};

/* struct kvtier_disk_region.flags */
#define KVTIER_DISK_REGION_PINNED	(1U << 0)	/* never reclaimed for space */
#define KVTIER_DISK_REGION_SEALED	(1U << 1)	/* immutable (RO_COMPAT_SEALED) */

/**
 * struct kvtier_disk_region - one persistent named region
 * @name: 1..63 bytes of 0x21..0x7e except '/', zero-padded
 * @size: bytes, a multiple of KVTIER_BLOCK_SIZE
 * @nr_pages: its page records (pages with data on the namespace)
 * @created: seconds since the epoch
 * @last_used: seconds since the epoch of its last use before the commit
 * @owner: uid of the creator (initial user namespace)
 * @group: gid of the creator (initial user namespace)
 * @mode: permission bits, 0 to 0777
 * @flags: KVTIER_DISK_REGION_* bits
 * @reserved: zero
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
	__le64 reserved[2];
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
