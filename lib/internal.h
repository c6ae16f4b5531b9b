/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvtier internals shared by kvtier.c (tiers, regions, stats),
 * xfer.c (the block-offload API) and gpuhost.c (what the host lets a GPU
 * do). Not installed.
 */
#ifndef LIBKVTIER_INTERNAL_H
#define LIBKVTIER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kvtier.h"

#define KVTIER_EXPORT __attribute__((visibility("default")))

struct kvtier_tier {
	unsigned int id;
	int fd;
};

/*
 * One open file of a tier bound to a region, and at most one mapping of
 * the whole region. @size is the region's size in bytes (page multiple).
 */
struct kvtier_region {
	struct kvtier_tier *tier;	/* not owned */
	int fd;
	int readonly;			/* bound with KVTIER_OPEN_RDONLY */
	uint64_t size;
	void *addr;			/* the mapping, or NULL */
};

/* pread/pwrite of exactly @len bytes at @off (EINTR retried). 0 or -errno. */
int kvt_pread_full(int fd, void *buf, size_t len, uint64_t off);
int kvt_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

#endif /* LIBKVTIER_INTERNAL_H */
