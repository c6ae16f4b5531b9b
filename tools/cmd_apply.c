// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl apply: make the running tiers match kvtier.conf(5).
 *
 * Three steps, so that a bad configuration changes nothing: read and check
 * every file (conf.c); resolve every device and compare every configured
 * tier with the running one, refusing what cannot be reached without a
 * detach; only then load the module, set the knobs (the detached-only ones
 * first, the watermarks in an order the kernel accepts) and attach.
 * Tiers the configuration does not name are never touched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kvtier.h>

#include "ctl.h"

enum { OPT_DRY_RUN, OPT_CONFIG, OPT_DETACH, OPT_WAIT, OPT_NR };

/* One configured tier: what is running, what the file wants. */
struct apply_tier {
	unsigned int id;
	const struct kvt_conf_tier *t;
	const struct kvt_conf_item *named;	/* its device or nqn line */
	char dev[4096];		/* the block device to attach */
	bool attached;		/* to dev, already */
	bool attach;
	bool failed;
};

static bool dry_run;

/* "FILE:LINE: kvtierN: why" on stderr; returns EXIT_FAIL. */
static int tier_error(const struct apply_tier *a, const struct kvt_conf_item *at,
		      const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int tier_error(const struct apply_tier *a, const struct kvt_conf_item *at,
		      const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail("%s:%u: kvtier%u: %s", at->file, at->line, a->id, msg);
}

static void report(unsigned int id, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report(unsigned int id, const char *fmt, ...)
{
	va_list ap;

	printf("%skvtier%u: ", dry_run ? "(dry run) " : "", id);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);		/* in order with the errors on stderr */
}

/* Find @a's block device; -errno (quietly) while it is not there. */
static int resolve(struct apply_tier *a)
{
	const struct kvt_conf_tier *t = a->t;
	uint64_t nsid = 0;
	struct stat st;

	if (t->device.value) {
		a->named = &t->device;
		if (stat(t->device.value, &st))
			return -errno;
		if (!S_ISBLK(st.st_mode))
			return -ENOTBLK;
		snprintf(a->dev, sizeof(a->dev), "%s", t->device.value);
		return 0;
	}
	a->named = &t->nqn;
	if (t->nsid.value)
		parse_u64(t->nsid.value, &nsid);	/* checked by conf.c */
	return kvt_nvme_find(t->nqn.value, (uint32_t)nsid, a->dev, sizeof(a->dev));
}

static int resolve_error(const struct apply_tier *a, int err)
{
	const struct kvt_conf_tier *t = a->t;

	if (t->device.value && err == -ENOTBLK)
		return tier_error(a, &t->device, "%s is not a block device", t->device.value);
	if (t->device.value)
		return tier_error(a, &t->device, "device %s: %s", t->device.value,
				  strerror(-err));
	switch (err) {
	case -ENOENT:
		return tier_error(a, &t->nqn, "no NVMe subsystem %s is connected (nvme connect, or nvmf-autoconnect at boot)",
				  t->nqn.value);
	case -ENODEV:
		return tier_error(a, &t->nqn, "subsystem %s has no namespace%s%s",
				  t->nqn.value, t->nsid.value ? " with nsid " : "",
				  t->nsid.value ? t->nsid.value : "");
	case -EEXIST:
		return tier_error(a, &t->nqn, "subsystem %s has several namespaces: name one with nsid = N",
				  t->nqn.value);
	}
	return tier_error(a, &t->nqn, "NVMe scan for %s: %s", t->nqn.value, strerror(-err));
}

/* Are paths @a and @b the same block device? */
static bool same_device(const char *a, const char *b)
{
	struct stat sa, sb;

	if (!stat(a, &sa) && !stat(b, &sb) && S_ISBLK(sa.st_mode) && S_ISBLK(sb.st_mode))
		return sa.st_rdev == sb.st_rdev;
	return !strcmp(a, b);
}

/*
 * Resolve every device, waiting up to @wait seconds for those not there
 * yet; then no two tiers may share one.
 */
static int resolve_all(struct apply_tier *as, unsigned int n, double wait)
{
	double until = now_secs() + wait;
	volatile sig_atomic_t never = 0;
	unsigned int i, j, missing;
	int err[KVT_MAX_TIERS] = { 0 }, ret = 0;

	for (;;) {
		missing = 0;
		for (i = 0; i < n; i++) {
			if (!as[i].dev[0] || err[i] == -ENOENT || err[i] == -ENODEV)
				err[i] = resolve(&as[i]);
			/* Only what may still appear is waited for. */
			missing += err[i] == -ENOENT || err[i] == -ENODEV;
		}
		if (!missing || now_secs() >= until)
			break;
		sleep_interruptible(0.25, &never);
	}
	for (i = 0; i < n; i++)
		if (err[i])
			ret = resolve_error(&as[i], err[i]);
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (!err[i] && !err[j] && same_device(as[i].dev, as[j].dev))
				ret = tier_error(&as[i], as[i].named, "%s is kvtier%u's namespace too (%s:%u)",
						 as[i].dev, as[j].id, as[j].named->file,
						 as[j].named->line);
	return ret;
}

/* Attach would refuse @a->dev: the same checks as attach without --force. */
static int check_device(struct apply_tier *a)
{
	struct kvt_nvme_id nid;
	struct kvt_devcheck c;

	kvt_dev_check(a->dev, &c);
	if (!(c.problems & KVT_DEV_UNREADABLE) &&
	    kvt_nvme_identify(a->dev, &nid) == -ENOTTY)
		c.problems |= KVT_DEV_NOT_NVME;
	if (!c.problems)
		return 0;
	kvt_dev_report(a->dev, &c, "");
	return tier_error(a, a->named, "not attaching %s (kvtierctl attach --force overrides these checks; apply never does)",
			  a->dev);
}

/* One watermark in the file, the other running: low < high still. */
static int check_watermarks(const struct apply_tier *a)
{
	const struct kvt_conf_item *hi = &a->t->knob[find_knob("watermark_high") - knobs];
	const struct kvt_conf_item *lo = &a->t->knob[find_knob("watermark_low") - knobs];
	uint64_t v;

	if (!hi->value == !lo->value)
		return 0;	/* both (conf.c checked them) or neither */
	if (lo->value && !tier_attr_u64(a->id, "watermark_high", &v) && lo->num >= v)
		return tier_error(a, lo, "watermark_low %llu must be below the running watermark_high %llu: set both",
				  (unsigned long long)lo->num, (unsigned long long)v);
	if (hi->value && !tier_attr_u64(a->id, "watermark_low", &v) && hi->num <= v)
		return tier_error(a, hi, "watermark_high %llu must be above the running watermark_low %llu: set both",
				  (unsigned long long)hi->num, (unsigned long long)v);
	return 0;
}

/*
 * Compare the running tier with the file: what apply must refuse.
 * Only called while the module is loaded.
 */
static int check_running(struct apply_tier *a)
{
	const struct kvt_conf_item *item;
	char backing[4096];
	unsigned int k;
	uint64_t v;
	int ret;

	ret = kvtier_tier_attr_get(a->id, "backing_dev", backing, sizeof(backing));
	if (ret)
		return tier_error(a, &a->t->at, "cannot read backing_dev: %s", strerror(-ret));
	if (strcmp(backing, "none")) {
		if (!same_device(backing, a->dev))
			return tier_error(a, a->named, "attached to %s, not %s: detach it first (kvtierctl detach %u)",
					  backing, a->dev, a->id);
		a->attached = true;
	}
	for (k = 0; k < nr_knobs; k++) {
		item = &a->t->knob[k];
		if (!item->value)
			continue;
		if (tier_attr_u64(a->id, knobs[k].name, &v))
			return tier_error(a, item, "this module has no knob %s (an older one?)",
					  knobs[k].name);
		if (knobs[k].detached && a->attached && v != item->num)
			return tier_error(a, item, "%s is %llu, the file says %llu: it changes only while detached (kvtierctl apply --detach, then apply)",
					  knobs[k].name, (unsigned long long)v,
					  (unsigned long long)item->num);
	}
	ret = check_watermarks(a);
	if (ret)
		return ret;
	a->attach = !a->attached;
	return a->attach ? check_device(a) : 0;
}

/* modprobe kvtier num_tiers=@n; 0 or EXIT_FAIL. */
static int load_module(unsigned int n)
{
	char arg[32], *argv[] = { "modprobe", "kvtier", arg, NULL };
	unsigned int have;
	int ret, status;
	pid_t pid;

	snprintf(arg, sizeof(arg), "num_tiers=%u", n);
	printf("%smodprobe kvtier %s\n", dry_run ? "(dry run) " : "", arg);
	if (dry_run)
		return 0;
	fflush(stdout);
	ret = posix_spawnp(&pid, "modprobe", NULL, NULL, argv, environ);
	if (ret)
		return fail("modprobe: %s", strerror(ret));
	if (waitpid(pid, &status, 0) < 0)
		return fail("modprobe: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("modprobe kvtier %s failed (is the module built for the running kernel? dkms status)",
			    arg);
	if (read_num_tiers(&have))
		return fail("modprobe kvtier %s: no /sys/module/kvtier/parameters/num_tiers after it",
			    arg);
	if (have < n)
		return fail("modprobe kvtier %s: the module has %u tiers", arg, have);
	return 0;
}

/*
 * The order to write @a's knobs in: the detached-only ones first; the
 * watermarks so that low < high holds after each write (the kernel
 * refuses anything else): high first, unless the new high is not above
 * the running low.
 */
static void knob_order(const struct apply_tier *a, unsigned int *order)
{
	unsigned int hi = find_knob("watermark_high") - knobs;
	unsigned int lo = find_knob("watermark_low") - knobs;
	unsigned int k, n = 0, pass;
	uint64_t cur_lo;

	for (pass = 0; pass < 2; pass++)
		for (k = 0; k < nr_knobs; k++)
			if (knobs[k].detached == !pass)
				order[n++] = k;
	if (!a->t->knob[hi].value || !a->t->knob[lo].value ||
	    tier_attr_u64(a->id, "watermark_low", &cur_lo) ||
	    a->t->knob[hi].num > cur_lo)
		return;
	for (k = 0; k < n; k++)
		order[k] = order[k] == hi ? lo : order[k] == lo ? hi : order[k];
}

/*
 * Set @a's knobs and attach it; 0, or EXIT_FAIL (reported). @unloaded: a
 * dry run before the module is loaded, which lists every configured knob.
 */
static int apply_tier(struct apply_tier *a, bool unloaded, unsigned int *changes)
{
	const struct kvt_conf_item *item;
	unsigned int order[KVT_CONF_MAX_KNOBS], i, k;
	char buf[32];
	uint64_t v;
	int ret;

	knob_order(a, order);
	for (i = 0; i < nr_knobs; i++) {
		k = order[i];
		item = &a->t->knob[k];
		if (!item->value)
			continue;
		if (unloaded) {		/* a dry run: no values to compare */
			report(a->id, "%s -> %llu", knobs[k].name,
			       (unsigned long long)item->num);
			(*changes)++;
			continue;
		}
		ret = tier_attr_u64(a->id, knobs[k].name, &v);
		if (ret)
			return tier_error(a, item, "cannot read %s: %s", knobs[k].name,
					  strerror(-ret));
		if (v == item->num)
			continue;
		report(a->id, "%s %llu -> %llu", knobs[k].name, (unsigned long long)v,
		       (unsigned long long)item->num);
		(*changes)++;
		if (dry_run)
			continue;
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)item->num);
		ret = kvtier_tier_attr_set(a->id, knobs[k].name, buf);
		if (ret)
			return tier_error(a, item, "%s = %s: refused by the kernel: %s; not attaching",
					  knobs[k].name, buf, strerror(-ret));
	}
	if (!a->attach)
		return 0;
	if (a->t->nqn.value)
		report(a->id, "attach %s (subsystem %s)", a->dev, a->t->nqn.value);
	else
		report(a->id, "attach %s", a->dev);
	(*changes)++;
	if (dry_run)
		return 0;
	ret = kvtier_attach(a->id, a->dev);
	if (ret) {
		attach_error(a->id, a->dev, false, ret);
		return tier_error(a, a->named, "not attached");
	}
	return 0;
}

/*
 * --detach: detach every configured tier that is attached; @all: every
 * attached tier (the configuration could not be read).
 */
static int detach_all(struct apply_tier *as, unsigned int n, bool all)
{
	unsigned int i, id, have;
	char backing[4096];
	int ret, status = EXIT_OK;

	if (read_num_tiers(&have)) {
		printf("the kvtier module is not loaded: nothing to detach\n");
		return EXIT_OK;
	}
	for (i = 0; i < (all ? have : n); i++) {
		id = all ? i : as[i].id;
		if (id >= have)
			continue;
		ret = kvtier_tier_attr_get(id, "backing_dev", backing, sizeof(backing));
		if (ret) {
			status = fail("kvtier%u: cannot read backing_dev: %s", id, strerror(-ret));
			continue;
		}
		if (!strcmp(backing, "none"))
			continue;
		report(id, "detach %s", backing);
		if (dry_run)
			continue;
		ret = kvtier_detach(id);
		if (ret)
			status = fail("detach kvtier%u: %s%s", id, strerror(-ret),
				      ret == -EBUSY ? " (the tier is open, or has named regions that are not persistent)" : "");
	}
	return status;
}

/*
 * Step 2 for every tier against the running module (@loaded) or, before
 * it is loaded, the devices only; every problem is reported.
 */
static int check_all(struct apply_tier *as, unsigned int n, bool loaded)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (loaded ? check_running(&as[i]) : check_device(&as[i]))
			ret = EXIT_FAIL;
		if (!loaded)
			as[i].attach = true;
	}
	return ret;
}

int cmd_apply(const struct cmd *cmd, int argc, char **argv)
{
	const char *opt[OPT_NR] = { NULL };
	struct apply_tier as[KVT_MAX_TIERS];
	unsigned int i, n = 0, need = 0, have, changes = 0;
	char path[4096];
	struct kvt_conf c;
	bool loaded;
	double wait = 0;
	int first, ret = EXIT_OK;

	first = parse_opts(cmd, argc, argv, "nC:dw:", opt);
	if (first < 0)
		return EXIT_USAGE;
	if (opt_json)
		return usage_error(cmd, "apply has no --json output");
	if (first != argc)
		return usage_error(cmd, "apply: no operands (the tiers are in the configuration)");
	if (opt[OPT_WAIT] && strcmp(opt[OPT_WAIT], "0") &&
	    parse_interval(opt[OPT_WAIT], &wait))
		return usage_error(cmd, "apply: --wait '%s' is not seconds (0 to 3600)",
				   opt[OPT_WAIT]);
	dry_run = opt[OPT_DRY_RUN];
	if (opt[OPT_CONFIG])
		snprintf(path, sizeof(path), "%s", opt[OPT_CONFIG]);
	else
		snprintf(path, sizeof(path), "%s", KVT_CONF_PATH);

	if (kvt_conf_read(&c, path)) {
		kvt_conf_free(&c);
		if (!opt[OPT_DETACH])
			return fail("%s: nothing changed", path);
		/* At shutdown a typo must not keep the tiers attached. */
		warn("%s cannot be read: detaching every attached tier", path);
		return detach_all(as, 0, true);
	}
	for (i = 0; i < KVT_MAX_TIERS; i++) {
		if (!c.tier[i].present)
			continue;
		memset(&as[n], 0, sizeof(as[n]));
		as[n].id = i;
		as[n].t = &c.tier[i];
		as[n].named = c.tier[i].device.value ? &c.tier[i].device : &c.tier[i].nqn;
		need = i + 1;
		n++;
	}
	if (!n) {
		printf("%s configures no tier: nothing to do\n", path);
		goto out;
	}
	if (opt[OPT_DETACH]) {
		ret = detach_all(as, n, false);
		goto out;
	}

	/* Step 2: everything that can refuse, before any change. */
	ret = resolve_all(as, n, wait);
	loaded = !read_num_tiers(&have);
	if (loaded && have < need)
		ret = fail("the kvtier module is loaded with num_tiers=%u; the configuration names kvtier%u: unload it (modprobe -r kvtier) and apply again",
			   have, need - 1);
	if (!ret)
		ret = check_all(as, n, loaded);
	if (ret) {
		ret = fail("%s: nothing changed", path);
		goto out;
	}

	/* Step 3: the changes, each reported. */
	if (!loaded) {
		ret = load_module(need);
		changes++;
		if (ret)
			goto out;
		/* The knobs and watermarks against the module just loaded. */
		if (!dry_run && check_all(as, n, true)) {
			ret = fail("%s: nothing changed but loading the module", path);
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		unsigned int before = changes;

		if (apply_tier(&as[i], !loaded && dry_run, &changes))
			ret = EXIT_FAIL;
		else if (changes == before)
			report(as[i].id, "as configured (%s)", as[i].dev);
	}
	if (dry_run)
		printf("(dry run) %u change%s, nothing changed\n", changes,
		       changes == 1 ? "" : "s");
out:
	kvt_conf_free(&c);
	return ret;
}
