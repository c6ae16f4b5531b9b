/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A mutex for one thread: kmod/slots.c built in user space (tests/unit/).
 * It checks what lockdep would: no recursion, unlock only when held, and
 * lockdep_assert_held().
 */
#ifndef KVT_SHIM_MUTEX_H
#define KVT_SHIM_MUTEX_H

#include <assert.h>

struct mutex {
	int held;
};

#define mutex_init(m)		((m)->held = 0)
#define mutex_lock(m)		do { assert(!(m)->held); (m)->held = 1; } while (0)
#define mutex_unlock(m)		do { assert((m)->held); (m)->held = 0; } while (0)
#define lockdep_assert_held(m)	assert((m)->held)

#endif
