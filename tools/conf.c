// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: read kvtier.conf(5), the tiers an operator wants at boot.
 *
 * The main file, then the FILE.d/NAME.conf fragments in byte order of NAME; a later
 * assignment of a key in a tier's section replaces an earlier one, as in
 * systemd's drop-ins. Every value is checked here, before anything is
 * changed, and every error names its file and line.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"

/* An NQN is at most 223 bytes (NVMe base specification, 4.5). */
#define NQN_MAX		223
#define LINE_MAX_LEN	4096

static void conf_error(struct kvt_conf *c, const struct kvt_conf_item *at,
		       const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void conf_error(struct kvt_conf *c, const struct kvt_conf_item *at,
		       const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kvtierctl: %s:%u: ", at->file, at->line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	c->errors++;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Keep @value for @item, remembering where it was said. */
static int set_item(struct kvt_conf_item *item, const char *file,
		    unsigned int line, const char *value)
{
	char *v = strdup(value);

	if (!v)
		return -ENOMEM;
	free(item->value);
	item->value = v;
	item->file = file;
	item->line = line;
	return 0;
}

/* One "key = value" line of tier @t. */
static int conf_assign(struct kvt_conf *c, struct kvt_conf_tier *t,
		       const struct kvt_conf_item *at, char *key, char *value)
{
	const struct knob *k = find_knob(key);
	struct kvt_conf_item *item;
	char why[128];
	uint64_t v;

	if (!*value) {
		conf_error(c, at, "%s has no value", key);
		return 0;
	}
	if (!strcmp(key, "device")) {
		item = &t->device;
		if (*value != '/')
			conf_error(c, at, "device '%s' is not an absolute path (a /dev/disk/by-id/ link names a drive across reboots)",
				   value);
	} else if (!strcmp(key, "nqn")) {
		item = &t->nqn;
		if (strlen(value) > NQN_MAX || strncmp(value, "nqn.", 4))
			conf_error(c, at, "nqn '%s' is not an NVMe qualified name (nqn.YYYY-MM.domain:..., at most %d bytes)",
				   value, NQN_MAX);
	} else if (!strcmp(key, "nsid")) {
		item = &t->nsid;
		if (parse_u64(value, &v) || !v || v > UINT32_MAX)
			conf_error(c, at, "nsid '%s' is not a namespace ID (1..%u)",
				   value, UINT32_MAX);
	} else if (k) {
		item = &t->knob[k - knobs];
		item->valid = !knob_value(k, value, &v, why, sizeof(why));
		if (!item->valid)
			conf_error(c, at, "%s", why);
		item->num = item->valid ? v : 0;
	} else {
		conf_error(c, at, "unknown key '%s' (device, nqn, nsid or a knob of kvtierctl set --help)",
			   key);
		return 0;
	}
	return set_item(item, at->file, at->line, value);
}

/* Read one file into @c. */
static int conf_read_file(struct kvt_conf *c, const char *path)
{
	struct kvt_conf_tier *t = NULL;
	struct kvt_conf_item at = { 0 };
	bool bad_section = false;
	char *buf = NULL, *s, *eq;
	size_t cap = 0;
	unsigned int id;
	const char *name;
	ssize_t len;
	int ret = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (c->nfiles == KVT_CONF_MAX_FILES) {
		fclose(f);
		return -E2BIG;
	}
	name = strdup(path);
	if (!name) {
		fclose(f);
		return -ENOMEM;
	}
	c->files[c->nfiles++] = name;
	at.file = name;
	while (!ret && (len = getline(&buf, &cap, f)) >= 0) {
		at.line++;
		if (strlen(buf) != (size_t)len) {
			conf_error(c, &at, "a NUL byte in the line");
			continue;
		}
		if (len && buf[len - 1] == '\n')
			len--;
		if (len > LINE_MAX_LEN) {
			conf_error(c, &at, "line longer than %d bytes", LINE_MAX_LEN);
			continue;
		}
		s = trim(buf);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			t = NULL;
			bad_section = true;	/* its keys are not reported again */
			if (s[strlen(s) - 1] != ']') {
				conf_error(c, &at, "section '%s' lacks its ']'", s);
				continue;
			}
			s[strlen(s) - 1] = '\0';
			s = trim(s + 1);
			if (strncmp(s, "kvtier", 6) || parse_tier(s, &id)) {
				conf_error(c, &at, "section [%s] is not a tier: [kvtier0] .. [kvtier%d]",
					   s, KVT_MAX_TIERS - 1);
				continue;
			}
			bad_section = false;
			t = &c->tier[id];
			if (!t->present) {
				t->present = true;
				t->at = at;
			}
			continue;
		}
		eq = strchr(s, '=');
		if (!eq) {
			conf_error(c, &at, "'%s' is not KEY = VALUE or [kvtierN]", s);
			continue;
		}
		*eq = '\0';
		if (!t) {
			if (!bad_section)
				conf_error(c, &at, "'%s' before any [kvtierN] section", trim(s));
			continue;
		}
		ret = conf_assign(c, t, &at, trim(s), trim(eq + 1));
	}
	if (!ret && ferror(f))
		ret = -EIO;
	free(buf);
	fclose(f);
	return ret;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fragments FILE.d/NAME.conf, in byte order of NAME. */
static int conf_read_fragments(struct kvt_conf *c, const char *dir)
{
	char *names[KVT_CONF_MAX_FILES], path[8192];
	size_t n = 0, i, len;
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		ret = -errno;
		fprintf(stderr, "kvtierctl: %s: %s\n", dir, strerror(-ret));
		return ret;
	}
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 6 ||
		    strcmp(de->d_name + len - 5, ".conf"))
			continue;
		if (n == KVT_CONF_MAX_FILES - 1) {
			fprintf(stderr, "kvtierctl: %s: more than %d fragments\n", dir,
				KVT_CONF_MAX_FILES - 1);
			ret = -E2BIG;
			break;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			fprintf(stderr, "kvtierctl: %s: %s\n", dir, strerror(ENOMEM));
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!ret) {
			ret = conf_read_file(c, path);
			if (ret)
				fprintf(stderr, "kvtierctl: %s: %s\n", path, strerror(-ret));
		}
		free(names[i]);
	}
	return ret;
}

/*
 * Checks across the keys of a tier, once every file is read. (Two tiers on
 * one namespace are found by apply, on the resolved devices.)
 */
static void conf_check(struct kvt_conf *c)
{
	const struct kvt_conf_item *hi, *lo;
	struct kvt_conf_tier *t;
	unsigned int i;

	for (i = 0; i < KVT_MAX_TIERS; i++) {
		t = &c->tier[i];
		if (!t->present)
			continue;
		if (!t->device.value && !t->nqn.value)
			conf_error(c, &t->at, "kvtier%u names no device (device = /dev/disk/by-id/... or nqn = ...)",
				   i);
		if (t->device.value && t->nqn.value)
			conf_error(c, &t->nqn, "kvtier%u names both a device (%s:%u) and an nqn: one of them",
				   i, t->device.file, t->device.line);
		if (t->nsid.value && !t->nqn.value)
			conf_error(c, &t->nsid, "nsid goes with nqn");
		hi = &t->knob[find_knob("watermark_high") - knobs];
		lo = &t->knob[find_knob("watermark_low") - knobs];
		if (hi->valid && lo->valid && lo->num >= hi->num)
			conf_error(c, lo, "watermark_low %llu must be below watermark_high %llu (%s:%u)",
				   (unsigned long long)lo->num, (unsigned long long)hi->num,
				   hi->file, hi->line);
	}
}

int kvt_conf_read(struct kvt_conf *c, const char *path)
{
	char dir[4096];
	struct stat st;
	int ret;

	memset(c, 0, sizeof(*c));
	snprintf(dir, sizeof(dir), "%s.d", path);
	ret = conf_read_file(c, path);
	if (ret == -ENOENT && !stat(dir, &st))
		ret = 0;	/* fragments alone are a configuration too */
	if (ret) {
		fprintf(stderr, "kvtierctl: %s: %s\n", path, strerror(-ret));
		return ret;
	}
	/* conf_read_fragments says what went wrong itself. */
	ret = conf_read_fragments(c, dir);
	if (ret)
		return ret;
	conf_check(c);
	return c->errors ? -EINVAL : 0;
}

void kvt_conf_free(struct kvt_conf *c)
{
	unsigned int i, k;

	for (i = 0; i < KVT_MAX_TIERS; i++) {
		free(c->tier[i].device.value);
		free(c->tier[i].nqn.value);
		free(c->tier[i].nsid.value);
		for (k = 0; k < KVT_CONF_MAX_KNOBS; k++)
			free(c->tier[i].knob[k].value);
	}
	for (i = 0; i < c->nfiles; i++)
		free((void *)c->files[i]);
	memset(c, 0, sizeof(*c));
}
