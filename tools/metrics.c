// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: from two snapshots of a tier to the numbers `stat` and `top`
 * show: rates per second, the fault latency percentiles of the interval,
 * and the warnings in words.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

/* The histograms whose sum is "fault latency". */
static const char * const fault_hists[] = {
	"fault_minor", "fault_major", "fault_zero",
};

#define NR_FAULT_HISTS	(sizeof(fault_hists) / sizeof(fault_hists[0]))

/* Warning thresholds, documented in kvtierctl(8). */
#define REFAULT_MIN_PER_S	10.0	/* below this, refaults are noise */
#define REFAULT_FRACTION	0.05	/* of faults */
#define P99_RISE_FACTOR		2.0
#define P99_RISE_MIN_US		1000.0
#define FULL_FRACTION		0.9

double now_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

bool sleep_interruptible(double secs, volatile sig_atomic_t *stop)
{
	double end = now_secs() + secs, left;
	struct timespec ts;

	while (!*stop && (left = end - now_secs()) > 0) {
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);	/* EINTR: look at *stop again */
	}
	return !*stop;
}

int kvt_sample_take(unsigned int id, struct kvt_sample *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->t = now_secs();
	ret = tier_stats(id, &s->stats);
	if (ret)
		return ret;
	s->have_latency = !tier_latency(id, &s->latency);
	s->have_io = !tier_io(id, &s->io);
	tier_attr_u64(id, "capacity", &s->capacity);
	tier_attr_u64(id, "used", &s->used);
	return 0;
}

/* Growth of counter @name from @a to @b; NaN when the module has none. */
static double delta(const struct kvt_sample *a, const struct kvt_sample *b,
		    const char *name)
{
	uint64_t x, y;

	if (!kvt_stats_get(&a->stats, name, &x) ||
	    !kvt_stats_get(&b->stats, name, &y))
		return NAN;
	return y >= x ? (double)(y - x) : 0;	/* reloaded: start over */
}

/* Sum of the fault histograms' growth from @a to @b into @d. */
static unsigned int fault_hist_delta(const struct kvt_sample *a,
				     const struct kvt_sample *b, uint64_t *d)
{
	unsigned int n = b->latency.buckets, i;
	const struct kvt_hist *ha, *hb;
	size_t k;

	if (!a->have_latency || !b->have_latency || a->latency.buckets != n)
		return 0;
	memset(d, 0, n * sizeof(*d));
	for (k = 0; k < NR_FAULT_HISTS; k++) {
		ha = kvt_histset_get(&a->latency, fault_hists[k]);
		hb = kvt_histset_get(&b->latency, fault_hists[k]);
		if (!ha || !hb)
			continue;
		for (i = 0; i < n; i++)
			d[i] += hb->c[i] >= ha->c[i] ? hb->c[i] - ha->c[i] : 0;
	}
	return n;
}

/*
 * Upper bound in µs of the bucket holding quantile @q of @c (N buckets):
 * bucket 0 is < 1 µs, bucket i < 2^i µs, the last one is unbounded and
 * gives its lower bound with *@open set. NaN when there are no events.
 */
static double quantile_us(const uint64_t *c, unsigned int n, double q,
			  bool *open)
{
	uint64_t total = 0, sum = 0, target;
	unsigned int i;

	*open = false;
	for (i = 0; i < n; i++)
		total += c[i];
	if (!total)
		return NAN;
	target = (uint64_t)ceil(q * (double)total);
	if (!target)
		target = 1;
	for (i = 0; i < n && sum + c[i] < target; i++)
		sum += c[i];
	if (i + 1 >= n && n > 1) {
		*open = true;
		return ldexp(1.0, (int)n - 2);
	}
	return ldexp(1.0, (int)i);
}

void kvt_rates_compute(const struct kvt_sample *a, const struct kvt_sample *b,
		       struct kvt_rates *r)
{
	double secs = b->t - a->t, faults, major;
	uint64_t d[KVT_BUCKETS_MAX];
	unsigned int n;

	if (secs <= 0)
		secs = 1e-9;
	faults = delta(a, b, "faults_minor") + delta(a, b, "faults_major") +
		 delta(a, b, "faults_zero_fill");
	major = delta(a, b, "faults_major");
	r->secs = secs;
	r->faults = faults / secs;
	r->major_pct = faults > 0 ? 100.0 * major / faults : (isnan(faults) ? NAN : 0);
	r->read_mb = delta(a, b, "read_bytes") / 1e6 / secs;
	r->wb_mb = delta(a, b, "writeback_bytes") / 1e6 / secs;
	r->refaults = delta(a, b, "refaults") / secs;
	n = fault_hist_delta(a, b, d);
	r->p50_us = n ? quantile_us(d, n, 0.50, &r->p50_open) : NAN;
	r->p99_us = n ? quantile_us(d, n, 0.99, &r->p99_open) : NAN;
}

/* io bucket i counts bios of 2^i pages. */
uint64_t kvt_io_median(const struct kvt_sample *a, const struct kvt_sample *b,
		       const char *name)
{
	const struct kvt_hist *ha, *hb;
	uint64_t d[KVT_BUCKETS_MAX];
	unsigned int i, n = b->io.buckets;
	bool open;
	double q;

	if (!a->have_io || !b->have_io || a->io.buckets != n)
		return 0;
	ha = kvt_histset_get(&a->io, name);
	hb = kvt_histset_get(&b->io, name);
	if (!ha || !hb)
		return 0;
	for (i = 0; i < n; i++)
		d[i] = hb->c[i] >= ha->c[i] ? hb->c[i] - ha->c[i] : 0;
	/* quantile_us() gives 2^i for bucket i (below the last one). */
	q = quantile_us(d, n, 0.5, &open);
	if (isnan(q))
		return 0;
	return (uint64_t)(open ? ldexp(1.0, (int)n - 1) : q) * 4096;
}

void kvt_rates_print_header(FILE *f)
{
	fprintf(f, "%9s %6s %9s %9s %10s %8s %8s\n", "faults/s", "major%",
		"read_MB/s", "wb_MB/s", "refaults/s", "p50_us", "p99_us");
}

/* "%.*f" of @v in @width, or "-" for NaN. */
static void print_num(FILE *f, int width, int prec, double v)
{
	if (isnan(v))
		fprintf(f, "%*s", width, "-");
	else
		fprintf(f, "%*.*f", width, prec, v);
}

static void print_us(FILE *f, int width, double us, bool open)
{
	char buf[32];

	if (isnan(us))
		snprintf(buf, sizeof(buf), "-");
	else
		snprintf(buf, sizeof(buf), "%s%.0f", open ? ">" : "", us);
	fprintf(f, "%*s", width, buf);
}

void kvt_rates_print(FILE *f, const struct kvt_rates *r)
{
	print_num(f, 9, 0, r->faults);
	print_num(f, 7, 1, r->major_pct);
	print_num(f, 10, 1, r->read_mb);
	print_num(f, 10, 1, r->wb_mb);
	print_num(f, 11, 1, r->refaults);
	print_us(f, 9, r->p50_us, r->p50_open);
	print_us(f, 9, r->p99_us, r->p99_open);
	fputc('\n', f);
}

static void json_rate(FILE *f, bool *first, const char *key, double v)
{
	if (isnan(v))
		json_key_null(f, first, key);
	else
		json_key_num(f, first, key, v);
}

void kvt_rates_print_json(FILE *f, unsigned int id, double time,
			  const struct kvt_rates *r)
{
	bool first = true;

	fputc('{', f);
	json_key_num(f, &first, "time", time);
	json_key_u64(f, &first, "tier", id);
	json_rate(f, &first, "interval_s", r->secs);
	json_rate(f, &first, "faults_per_s", r->faults);
	json_rate(f, &first, "major_pct", r->major_pct);
	json_rate(f, &first, "read_mb_per_s", r->read_mb);
	json_rate(f, &first, "writeback_mb_per_s", r->wb_mb);
	json_rate(f, &first, "refaults_per_s", r->refaults);
	json_rate(f, &first, "fault_p50_us", r->p50_us);
	json_rate(f, &first, "fault_p99_us", r->p99_us);
	fputs("}\n", f);
}

unsigned int kvt_warnings(const struct kvt_rates *now,
			  const struct kvt_rates *prev,
			  const struct kvt_sample *s)
{
	unsigned int w = 0;

	if (now->refaults >= REFAULT_MIN_PER_S &&
	    now->refaults > REFAULT_FRACTION * now->faults)
		w |= KVT_WARN_REFAULT;
	if (prev && now->p99_us > P99_RISE_FACTOR * prev->p99_us &&
	    now->p99_us > P99_RISE_MIN_US)
		w |= KVT_WARN_P99;
	if (s->capacity && (double)s->used > FULL_FRACTION * (double)s->capacity)
		w |= KVT_WARN_FULL;
	return w;	/* comparisons with NaN are false: unknown warns not */
}

const char *kvt_warning_text(enum kvt_warning w)
{
	switch (w) {
	case KVT_WARN_REFAULT:
		return "refaulting: host budget too small";
	case KVT_WARN_P99:
		return "p99 fault latency rising";
	case KVT_WARN_FULL:
		return "namespace nearly full";
	}
	return "?";
}

const char *fmt_time(char *buf, size_t len, int64_t secs)
{
	time_t t = (time_t)secs;
	struct tm tm;

	if (!secs || !localtime_r(&t, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "-");
	return buf;
}

const char *fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%lluB", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f%c", v, units[u]);
	return buf;
}
