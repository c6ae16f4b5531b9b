// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: the few JSON writers --json needs. Keys are written in the
 * order the caller gives them; *first tracks the comma.
 */
#include "ctl.h"

void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void json_key(FILE *f, bool *first, const char *key)
{
	if (!*first)
		fputc(',', f);
	*first = false;
	json_str(f, key);
	fputc(':', f);
}

void json_key_str(FILE *f, bool *first, const char *key, const char *val)
{
	json_key(f, first, key);
	json_str(f, val);
}

void json_key_u64(FILE *f, bool *first, const char *key, uint64_t v)
{
	json_key(f, first, key);
	fprintf(f, "%llu", (unsigned long long)v);
}

void json_key_s64(FILE *f, bool *first, const char *key, int64_t v)
{
	json_key(f, first, key);
	fprintf(f, "%lld", (long long)v);
}

void json_key_bool(FILE *f, bool *first, const char *key, bool v)
{
	json_key(f, first, key);
	fputs(v ? "true" : "false", f);
}

void json_key_num(FILE *f, bool *first, const char *key, double v)
{
	json_key(f, first, key);
	fprintf(f, "%.3f", v);
}

void json_key_null(FILE *f, bool *first, const char *key)
{
	json_key(f, first, key);
	fputs("null", f);
}
