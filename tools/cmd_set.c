// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl set: validate a knob's value against the ranges of the module's
 * sysfs attributes (kmod/sysfs.c) before writing it, so that a typo is a
 * usage error that changes nothing, then let the kernel have the last word.
 * kvtierctl get: read knobs back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "ctl.h"

/*
 * Same ranges as kmod/sysfs.c, assuming 4 KiB pages (tests/knobs-check.sh
 * compares them): name, min, max, align, detached.
 */
const struct knob knobs[] = {
	{ "host_budget_mb", 1, 0, 1, 0 },
	{ "watermark_high", 1, 100, 1, 0 },
	{ "watermark_low", 0, 99, 1, 0 },
	{ "dirty_background_pct", 0, 99, 1, 0 },
	{ "readahead_kb", 0, 1024, 4, 0 },
	{ "writeback_batch_kb", 4, 65536, 4, 0 },
	{ "max_inflight_kb", 4, 1048576, 4, 0 },
	{ "discard", 0, 1, 1, 0 },
	{ "checksum", 0, 1, 1, 0 },
	{ "pin_budget_mb", 0, 0, 1, 0 },
	{ "user_pin_mb", 0, 0, 1, 0 },
	{ "user_quota_mb", 0, 2147483647, 1, 0 },
	{ "max_regions", 0, 2147483647, 1, 0 },
	{ "user_max_regions", 0, 2147483647, 1, 0 },
	{ "read_only", 0, 1, 1, 1 },
	{ "lease_interval_ms", 100, 60000, 1, 1 },
	{ "format_version", 1, 5, 1, 1 },
};

const size_t nr_knobs = sizeof(knobs) / sizeof(knobs[0]);
_Static_assert(sizeof(knobs) / sizeof(knobs[0]) <= KVT_CONF_MAX_KNOBS,
	       "kvtier.conf keeps a value per knob: raise KVT_CONF_MAX_KNOBS");

const struct knob *find_knob(const char *name)
{
	size_t i;

	for (i = 0; i < nr_knobs; i++)
		if (!strcmp(knobs[i].name, name))
			return &knobs[i];
	return NULL;
}

static uint64_t ram_mib(void)
{
	struct sysinfo si;

	if (sysinfo(&si))
		return 0;
	return ((uint64_t)si.totalram * si.mem_unit) >> 20;
}

/* The watermarks must keep low < high: check against the other one. */
static int check_watermarks(const struct cmd *cmd, unsigned int id,
			    const struct knob *k, uint64_t v)
{
	bool low = !strcmp(k->name, "watermark_low");
	uint64_t other;

	if (!low && strcmp(k->name, "watermark_high"))
		return 0;
	if (tier_attr_u64(id, low ? "watermark_high" : "watermark_low", &other))
		return 0;	/* the kernel checks it anyway */
	if (low && v >= other)
		return usage_error(cmd, "set: watermark_low %llu must be below watermark_high (%llu)",
				   (unsigned long long)v, (unsigned long long)other);
	if (!low && v <= other)
		return usage_error(cmd, "set: watermark_high %llu must be above watermark_low (%llu)",
				   (unsigned long long)v, (unsigned long long)other);
	return 0;
}

int knob_value(const struct knob *k, const char *val, uint64_t *v,
	       char *why, size_t len)
{
	uint64_t max = k->max ? k->max : ram_mib();

	if (parse_u64(val, v))
		snprintf(why, len, "%s: '%s' is not a decimal number", k->name, val);
	else if (*v < k->min || *v > max)
		snprintf(why, len, "%s: %llu is out of range %llu..%llu", k->name,
			 (unsigned long long)*v, (unsigned long long)k->min,
			 (unsigned long long)max);
	else if (*v % k->align)
		snprintf(why, len, "%s: %llu is not a multiple of %llu", k->name,
			 (unsigned long long)*v, (unsigned long long)k->align);
	else
		return 0;
	return -EINVAL;
}

/*
 * get TIER [KNOB...]: "KNOB VALUE" per line, every knob of the table in its
 * order when none is named; --json: one object. A knob the module does not
 * have (an older one) is left out of the full list, and fails when named.
 */
int cmd_get(const struct cmd *cmd, int argc, char **argv)
{
	size_t i, n = nr_knobs;
	const struct knob *k;
	bool first = true;
	unsigned int id;
	char buf[64];
	uint64_t v;
	int a, ret = EXIT_OK;

	if (argc < 2 || parse_tier(argv[1], &id))
		return usage_error(cmd, "get: need TIER (0..%d)", KVT_MAX_TIERS - 1);
	for (a = 2; a < argc; a++)
		if (!find_knob(argv[a]))
			return usage_error(cmd, "get: unknown knob '%s'", argv[a]);
	if (tier_check(id))
		return EXIT_FAIL;
	if (opt_json)
		printf("{");
	for (i = 0; i < (argc > 2 ? (size_t)(argc - 2) : n); i++) {
		k = argc > 2 ? find_knob(argv[i + 2]) : &knobs[i];
		if (kvtier_tier_attr_get(id, k->name, buf, sizeof(buf))) {
			if (argc > 2)
				ret = fail("kvtier%u: no knob %s (an older module?)",
					   id, k->name);
			continue;
		}
		if (opt_json && !parse_u64(buf, &v))
			json_key_u64(stdout, &first, k->name, v);
		else if (opt_json)
			json_key_str(stdout, &first, k->name, buf);
		else
			printf("%s %s\n", k->name, buf);
	}
	if (opt_json)
		printf("}\n");
	return ret;
}

int cmd_set(const struct cmd *cmd, int argc, char **argv)
{
	const struct knob *k;
	char buf[32], why[128];
	unsigned int id;
	uint64_t v;
	int ret;

	if (opt_json)
		return usage_error(cmd, "set has no --json output");
	if (argc != 4 || parse_tier(argv[1], &id))
		return usage_error(cmd, "set: need TIER (0..%d), KNOB and VALUE",
				   KVT_MAX_TIERS - 1);
	k = find_knob(argv[2]);
	if (!k)
		return usage_error(cmd, "set: unknown knob '%s'", argv[2]);
	if (knob_value(k, argv[3], &v, why, sizeof(why)))
		return usage_error(cmd, "set: %s", why);
	ret = tier_check(id);
	if (!ret)
		ret = check_watermarks(cmd, id, k, v);
	if (ret)
		return ret;
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	ret = kvtier_tier_attr_set(id, k->name, buf);
	if (ret)
		return fail("kvtier%u: %s = %s: refused by the kernel: %s", id,
			    k->name, buf, strerror(-ret));
	return EXIT_OK;
}
