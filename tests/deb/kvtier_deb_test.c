// SPDX-License-Identifier: GPL-2.0
/*
 * The installed packages in a VM: the kvtier.ko that DKMS built from
 * kvtier-dkms (KVTIER_KO, decompressed by tests/deb-check.sh), attached
 * with the installed /usr/sbin/kvtierctl (kvtier-tools), and a region
 * written and read back through the installed libkvtier (this program is
 * built against libkvtier-dev with pkg-config, and links libkvtier0).
 * Run by tests/deb-check.sh through tests/run-suite.sh, one boot per
 * kernel, while the packages are installed on the host (the guest sees
 * the host's root).
 */
#include <kvtier.h>
#include <string.h>

#include "kselftest_harness.h"
#include "../kvtier_util.h"

#define LEN	(8 * MiB)

TEST(installed_packages_round_trip)
{
	const char *ns = kvt_ns("KVTIER_NS0"), *why = kvt_missing();
	struct kvtier_region_info info;
	struct kvtier_region *r;
	struct kvtier_tier *t;
	unsigned char *p;
	void *addr;

	if (why)
		SKIP(return, "%s", why);
	if (access("/usr/sbin/kvtierctl", X_OK))
		SKIP(return, "kvtier-tools is not installed (/usr/sbin/kvtierctl)");
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load("num_tiers=1"));
	ASSERT_EQ(0, kvt_run("/usr/sbin/kvtierctl attach --format --yes 0 %s </dev/null", ns));
	ASSERT_TRUE(kvt_state_is(0, "attached"));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 4));

	ASSERT_EQ(0, kvtier_tier_open(0, &t));
	ASSERT_EQ(0, kvtier_region_create(t, LEN, &r));
	ASSERT_EQ(0, kvtier_region_map(r, PROT_READ | PROT_WRITE, &addr));
	p = addr;
	kvt_fill(p, LEN, 0, 42);
	ASSERT_EQ(0, kvtier_region_sync(r));
	/* Out of host memory: back from the namespace, checked. */
	ASSERT_EQ(0, kvtier_region_cold(r, 0, LEN));
	ASSERT_EQ(0, kvtier_region_info(r, &info));
	ASSERT_EQ(LEN, info.namespace);
	ASSERT_EQ(-1, kvt_check(p, LEN, 0, 42));
	ASSERT_EQ(0, kvtier_region_unmap(r));
	kvtier_region_close(r);
	kvtier_tier_close(t);

	ASSERT_EQ(0, kvt_run("/usr/sbin/kvtierctl status 0 >/dev/null"));
	ASSERT_EQ(0, kvt_run("/usr/sbin/kvtierctl detach 0"));
	ASSERT_TRUE(kvt_state_is(0, "detached"));
	ASSERT_EQ(0, kvt_unload());
}

TEST_HARNESS_MAIN
