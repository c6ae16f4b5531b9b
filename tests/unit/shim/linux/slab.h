/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmem_cache for kmod/slots.c in user space (tests/unit/): malloc, with
 * failures on demand (kvt_fail_allocs) for allocations that may fail, and
 * counts, so a test can see every node freed. __GFP_NOFAIL allocations
 * never fail, as in the kernel.
 */
#ifndef KVT_SHIM_SLAB_H
#define KVT_SHIM_SLAB_H

#include <linux/types.h>	/* tools/include: gfp_t */
#include <stdlib.h>

/* As flags, over tools/include's enum of the same names. */
#define GFP_KERNEL	0x1u
#define GFP_NOIO	0x2u
#define GFP_NOWAIT	0x4u
#define __GFP_NOWARN	0x100u
#define __GFP_NOFAIL	0x200u

struct kmem_cache {
	size_t size;
};

extern long kvt_objects;	/* allocated and not freed */
extern int kvt_fail_allocs;	/* fail this many more (not NOFAIL) */

static inline struct kmem_cache *kvt_cache_create(size_t size)
{
	struct kmem_cache *c = malloc(sizeof(*c));

	if (c)
		c->size = size;
	return c;
}

#define KMEM_CACHE(s, f)	kvt_cache_create(sizeof(struct s))

static inline void *kmem_cache_alloc(struct kmem_cache *c, gfp_t gfp)
{
	void *p;

	if (!(gfp & __GFP_NOFAIL) && kvt_fail_allocs > 0) {
		kvt_fail_allocs--;
		return NULL;
	}
	p = malloc(c->size);
	if (p)
		kvt_objects++;
	return p;
}

static inline void kmem_cache_free(struct kmem_cache *c, void *p)
{
	(void)c;
	if (p)
		kvt_objects--;
	free(p);
}

static inline void kmem_cache_destroy(struct kmem_cache *c)
{
	free(c);
}

#endif
