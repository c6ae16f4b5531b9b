// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: parsers of the module's debugfs files, one per format
 * (Documentation/admin-guide/kvtier.rst):
 *
 *   stats            "kvtier-stats 1", then "name value" lines
 *   latency, io      "kvtier-latency 2" / "kvtier-io 2", "buckets N",
 *                    then "name c0 .. c(N-1) sum" lines (version 1, still
 *                    read: the same without the sums)
 *   regions          "kvtier-regions 1", a header naming the columns,
 *                    then one line per region
 *   gpu_ranges       "kvtier-gpu 1", a header naming the columns, then
 *                    one line per registered GPU range
 *
 * Lines and columns are looked up by name, and names this version does not
 * know are skipped: the module may add them without a version change. A
 * version other than 1 means an existing line changed meaning: refused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define FORMAT_VERSION	1
#define SEPS		" \t\n"

/* Reads a line at a time; owns the buffer. */
struct reader {
	FILE *f;
	char *line;
	size_t cap;
};

static char *next_line(struct reader *r)
{
	return getline(&r->line, &r->cap, r->f) < 0 ? NULL : r->line;
}

/* Tokens of @line into @tok; returns how many (at most @max). */
static size_t split(char *line, char **tok, size_t max)
{
	char *save = NULL, *t;
	size_t n = 0;

	for (t = strtok_r(line, SEPS, &save); t && n < max;
	     t = strtok_r(NULL, SEPS, &save))
		tok[n++] = t;
	return n;
}

/* A count; gauges read racily may print a transient negative: 0. */
static int parse_count(const char *s, uint64_t *v)
{
	if (*s == '-' && s[1] >= '0' && s[1] <= '9' && !parse_u64(s + 1, v)) {
		*v = 0;
		return 0;
	}
	return parse_u64(s, v);
}

/* The first line, "MAGIC VERSION", VERSION in 1..@max: VERSION or -errno. */
static int read_header(struct reader *r, const char *magic, uint64_t max)
{
	char *tok[3], *line = next_line(r);
	uint64_t v;

	if (!line || split(line, tok, 3) != 2 || strcmp(tok[0], magic) ||
	    parse_u64(tok[1], &v))
		return -EPROTO;
	return v >= 1 && v <= max ? (int)v : -EPROTONOSUPPORT;
}

static int check_header(struct reader *r, const char *magic)
{
	int ret = read_header(r, magic, FORMAT_VERSION);

	return ret < 0 ? ret : 0;
}

static void copy_name(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

/* Like copy_name, but a token too long for @dst is malformed. */
static int copy_token(char *dst, size_t len, const char *src)
{
	if (strlen(src) >= len)
		return -EPROTO;
	copy_name(dst, len, src);
	return 0;
}

/* "0x" and 1 to 16 hex digits. */
static int parse_hex(const char *s, uint64_t *v)
{
	size_t i, n;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -EINVAL;
	s += 2;
	n = strlen(s);
	if (!n || n > 16)
		return -EINVAL;
	*v = 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else
			return -EINVAL;
		*v = *v << 4 | d;
	}
	return 0;
}

#define COLS_MAX	32

/*
 * A header line naming the columns: @cols[i] is the index in @names of
 * column i, or @nnames for a name this version does not know. Column
 * @required (an index in @names) must be there.
 */
static int parse_col_header(struct reader *r, const char * const *names,
			    int nnames, int required, int *cols, size_t *ncols)
{
	char *tok[COLS_MAX + 1], *line = next_line(r);
	bool have_required = false;
	size_t i;
	int c;

	if (!line)
		return -EPROTO;
	*ncols = split(line, tok, COLS_MAX + 1);
	if (*ncols > COLS_MAX)
		return -EPROTO;
	for (i = 0; i < *ncols; i++) {
		for (c = 0; c < nnames && strcmp(names[c], tok[i]); c++)
			;
		cols[i] = c;
		have_required |= c == required;
	}
	return have_required ? 0 : -EPROTO;
}

/*
 * @arr (holding @n elements of @size, room for *@cap) with room for one
 * more: @arr itself, or its reallocation; NULL when out of memory (@arr
 * is still valid then).
 */
static void *grow(void *arr, size_t size, size_t n, size_t *cap)
{
	size_t want = *cap ? *cap * 2 : 16;
	void *p;

	if (n < *cap)
		return arr;
	p = realloc(arr, want * size);
	if (p)
		*cap = want;
	return p;
}

int kvt_stats_parse(FILE *f, struct kvt_stats *s)
{
	struct reader r = { .f = f };
	char *tok[3], *line;
	int ret;

	s->n = 0;
	ret = check_header(&r, "kvtier-stats");
	while (!ret && (line = next_line(&r))) {
		if (split(line, tok, 3) != 2 || parse_count(tok[1], &s->e[s->n].value)) {
			ret = -EPROTO;
			break;
		}
		if (s->n == KVT_STATS_MAX)
			continue;	/* more names than we know: ignore */
		copy_name(s->e[s->n].name, KVT_NAME_LEN, tok[0]);
		s->n++;
	}
	free(r.line);
	return ret;
}

bool kvt_stats_get(const struct kvt_stats *s, const char *name, uint64_t *v)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (!strcmp(s->e[i].name, name)) {
			*v = s->e[i].value;
			return true;
		}
	}
	return false;
}

/* "buckets N" */
static int parse_buckets(struct reader *r, unsigned int *n)
{
	char *tok[3], *line = next_line(r);
	uint64_t v;

	if (!line || split(line, tok, 3) != 2 || strcmp(tok[0], "buckets") ||
	    parse_u64(tok[1], &v) || !v || v > KVT_BUCKETS_MAX)
		return -EPROTO;
	*n = (unsigned int)v;
	return 0;
}

/* "name c0 .. c(N-1)", and with @has_sum " sum", into @h. */
static int parse_hist_row(char *line, unsigned int buckets, bool has_sum,
			  struct kvt_hist *h)
{
	char *tok[KVT_BUCKETS_MAX + 3];
	unsigned int i;

	if (split(line, tok, KVT_BUCKETS_MAX + 3) != buckets + 1 + has_sum)
		return -EPROTO;
	copy_name(h->name, KVT_NAME_LEN, tok[0]);
	for (i = 0; i < buckets; i++)
		if (parse_u64(tok[i + 1], &h->c[i]))
			return -EPROTO;
	h->has_sum = has_sum;
	h->sum = 0;
	if (has_sum && parse_u64(tok[buckets + 1], &h->sum))
		return -EPROTO;
	return 0;
}

int kvt_histset_parse(FILE *f, const char *magic, struct kvt_histset *hs)
{
	struct reader r = { .f = f };
	struct kvt_hist spare;
	bool has_sum;
	char *line;
	int ret;

	hs->n = 0;
	ret = read_header(&r, magic, 2);
	has_sum = ret == 2;
	if (ret > 0)
		ret = parse_buckets(&r, &hs->buckets);
	while (!ret && (line = next_line(&r))) {
		/* Rows beyond KVT_HIST_MAX are checked, then dropped. */
		ret = parse_hist_row(line, hs->buckets, has_sum,
				     hs->n < KVT_HIST_MAX ? &hs->h[hs->n] : &spare);
		if (!ret && hs->n < KVT_HIST_MAX)
			hs->n++;
	}
	free(r.line);
	return ret;
}

const struct kvt_hist *kvt_histset_get(const struct kvt_histset *hs,
				       const char *name)
{
	size_t i;

	for (i = 0; i < hs->n; i++)
		if (!strcmp(hs->h[i].name, name))
			return &hs->h[i];
	return NULL;
}

/* The columns of `regions` this version knows; others are skipped. */
enum region_col {
	COL_ID, COL_NAME, COL_OWNER, COL_SIZE, COL_RESIDENT, COL_DIRTY,
	COL_NS, COL_PINNED, COL_FAULTS, COL_REFAULTS, COL_IDLE, COL_GPU,
	COL_NR, COL_UNKNOWN = COL_NR,
};

static const char * const region_cols[COL_NR] = {
	"id", "name", "owner", "size", "resident", "dirty", "namespace",
	"pinned", "faults", "refaults", "idle_ms", "gpu_bytes",
};

static uint64_t *region_field(struct kvt_region *rg, enum region_col c)
{
	switch (c) {
	case COL_ID: return &rg->id;
	case COL_OWNER: return &rg->owner;
	case COL_SIZE: return &rg->size;
	case COL_RESIDENT: return &rg->resident;
	case COL_DIRTY: return &rg->dirty;
	case COL_NS: return &rg->ns;
	case COL_PINNED: return &rg->pinned;
	case COL_FAULTS: return &rg->faults;
	case COL_REFAULTS: return &rg->refaults;
	case COL_IDLE: return &rg->idle_ms;
	case COL_GPU: return &rg->gpu_bytes;
	default: return NULL;
	}
}

static int parse_region_row(char *line, const int *cols, size_t ncols,
			    struct kvt_region *rg)
{
	char *tok[COLS_MAX + 1];
	uint64_t *field;
	size_t i;

	memset(rg, 0, sizeof(*rg));
	strcpy(rg->name, "-");
	if (split(line, tok, COLS_MAX + 1) != ncols)
		return -EPROTO;
	for (i = 0; i < ncols; i++) {
		rg->have_gpu_bytes |= cols[i] == COL_GPU;
		if (cols[i] == COL_NAME) {
			copy_name(rg->name, sizeof(rg->name), tok[i]);
			continue;
		}
		field = region_field(rg, (enum region_col)cols[i]);
		if (field && parse_count(tok[i], field))
			return -EPROTO;
	}
	return 0;
}

int kvt_regions_parse(FILE *f, struct kvt_regions *rs)
{
	int cols[COLS_MAX];
	struct reader r = { .f = f };
	size_t ncols = 0, cap = 0;
	char *line;
	int ret;

	rs->n = 0;
	rs->r = NULL;
	ret = check_header(&r, "kvtier-regions");
	if (!ret)
		ret = parse_col_header(&r, region_cols, COL_NR, COL_ID, cols,
				       &ncols);
	while (!ret && (line = next_line(&r))) {
		struct kvt_region *p = grow(rs->r, sizeof(*p), rs->n, &cap);

		ret = p ? parse_region_row(line, cols, ncols, &p[rs->n]) : -ENOMEM;
		if (p)
			rs->r = p;
		if (!ret)
			rs->n++;
	}
	free(r.line);
	if (ret)
		kvt_regions_free(rs);
	return ret;
}

void kvt_regions_free(struct kvt_regions *rs)
{
	free(rs->r);
	rs->r = NULL;
	rs->n = 0;
}

/* The columns of `gpu_ranges` this version knows; others are skipped. */
enum gpu_col {
	GCOL_ID, GCOL_PID, GCOL_VA, GCOL_LENGTH, GCOL_MODE, GCOL_GPU,
	GCOL_TENANT, GCOL_REGION, GCOL_NR,
};

static const char * const gpu_cols[GCOL_NR] = {
	"id", "pid", "va", "length", "mode", "gpu", "tenant", "region",
};

static int parse_gpu_field(struct kvt_gpu_range *g, enum gpu_col c,
			   const char *tok)
{
	switch (c) {
	case GCOL_ID: return parse_u64(tok, &g->id);
	case GCOL_PID: return parse_u64(tok, &g->pid);
	case GCOL_VA: return parse_hex(tok, &g->va);
	case GCOL_LENGTH: return parse_u64(tok, &g->length);
	case GCOL_MODE: return copy_token(g->mode, sizeof(g->mode), tok);
	case GCOL_GPU: return copy_token(g->gpu, sizeof(g->gpu), tok);
	case GCOL_TENANT:
		return strcmp(tok, "-") ?
			copy_token(g->tenant, sizeof(g->tenant), tok) : 0;
	case GCOL_REGION:
		g->have_region = strcmp(tok, "-");
		return g->have_region ? parse_u64(tok, &g->region) : 0;
	default:
		return 0;	/* a column this version does not know */
	}
}

static int parse_gpu_row(char *line, const int *cols, size_t ncols,
			 struct kvt_gpu_range *g)
{
	char *tok[COLS_MAX + 1];
	size_t i;

	memset(g, 0, sizeof(*g));
	strcpy(g->mode, "-");
	strcpy(g->gpu, "-");
	if (split(line, tok, COLS_MAX + 1) != ncols)
		return -EPROTO;
	for (i = 0; i < ncols; i++)
		if (parse_gpu_field(g, (enum gpu_col)cols[i], tok[i]))
			return -EPROTO;
	return 0;
}

int kvt_gpu_ranges_parse(FILE *f, struct kvt_gpu_ranges *gs)
{
	struct reader r = { .f = f };
	size_t ncols = 0, cap = 0;
	int cols[COLS_MAX];
	char *line;
	int ret;

	gs->n = 0;
	gs->g = NULL;
	ret = check_header(&r, "kvtier-gpu");
	if (!ret)
		ret = parse_col_header(&r, gpu_cols, GCOL_NR, GCOL_ID, cols,
				       &ncols);
	while (!ret && (line = next_line(&r))) {
		struct kvt_gpu_range *p = grow(gs->g, sizeof(*p), gs->n, &cap);

		ret = p ? parse_gpu_row(line, cols, ncols, &p[gs->n]) : -ENOMEM;
		if (p)
			gs->g = p;
		if (!ret)
			gs->n++;
	}
	free(r.line);
	if (ret)
		kvt_gpu_ranges_free(gs);
	return ret;
}

void kvt_gpu_ranges_free(struct kvt_gpu_ranges *gs)
{
	free(gs->g);
	gs->g = NULL;
	gs->n = 0;
}

/* Open tier @id's debugfs @file: 0 or -errno (-ENOENT: no such file). */
static int tier_file(unsigned int id, const char *file, FILE **f)
{
	*f = tier_debugfs_open(id, file);
	return *f ? 0 : -errno;
}

int tier_stats(unsigned int id, struct kvt_stats *s)
{
	FILE *f;
	int ret = tier_file(id, "stats", &f);

	if (ret)
		return ret;
	ret = kvt_stats_parse(f, s);
	fclose(f);
	return ret;
}

/* latency and io: the same format under two magics. */
static int tier_histset(unsigned int id, const char *file, const char *magic,
			struct kvt_histset *hs)
{
	FILE *f;
	int ret = tier_file(id, file, &f);

	if (ret)
		return ret;
	ret = kvt_histset_parse(f, magic, hs);
	fclose(f);
	return ret;
}

int tier_latency(unsigned int id, struct kvt_histset *hs)
{
	return tier_histset(id, "latency", "kvtier-latency", hs);
}

int tier_io(unsigned int id, struct kvt_histset *hs)
{
	return tier_histset(id, "io", "kvtier-io", hs);
}

int tier_regions(unsigned int id, struct kvt_regions *rs)
{
	FILE *f;
	int ret = tier_file(id, "regions", &f);

	rs->n = 0;
	rs->r = NULL;
	if (ret)
		return ret;
	ret = kvt_regions_parse(f, rs);
	fclose(f);
	return ret;
}

int tier_gpu_ranges(unsigned int id, struct kvt_gpu_ranges *gs)
{
	FILE *f;
	int ret = tier_file(id, "gpu_ranges", &f);

	gs->n = 0;
	gs->g = NULL;
	if (ret)
		return ret;
	ret = kvt_gpu_ranges_parse(f, gs);
	fclose(f);
	return ret;
}
