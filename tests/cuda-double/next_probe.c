// SPDX-License-Identifier: GPL-2.0
/*
 * TEST CODE: libkvt_next.so, loaded after the shim. Its dlsym(RTLD_NEXT)
 * must search the objects after this library, not after the shim (which
 * would find this library's own kvt_next_target).
 */
#define _GNU_SOURCE
#include <dlfcn.h>

__attribute__((visibility("default"))) void *kvt_next_target(void)
{
	return (void *)kvt_next_target;
}

__attribute__((visibility("default"))) void *kvt_next_probe(void)
{
	void *p = dlsym(RTLD_NEXT, "kvt_next_target");

	/* Not a tail call: dlsym must see this library as its caller. */
	__asm__ volatile("" : "+r"(p));
	return p;
}
