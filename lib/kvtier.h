/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvtier: the C API over /dev/kvtierN. The only public header.
 *
 * Every function returns 0 (or a non-negative value where documented) on
 * success and a negative errno on failure; errno itself is not relied on.
 * One man page per function: kvtier_tier_open(3), kvtier_tier_info(3),
 * kvtier_attach(3), kvtier_format(3), kvtier_region_list(3),
 * kvtier_region_unlink(3), kvtier_region_setflags(3).
 */
#ifndef LIBKVTIER_H
#define LIBKVTIER_H

#include <stddef.h>

#include <linux/kvtier.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kvtier_tier;

int kvtier_tier_open(unsigned int id, struct kvtier_tier **tierp);
void kvtier_tier_close(struct kvtier_tier *tier);
int kvtier_tier_fd(const struct kvtier_tier *tier);
int kvtier_tier_info(struct kvtier_tier *tier, struct kvtier_tier_info *info);

int kvtier_attach(unsigned int id, const char *path);
int kvtier_detach(unsigned int id);
int kvtier_format(unsigned int id, const char *path);

int kvtier_region_list(struct kvtier_tier *tier,
		       struct kvtier_region_entry **entriesp, size_t *countp);
int kvtier_region_unlink(struct kvtier_tier *tier, const char *name);
int kvtier_region_setflags(struct kvtier_tier *tier, const char *name,
			   unsigned int set, unsigned int clear);

#ifdef __cplusplus
}
#endif

#endif /* LIBKVTIER_H */
