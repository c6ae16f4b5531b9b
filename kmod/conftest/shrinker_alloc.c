// SPDX-License-Identifier: GPL-2.0
/* 6.7+: shrinkers are allocated by the core, not embedded. */
#include <linux/shrinker.h>

struct shrinker *kvtier_conftest(void);
struct shrinker *kvtier_conftest(void)
{
	return shrinker_alloc(0, "kvtier-conftest");
}
