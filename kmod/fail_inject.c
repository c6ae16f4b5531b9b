// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection (built only with CONFIG_FAULT_INJECTION_DEBUG_FS): one
 * fault_attr per site where the module can fail for lack of a resource, so
 * tests can prove every such failure gives the documented error and leaks
 * nothing. Controlled like the kernel's own failslab and fail_page_alloc,
 * from /sys/kernel/debug/kvtier/fail_<site>/ (probability, interval, times,
 * space, verbose, task-filter; Documentation/fault-injection/ in the
 * kernel tree). Documented in Documentation/admin-guide/kvtier-testing.rst.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "kvtier.h"

static struct fault_attr kvtier_fail_attrs[KVT_FAIL_NR] = {
	[0 ... KVT_FAIL_NR - 1] = FAULT_ATTR_INITIALIZER,
};

static const char * const kvtier_fail_names[KVT_FAIL_NR] = {
	[KVT_FAIL_PAGE_ALLOC] = "fail_page_alloc",
	[KVT_FAIL_IO_ALLOC] = "fail_io_alloc",
	[KVT_FAIL_SLOT_ALLOC] = "fail_slot_alloc",
	[KVT_FAIL_META_WRITE] = "fail_meta_write",
};

bool kvtier_should_fail(enum kvtier_fail_site site)
{
	return should_fail(&kvtier_fail_attrs[site], 1);
}

void kvtier_fail_inject_init(struct dentry *root)
{
	int i;

	if (IS_ERR_OR_NULL(root))
		return;
	for (i = 0; i < KVT_FAIL_NR; i++)
		fault_create_debugfs_attr(kvtier_fail_names[i], root,
					  &kvtier_fail_attrs[i]);
}
