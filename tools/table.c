// SPDX-License-Identifier: GPL-2.0
/*
 * Tables as lsblk and zramctl print them: the columns a command has, the
 * ones -o/--output picks (in its order), sizes in bytes with -b/--bytes,
 * no header line with -n/--noheadings.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ctl.h"

int table_select(const struct cmd *cmd, const struct table *t,
		 const char *list, bool bytes, bool noheadings,
		 struct table_view *v)
{
	char buf[512], *tok, *save;
	size_t i;

	memset(v, 0, sizeof(*v));
	v->t = t;
	v->bytes = bytes;
	v->noheadings = noheadings;
	for (i = 0; i < t->n; i++)
		v->width[i] = t->cols[i].width;
	if (!list) {
		for (i = 0; i < t->n; i++)
			if (!t->cols[i].extra)
				v->cols[v->n++] = i;
		return 0;
	}
	if (strlen(list) >= sizeof(buf))
		return usage_error(cmd, "%s: --output list too long", cmd->name);
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < t->n && strcasecmp(tok, t->cols[i].name); i++)
			;
		if (i == t->n) {
			char names[512] = "";

			for (i = 0; i < t->n; i++) {
				strncat(names, i ? "," : "", sizeof(names) - strlen(names) - 1);
				strncat(names, t->cols[i].name, sizeof(names) - strlen(names) - 1);
			}
			return usage_error(cmd, "%s: unknown column '%s' (columns: %s)",
					   cmd->name, tok, names);
		}
		if (v->n == TABLE_MAX_COLS)
			return usage_error(cmd, "%s: too many columns", cmd->name);
		v->cols[v->n++] = i;
	}
	if (!v->n)
		return usage_error(cmd, "%s: --output names no column", cmd->name);
	return 0;
}

/* Width of column @c as shown: byte counts need more room. */
static int shown_width(const struct table_view *v, size_t c)
{
	int w = v->width[c];

	if (v->bytes && v->t->cols[c].size && w < 12 && w > -12)
		w = w < 0 ? -12 : 12;
	return w;
}

static void put_cell(const struct table_view *v, size_t k, const char *s)
{
	size_t c = v->cols[k];
	int w = shown_width(v, c);

	if (k)
		putchar(' ');
	/* The last column is not padded: no trailing blanks. */
	if (k + 1 == v->n && w < 0)
		fputs(s, stdout);
	else
		printf("%*s", w, s);
}

void table_header(const struct table_view *v, const char *lead)
{
	size_t k;

	if (v->noheadings)
		return;
	if (lead)
		printf("%s ", lead);
	for (k = 0; k < v->n; k++)
		put_cell(v, k, v->t->cols[v->cols[k]].name);
	putchar('\n');
}

void table_row(const struct table_view *v, const void *row, const char *lead)
{
	char buf[512];
	size_t k;

	if (lead)
		printf("%s ", lead);
	for (k = 0; k < v->n; k++) {
		size_t c = v->cols[k];
		const char *s;

		if (v->t->cols[c].size) {
			uint64_t b = v->t->size(row, c);

			if (b == TABLE_NONE)
				snprintf(buf, sizeof(buf), "-");
			else if (v->bytes)
				snprintf(buf, sizeof(buf), "%llu", (unsigned long long)b);
			else
				fmt_size(buf, sizeof(buf), b);
			s = buf;
		} else {
			s = v->t->cell(row, c, buf, sizeof(buf));
		}
		put_cell(v, k, s);
	}
	putchar('\n');
}
