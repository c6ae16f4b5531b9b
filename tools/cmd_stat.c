// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl stat (one line per interval, vmstat style) and top (a live
 * full-screen view in plain ANSI, or plain frames when stdout is not a
 * terminal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

enum { OPT_INTERVAL, OPT_COUNT, OPT_NR };

struct watch {
	unsigned int id;
	double interval;
	uint64_t count;		/* 0: until interrupted */
};

static volatile sig_atomic_t stop;

/* Seconds since the epoch, with the fraction: the JSON lines' "time". */
static double wall_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* A tier operand written as one: kvtierN or /dev/kvtierN, not a bare number. */
static bool tier_named(const char *s)
{
	return !strncmp(s, "kvtier", 6) || !strncmp(s, "/dev/", 5);
}

/*
 * The options and operands of stat and top: [TIER] [INTERVAL [COUNT]] as
 * vmstat takes them, the tier written kvtierN or /dev/kvtierN (a bare
 * number is the interval); or, as before, -i SECONDS, -c COUNT and a tier
 * that may be a bare number.
 */
static int parse_watch(const struct cmd *cmd, int argc, char **argv,
		       double def_interval, struct watch *w)
{
	const char *opt[OPT_NR] = { NULL };
	const char *interval, *count;
	int op, left;

	op = parse_opts(cmd, argc, argv, "i:c:", opt);
	if (op < 0)
		return EXIT_USAGE;
	w->id = 0;
	w->interval = def_interval;
	w->count = 0;
	interval = opt[OPT_INTERVAL];
	count = opt[OPT_COUNT];
	left = argc - op;
	if (interval || count) {
		int ret = tier_operand(cmd, argc, argv, op, &w->id);

		if (ret)
			return ret;
	} else {
		if (left && tier_named(argv[op])) {
			if (parse_tier(argv[op], &w->id))
				return usage_error(cmd, "%s: bad TIER '%s' (kvtier0..kvtier%d)",
						   cmd->name, argv[op], KVT_MAX_TIERS - 1);
			op++;
			left--;
		}
		if (left > 2)
			return usage_error(cmd, "%s: too many arguments", cmd->name);
		interval = left > 0 ? argv[op] : NULL;
		count = left > 1 ? argv[op + 1] : NULL;
	}
	if (interval && parse_interval(interval, &w->interval))
		return usage_error(cmd, "%s: bad interval '%s' (seconds, 0.01..3600; a tier is written kvtierN)",
				   cmd->name, interval);
	if (count && (parse_u64(count, &w->count) || !w->count))
		return usage_error(cmd, "%s: bad count '%s' (a positive number)",
				   cmd->name, count);
	return tier_check(w->id);
}

static int sample(unsigned int id, struct kvt_sample *s)
{
	int ret = kvt_sample_take(id, s);

	return ret ? debugfs_error(id, "stats", ret) : 0;
}

int cmd_stat(const struct cmd *cmd, int argc, char **argv)
{
	struct kvt_sample *s = calloc(2, sizeof(*s));
	struct kvt_rates r;
	struct watch w;
	uint64_t n;
	int ret, cur = 0;

	if (!s)
		return fail("out of memory");
	ret = parse_watch(cmd, argc, argv, 1.0, &w);
	if (!ret)
		ret = sample(w.id, &s[cur]);
	catch_signals();
	if (!ret && !opt_json)
		kvt_rates_print_header(stdout);
	for (n = 0; !ret && (!w.count || n < w.count); n++) {
		if (!sleep_interruptible(w.interval, &stop))
			break;
		ret = sample(w.id, &s[!cur]);
		if (ret)
			break;
		kvt_rates_compute(&s[cur], &s[!cur], &r);
		if (opt_json)
			kvt_rates_print_json(stdout, w.id, wall_secs(), &r);
		else
			kvt_rates_print(stdout, &r);
		fflush(stdout);
		cur = !cur;
	}
	free(s);
	return ret;
}

/* --- top ----------------------------------------------------------------- */

struct screen {
	bool tty;		/* stdout: full-screen frames */
	bool keys;		/* stdin: read q */
	struct termios saved;
};

static struct screen scr;

static void screen_restore(void)
{
	if (scr.keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &scr.saved);
	if (scr.tty)
		fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	scr.keys = scr.tty = false;
}

static void screen_init(void)
{
	struct termios t;

	scr.tty = isatty(STDOUT_FILENO);
	if (scr.tty && isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &scr.saved)) {
		t = scr.saved;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);	/* ISIG stays: Ctrl-C */
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		scr.keys = !tcsetattr(STDIN_FILENO, TCSANOW, &t);
	}
	if (scr.tty)
		fputs("\033[?1049h\033[?25l", stdout);	/* alternate screen */
	atexit(screen_restore);
}

static unsigned int screen_rows(void)
{
	struct winsize ws;

	if (!scr.tty || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) || !ws.ws_row)
		return 0;	/* unlimited */
	return ws.ws_row;
}

/* Wait @secs, or less when q is pressed or a signal arrives. */
static void wait_frame(double secs)
{
	double end = now_secs() + secs, left;
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char c;

	if (!scr.keys) {
		sleep_interruptible(secs, &stop);
		return;
	}
	while (!stop && (left = end - now_secs()) > 0) {
		if (poll(&p, 1, (int)ceil(left * 1000)) > 0 &&
		    read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
			stop = 1;
	}
}

/* What a frame shows besides the rates. */
struct top_state {
	unsigned int id;
	double interval;
	char backing[512], state[32], ident[128];
	struct kvt_sample s[2];
	int cur;
	struct kvt_rates rates, prev_rates;
	bool have_prev_rates;
	unsigned long frames;
	struct kvt_regions regions[2];
	int regions_err;
};

static void top_identity(struct top_state *t)
{
	struct kvt_nvme_id id;

	kvtier_tier_attr_get(t->id, "backing_dev", t->backing, sizeof(t->backing));
	if (kvtier_tier_attr_get(t->id, "state", t->state, sizeof(t->state)))
		snprintf(t->state, sizeof(t->state), "?");
	t->ident[0] = '\0';
	if (strcmp(t->backing, "none") && !kvt_nvme_identify(t->backing, &id))
		snprintf(t->ident, sizeof(t->ident), "%s, serial %s", id.model,
			 id.serial);
}

static uint64_t gauge_bytes(const struct kvt_sample *s, const char *name)
{
	uint64_t v = 0;

	kvt_stats_get(&s->stats, name, &v);
	return v * 4096;
}

static double region_fault_rate(const struct top_state *t,
				const struct kvt_region *r)
{
	const struct kvt_regions *p = &t->regions[!t->cur];
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->r[i].id == r->id)
			return r->faults >= p->r[i].faults ?
			       (double)(r->faults - p->r[i].faults) / t->rates.secs : 0;
	return (double)r->faults / t->rates.secs;	/* new in this interval */
}

static const struct top_state *sort_ctx;

/* Most faults in the interval first, then most faults in all. */
static int by_faults(const void *a, const void *b)
{
	const struct kvt_region *ra = a, *rb = b;
	double fa = region_fault_rate(sort_ctx, ra), fb = region_fault_rate(sort_ctx, rb);

	if (fa != fb)
		return fa < fb ? 1 : -1;
	if (ra->faults != rb->faults)
		return ra->faults < rb->faults ? 1 : -1;
	return ra->id < rb->id ? -1 : ra->id > rb->id;
}

/* Batching at a glance: the median bio of the interval, each way. */
static void print_bio_medians(const struct top_state *t)
{
	const struct kvt_sample *a = &t->s[!t->cur], *b = &t->s[t->cur];
	uint64_t rd = kvt_io_median(a, b, "read"), wr = kvt_io_median(a, b, "write");
	char x[32], y[32];

	printf("median bio  read %s  write-back %s\n",
	       rd ? fmt_size(x, sizeof(x), rd) : "-",
	       wr ? fmt_size(y, sizeof(y), wr) : "-");
}

static void draw_summary(const struct top_state *t)
{
	const struct kvt_sample *s = &t->s[t->cur];
	uint64_t budget = gauge_bytes(s, "budget_pages");
	char a[32], b[32], c[32], d[32], e[32], f[32];
	uint64_t pinned = 0;
	size_t i;

	for (i = 0; i < t->regions[t->cur].n; i++)
		pinned += t->regions[t->cur].r[i].pinned;
	printf("kvtier%u  %s  %s%s%s%s   every %.1fs%s\n", t->id, t->state, t->backing,
	       *t->ident ? " (" : "", t->ident, *t->ident ? ")" : "", t->interval,
	       scr.keys ? "   q: quit" : "");
	printf("namespace %s used %s (%.1f%%)   budget %s resident %s   dirty %s   pinned %s\n",
	       fmt_size(a, sizeof(a), s->capacity), fmt_size(b, sizeof(b), s->used),
	       s->capacity ? 100.0 * (double)s->used / (double)s->capacity : 0.0,
	       fmt_size(c, sizeof(c), budget),
	       fmt_size(d, sizeof(d), gauge_bytes(s, "resident_pages")),
	       fmt_size(e, sizeof(e), gauge_bytes(s, "dirty_pages")),
	       fmt_size(f, sizeof(f), pinned));
	print_bio_medians(t);
	putchar('\n');
	kvt_rates_print_header(stdout);
	kvt_rates_print(stdout, &t->rates);
}

/* The warnings in words; returns the number of lines printed. */
static unsigned int draw_warnings(const struct top_state *t)
{
	unsigned int w = kvt_warnings(&t->rates,
				      t->have_prev_rates ? &t->prev_rates : NULL,
				      &t->s[t->cur]);
	unsigned int bit, lines = 0;

	putchar('\n');
	for (bit = 1; bit <= KVT_WARN_FULL; bit <<= 1) {
		if (w & bit) {
			printf("WARNING: %s\n", kvt_warning_text((enum kvt_warning)bit));
			lines++;
		}
	}
	if (!lines) {
		puts("no warnings");
		lines = 1;
	}
	return lines + 1;
}

static void draw_regions(struct top_state *t, unsigned int room)
{
	struct kvt_regions *rs = &t->regions[t->cur];
	struct table_view v;
	char lead[32];
	size_t i;

	putchar('\n');
	table_select(NULL, &regions_table, NULL, false, false, &v);
	if (t->regions_err) {
		printf("(no per-region view: regions: %s)\n", strerror(-t->regions_err));
		return;
	}
	sort_ctx = t;
	qsort(rs->r, rs->n, sizeof(*rs->r), by_faults);
	table_header(&v, " FAULTS/s");
	for (i = 0; i < rs->n && (!room || i < room); i++) {
		snprintf(lead, sizeof(lead), "%9.0f", region_fault_rate(t, &rs->r[i]));
		table_row(&v, &rs->r[i], lead);
	}
	if (i < rs->n)
		printf("... %zu more regions\n", rs->n - i);
	if (!rs->n)
		puts("(no regions)");
}

static void draw_frame(struct top_state *t)
{
	unsigned int rows = screen_rows(), used = 7;

	if (scr.tty)
		fputs("\033[H\033[J", stdout);
	else
		puts("----");
	draw_summary(t);
	used += draw_warnings(t);
	/* Header, the "more" line and a spare line stay free. */
	draw_regions(t, rows ? (rows > used + 4 ? rows - used - 4 : 1) : 0);
	fflush(stdout);
}

/* Take the next sample and regions; rates against the previous ones. */
static int top_step(struct top_state *t)
{
	int ret, next = !t->cur;

	ret = sample(t->id, &t->s[next]);
	if (ret)
		return ret;
	/* Slot @next held the sample before the previous one: reuse it. */
	kvt_regions_free(&t->regions[next]);
	t->regions_err = tier_regions(t->id, &t->regions[next]);
	t->cur = next;
	t->prev_rates = t->rates;
	t->have_prev_rates = t->frames++ > 0;
	kvt_rates_compute(&t->s[!next], &t->s[next], &t->rates);
	return 0;
}

int cmd_top(const struct cmd *cmd, int argc, char **argv)
{
	struct top_state *t = calloc(1, sizeof(*t));
	struct watch w;
	uint64_t n;
	int ret;

	if (!t)
		return fail("out of memory");
	ret = parse_watch(cmd, argc, argv, 2.0, &w);
	if (!ret && opt_json)
		ret = usage_error(cmd, "top has no --json output: use stat --json");
	if (!ret) {
		t->id = w.id;
		t->interval = w.interval;
		top_identity(t);
		ret = sample(t->id, &t->s[0]);
		t->regions_err = tier_regions(t->id, &t->regions[0]);
	}
	if (!ret) {
		catch_signals();
		screen_init();
	}
	for (n = 0; !ret && (!w.count || n < w.count); n++) {
		wait_frame(w.interval);
		if (stop)
			break;
		ret = top_step(t);
		if (!ret)
			draw_frame(t);
	}
	screen_restore();
	kvt_regions_free(&t->regions[0]);
	kvt_regions_free(&t->regions[1]);
	free(t);
	return ret;
}
