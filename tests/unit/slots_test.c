// SPDX-License-Identifier: GPL-2.0
/*
 * The slot allocator, kmod/slots.c itself, built in user space against
 * the kernel's own rbtree (tools/lib/rbtree.c from Debian's linux-source)
 * and checked against a model: one state byte per slot (free, held,
 * deferred, releasing). Seeded random operations - allocations of 1 to
 * 300 slots, frees of whole and partial runs, defers, a commit's freeze
 * and release, claims of free and of held slots, allocations that fail -
 * each followed by a check of everything: the trees are ordered, disjoint
 * and merged, every node's subtree maximum is right, the counts agree,
 * the free, deferred and releasing sets are exactly the model's, the
 * allocator chose the run the documented policy names (first fit from
 * the hint, then from the start, then the longest run), the largest-run
 * gauge is right, and no node leaks. The seeds are fixed: the same
 * operations on every run.
 *
 * Runs on the host in make check (no VM: nothing here needs the kernel).
 */
#include <limits.h>
#include <linux/kernel.h>
#include <linux/rbtree_augmented.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kselftest_harness.h"

/* What slots.c takes from kvtier.h and the kernel, for one thread. */
#define KVTIER_H
#define __init
#define KVT_FAIL_SLOT_ALLOC 0
static int warnings;
#undef WARN_ON_ONCE
#define WARN_ON_ONCE(c) ({ int __w = !!(c); warnings += __w; __w; })
#ifndef swap
#define swap(a, b) do { typeof(a) __t = (a); (a) = (b); (b) = __t; } while (0)
#endif
static bool fail_alloc;
#define kvtier_should_fail(site) ((void)(site), fail_alloc)

long kvt_objects;
int kvt_fail_allocs;

#include "../../kmod/slots.h"
#include "../../kmod/slots.c"

enum { FREE, HELD, DEFERRED, RELEASING };

struct model {
	unsigned long n;
	unsigned char *st;
	unsigned long hint;
	uint64_t rng;
};

static uint64_t rnd(struct model *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static unsigned long below(struct model *m, unsigned long n)
{
	return n ? rnd(m) % n : 0;
}

/* The subtree maximum under @n, checking every node's on the way. */
static unsigned long check_max(struct rb_node *n, int *bad)
{
	struct kvtier_extent *e;
	unsigned long m;

	if (!n)
		return 0;
	e = rb_entry(n, struct kvtier_extent, node);
	m = e->len;
	m = max(m, check_max(n->rb_left, bad));
	m = max(m, check_max(n->rb_right, bad));
	if (m != e->max)
		(*bad)++;
	return m;
}

static bool why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool why(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "# set mismatch: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return false;
}

/*
 * @set holds exactly the slots of state @want, as runs that are ordered,
 * disjoint and not touching; nr, units and every subtree max are right.
 */
static bool set_matches(struct model *m, struct kvtier_extents *set, int want)
{
	unsigned long i = 0, nr = 0, units = 0, prev_end = 0;
	struct rb_node *n;
	int bad = 0;

	for (n = rb_first(&set->root); n; n = rb_next(n)) {
		struct kvtier_extent *e = rb_entry(n, struct kvtier_extent, node);

		if (!e->len || e->start + e->len > m->n ||
		    (nr && e->start <= prev_end))
			return why("run %lu+%lu after end %lu", e->start, e->len, prev_end);
		/* The model between runs: not @want. */
		for (; i < e->start; i++)
			if (m->st[i] == want)
				return why("slot %lu not in the set", i);
		for (; i < e->start + e->len; i++)
			if (m->st[i] != want)
				return why("slot %lu in the set is %d", i, m->st[i]);
		prev_end = e->start + e->len;
		nr++;
		units += e->len;
	}
	for (; i < m->n; i++)
		if (m->st[i] == want)
			return why("slot %lu past the last run not in the set", i);
	check_max(set->root.rb_node, &bad);
	if (bad)
		return why("%d subtree maxima wrong", bad);
	if (nr != set->nr || units != set->units)
		return why("nr %lu/%lu units %lu/%lu", nr, set->nr, units, set->units);
	return true;
}

static unsigned long count(struct model *m, int st)
{
	unsigned long i, c = 0;

	for (i = 0; i < m->n; i++)
		c += m->st[i] == st;
	return c;
}

/* The run of state @st at or after @pos with at least @want slots (first fit). */
static long model_fit(struct model *m, unsigned long pos, unsigned long want,
		      unsigned long *len)
{
	unsigned long i = 0, j;

	/* The run holding @pos counts from its start, as an extent does. */
	while (i < m->n) {
		if (m->st[i] != FREE) {
			i++;
			continue;
		}
		for (j = i; j < m->n && m->st[j] == FREE; j++)
			;
		if (j > pos && j - i >= want) {
			*len = j - i;
			return (long)i;
		}
		i = j;
	}
	return -1;
}

static unsigned long model_largest(struct model *m)
{
	unsigned long i = 0, j, best = 0;

	while (i < m->n) {
		if (m->st[i] != FREE) {
			i++;
			continue;
		}
		for (j = i; j < m->n && m->st[j] == FREE; j++)
			;
		best = max(best, j - i);
		i = j;
	}
	return best;
}

/* A held run: a random held slot and the held ones after it (up to @max). */
static bool pick_held(struct model *m, unsigned long max, unsigned long *s,
		      unsigned long *len)
{
	unsigned long i = below(m, m->n), k;

	for (k = 0; k < m->n; k++, i = (i + 1) % m->n)
		if (m->st[i] == HELD)
			break;
	if (k == m->n)
		return false;
	*s = i;
	for (*len = 0; i < m->n && m->st[i] == HELD && *len < max; i++)
		(*len)++;
	*len = 1 + below(m, *len);
	return true;
}

struct releasing {
	struct kvtier_extents set;
};

static void run(struct __test_metadata *_metadata, uint64_t seed,
		unsigned long nslots, unsigned int ops)
{
	struct model m = { .n = nslots, .rng = seed };
	struct kvtier_slots slots;
	struct releasing rel;
	unsigned int op, kinds[10] = { 0 };
	unsigned long s, len, got, first;
	long want_start;
	int ret, w;

	m.st = calloc(nslots, 1);
	ASSERT_NE(NULL, m.st);
	ASSERT_EQ(0, kvtier_slots_module_init());
	ASSERT_EQ(0, kvtier_slots_init(&slots, nslots));
	kvtier_extents_init(&rel.set);

	for (op = 0; op < ops; op++) {
		unsigned int kind = below(&m, 10);

		kinds[kind]++;
		switch (kind) {
		case 0: case 1: case 2: {	/* allocate a batch's run */
			unsigned long want = 1 + below(&m, rnd(&m) % 4 ? 16 : 300), flen = 0;

			want_start = model_fit(&m, m.hint, want, &flen);
			if (want_start < 0)
				want_start = model_fit(&m, 0, want, &flen);
			if (want_start < 0) {
				flen = model_largest(&m);
				want_start = flen ? model_fit(&m, 0, flen, &flen) : -1;
			}
			first = kvtier_slots_alloc(&slots, want, &got);
			if (want_start < 0) {
				ASSERT_EQ(KVTIER_NO_SLOT, first) TH_LOG("op %u: full, got a run", op);
				break;
			}
			ASSERT_EQ((unsigned long)want_start, first)
				TH_LOG("op %u: alloc %lu from hint %lu", op, want, m.hint);
			ASSERT_EQ(min(want, flen), got);
			memset(m.st + first, HELD, got);
			m.hint = first + got;
			break;
		}
		case 3: case 4:			/* free part of a held run */
			if (!pick_held(&m, 64, &s, &len))
				break;
			kvtier_slots_free(&slots, s, len);
			memset(m.st + s, FREE, len);
			break;
		case 5:				/* a persistent region lets go */
			if (!pick_held(&m, 64, &s, &len))
				break;
			kvtier_slots_defer(&slots, s, len);
			memset(m.st + s, DEFERRED, len);
			break;
		case 6:				/* a commit: freeze, maybe release */
			ASSERT_EQ(count(&m, DEFERRED), kvtier_slots_freeze(&slots, &rel.set));
			for (s = 0; s < m.n; s++)
				if (m.st[s] == DEFERRED)
					m.st[s] = RELEASING;
			if (below(&m, 3)) {
				kvtier_slots_release(&slots, &rel.set);
				for (s = 0; s < m.n; s++)
					if (m.st[s] == RELEASING)
						m.st[s] = FREE;
			}
			break;
		case 7: {			/* attach: claim a free run */
			unsigned long i = below(&m, m.n);
			bool split, nomem;

			if (m.st[i] != FREE)
				break;
			for (len = 0; i + len < m.n && m.st[i + len] == FREE && len < 40; len++)
				;
			len = 1 + below(&m, len);
			split = i && m.st[i - 1] == FREE && i + len < m.n &&
				m.st[i + len] == FREE;
			nomem = below(&m, 4) == 0;
			kvt_fail_allocs = nomem;
			ret = kvtier_slots_claim(&slots, i, len);
			if (nomem && split) {
				ASSERT_EQ(-ENOMEM, ret) TH_LOG("op %u: a split without memory", op);
			} else {
				ASSERT_EQ(0, ret) TH_LOG("op %u: claim %lu+%lu", op, i, len);
				memset(m.st + i, HELD, len);
			}
			kvt_fail_allocs = 0;
			break;
		}
		case 8:				/* a corrupt checkpoint names held slots */
			if (!pick_held(&m, 8, &s, &len))
				break;
			ASSERT_EQ(-EUCLEAN, kvtier_slots_claim(&slots, s, len));
			ASSERT_EQ(-EUCLEAN, kvtier_slots_claim(&slots, m.n - 1, 2));
			break;
		case 9:				/* fault injection: no slot */
			fail_alloc = true;
			ASSERT_EQ(KVTIER_NO_SLOT, kvtier_slots_alloc(&slots, 8, &got));
			fail_alloc = false;
			break;
		}
		/* Everything, after every operation. */
		ASSERT_TRUE(set_matches(&m, &slots.free, FREE)) TH_LOG("op %u (kind %u): free set", op, kind);
		ASSERT_TRUE(set_matches(&m, &slots.deferred, DEFERRED)) TH_LOG("op %u: deferred set", op);
		ASSERT_TRUE(set_matches(&m, &rel.set, RELEASING)) TH_LOG("op %u: releasing set", op);
		ASSERT_EQ(m.n - count(&m, FREE), slots.used) TH_LOG("op %u: used", op);
		ASSERT_EQ(model_largest(&m), READ_ONCE(slots.largest)) TH_LOG("op %u: largest", op);
		ASSERT_EQ((long)(slots.free.nr + slots.deferred.nr + rel.set.nr), kvt_objects)
			TH_LOG("op %u: nodes leaked or lost", op);
		ASSERT_EQ(0, warnings) TH_LOG("op %u: a WARN fired", op);
		m.hint = slots.hint;
	}

	/* A slot freed twice warns and changes nothing. */
	if (pick_held(&m, 1, &s, &len)) {
		kvtier_slots_free(&slots, s, 1);
		m.st[s] = FREE;
		w = warnings;
		kvtier_slots_free(&slots, s, 1);
		ASSERT_EQ(w + 1, warnings);
		ASSERT_TRUE(set_matches(&m, &slots.free, FREE));
		ASSERT_EQ(m.n - count(&m, FREE), slots.used);
		warnings = 0;
	}
	/* Ranges that wrap or leave the namespace warn and change nothing. */
	w = warnings;
	kvtier_slots_free(&slots, KVTIER_NO_SLOT, 1);
	kvtier_slots_free(&slots, m.n - 1, 2);
	kvtier_slots_defer(&slots, KVTIER_NO_SLOT - 1, 4);
	kvtier_slots_free(&slots, 0, 0);
	ASSERT_EQ(w + 4, warnings);
	ASSERT_TRUE(set_matches(&m, &slots.free, FREE));
	ASSERT_TRUE(set_matches(&m, &slots.deferred, DEFERRED));
	ASSERT_EQ(m.n - count(&m, FREE), slots.used);
	warnings = 0;

	/*
	 * A slot freed while it waits for a commit: the commit's release
	 * warns and drops it, and the count stays right (it was freed once).
	 */
	if (pick_held(&m, 1, &s, &len)) {
		kvtier_slots_defer(&slots, s, 1);
		kvtier_slots_free(&slots, s, 1);
		m.st[s] = FREE;
		kvtier_slots_freeze(&slots, &rel.set);
		for (first = 0; first < m.n; first++)
			if (m.st[first] == DEFERRED)
				m.st[first] = RELEASING;
		w = warnings;
		kvtier_slots_release(&slots, &rel.set);
		for (first = 0; first < m.n; first++)
			if (m.st[first] == RELEASING)
				m.st[first] = FREE;
		ASSERT_EQ(w + 1, warnings);
		ASSERT_TRUE(set_matches(&m, &slots.free, FREE));
		ASSERT_EQ(m.n - count(&m, FREE), slots.used);
		ASSERT_EQ((long)(slots.free.nr + slots.deferred.nr + rel.set.nr), kvt_objects);
		warnings = 0;
	}
	TH_LOG("seed %#llx, %lu slots, %u ops: %u allocs, %u frees, %u defers, %u commits, %u claims; %lu free runs, largest %lu",
	       (unsigned long long)seed, nslots, ops, kinds[0] + kinds[1] + kinds[2],
	       kinds[3] + kinds[4], kinds[5], kinds[6], kinds[7], slots.free.nr,
	       READ_ONCE(slots.largest));

	/* Detach: what waits is forgotten, every slot given back, no node left. */
	kvtier_slots_freeze(&slots, &rel.set);
	kvtier_slots_release(&slots, &rel.set);
	for (s = 0; s < m.n; s++)
		if (m.st[s] == HELD)
			kvtier_slots_free(&slots, s, 1);
	ASSERT_EQ(0, slots.used);
	ASSERT_EQ(1, slots.free.nr);
	ASSERT_EQ(nslots, READ_ONCE(slots.largest));
	kvtier_slots_exit(&slots);
	kvtier_extents_destroy(&rel.set);
	ASSERT_EQ(0, kvt_objects);
	ASSERT_EQ(0, warnings);
	kvtier_slots_module_exit();
	free(m.st);
}

TEST(random_small)
{
	run(_metadata, 0x5107a11c, 512, 40000);
}

TEST(random_medium)
{
	run(_metadata, 0x9e3779b97f4a7c15ULL, 4096, 30000);
}

TEST(random_large)
{
	run(_metadata, 0xc0ffee, 65536, 8000);
}

/*
 * KVTIER_SLOTS_SEEDS=N: up to N more seeds from /dev/urandom, each
 * printed, for at most 20 s (the harness's timeout is 30 s).
 */
TEST(random_seeds_from_env)
{
	const char *env = getenv("KVTIER_SLOTS_SEEDS");
	time_t end = time(NULL) + 20;
	uint64_t seed;
	int i, n = env ? atoi(env) : 0;
	FILE *f;

	if (n <= 0)
		SKIP(return, "KVTIER_SLOTS_SEEDS not set");
	f = fopen("/dev/urandom", "re");
	ASSERT_NE(NULL, f);
	for (i = 0; i < n && time(NULL) < end; i++) {
		ASSERT_EQ(1, fread(&seed, sizeof(seed), 1, f));
		seed |= 1;
		run(_metadata, seed, 256 + seed % 8192, 20000);
	}
	fclose(f);
}

/* A fresh namespace hands out slots in order: the rig's tests rely on it. */
TEST(fresh_in_order)
{
	struct kvtier_slots slots;
	unsigned long got, s, expect = 0;
	int i;

	/* The admin guide's memory per extent (debugfs slot_extents). */
	ASSERT_EQ(48, sizeof(struct kvtier_extent));
	ASSERT_EQ(0, kvtier_slots_module_init());
	ASSERT_EQ(0, kvtier_slots_init(&slots, 1UL << 32));	/* 16 TiB */
	for (i = 0; i < 1000; i++) {
		s = kvtier_slots_alloc(&slots, 1 + i % 256, &got);
		ASSERT_EQ(expect, s);
		ASSERT_EQ((unsigned long)(1 + i % 256), got);
		expect += got;
	}
	ASSERT_EQ(1, slots.free.nr);
	kvtier_slots_free(&slots, 0, expect);
	ASSERT_EQ(0, slots.used);
	kvtier_slots_exit(&slots);
	ASSERT_EQ(0, kvt_objects);
	kvtier_slots_module_exit();
}

TEST_HARNESS_MAIN
