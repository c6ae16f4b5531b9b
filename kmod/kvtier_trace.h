/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier tracepoints: events/kvtier/ in tracefs, usable with perf,
 * trace-cmd and bpftrace. Documented in Documentation/admin-guide/kvtier.rst.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvtier

#if !defined(_KVTIER_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KVTIER_TRACE_H

#include <linux/tracepoint.h>

/* kind: how the fault was served (enum kvtier_get in kvtier.h; page.c). */
TRACE_EVENT(kvtier_fault,
	TP_PROTO(unsigned int tier, u64 region, u64 offset, int kind,
		 u64 latency_ns),
	TP_ARGS(tier, region, offset, kind, latency_ns),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(u64, region)
		__field(u64, offset)
		__field(int, kind)
		__field(u64, latency_ns)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->region = region;
		__entry->offset = offset;
		__entry->kind = kind;
		__entry->latency_ns = latency_ns;
	),
	TP_printk("tier=%u region=%llu offset=%llu %s latency_ns=%llu",
		  __entry->tier, __entry->region, __entry->offset,
		  __print_symbolic(__entry->kind, { 0, "minor" }, { 1, "zero" },
				   { 2, "major" }),
		  __entry->latency_ns)
);

TRACE_EVENT(kvtier_evict,
	TP_PROTO(unsigned int tier, u64 region, u64 offset, bool dirty),
	TP_ARGS(tier, region, offset, dirty),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(u64, region)
		__field(u64, offset)
		__field(bool, dirty)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->region = region;
		__entry->offset = offset;
		__entry->dirty = dirty;
	),
	TP_printk("tier=%u region=%llu offset=%llu %s", __entry->tier,
		  __entry->region, __entry->offset,
		  __entry->dirty ? "dirty" : "clean")
);

TRACE_EVENT(kvtier_writeback,
	TP_PROTO(unsigned int tier, unsigned int pages, unsigned int bios,
		 int status),
	TP_ARGS(tier, pages, bios, status),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(unsigned int, pages)
		__field(unsigned int, bios)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->pages = pages;
		__entry->bios = bios;
		__entry->status = status;
	),
	TP_printk("tier=%u pages=%u bytes=%llu bios=%u status=%d",
		  __entry->tier, __entry->pages,
		  (unsigned long long)__entry->pages << PAGE_SHIFT,
		  __entry->bios, __entry->status)
);

/* One data bio of the tier completed (io.c): read-back or write-back. */
DECLARE_EVENT_CLASS(kvtier_bio_done,
	TP_PROTO(unsigned int tier, u64 sector, unsigned int bytes,
		 u64 latency_ns, int status),
	TP_ARGS(tier, sector, bytes, latency_ns, status),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(u64, sector)
		__field(unsigned int, bytes)
		__field(u64, latency_ns)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->sector = sector;
		__entry->bytes = bytes;
		__entry->latency_ns = latency_ns;
		__entry->status = status;
	),
	TP_printk("tier=%u sector=%llu bytes=%u latency_ns=%llu status=%d",
		  __entry->tier, __entry->sector, __entry->bytes,
		  __entry->latency_ns, __entry->status)
);

DEFINE_EVENT(kvtier_bio_done, kvtier_read_done,
	TP_PROTO(unsigned int tier, u64 sector, unsigned int bytes,
		 u64 latency_ns, int status),
	TP_ARGS(tier, sector, bytes, latency_ns, status)
);

DEFINE_EVENT(kvtier_bio_done, kvtier_write_done,
	TP_PROTO(unsigned int tier, u64 sector, unsigned int bytes,
		 u64 latency_ns, int status),
	TP_ARGS(tier, sector, bytes, latency_ns, status)
);

/* A charge that found the pool full and reclaimed or waited (pool.c). */
TRACE_EVENT(kvtier_budget_stall,
	TP_PROTO(unsigned int tier, u64 wait_ns, int status),
	TP_ARGS(tier, wait_ns, status),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(u64, wait_ns)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->wait_ns = wait_ns;
		__entry->status = status;
	),
	TP_printk("tier=%u wait_ns=%llu status=%d", __entry->tier,
		  __entry->wait_ns, __entry->status)
);

/*
 * A page read back less than a budget's worth of evictions after it was
 * evicted (page.c): distance is the evictions in between, in pages.
 */
TRACE_EVENT(kvtier_refault,
	TP_PROTO(unsigned int tier, u64 region, u64 offset, u64 distance),
	TP_ARGS(tier, region, offset, distance),
	TP_STRUCT__entry(
		__field(unsigned int, tier)
		__field(u64, region)
		__field(u64, offset)
		__field(u64, distance)
	),
	TP_fast_assign(
		__entry->tier = tier;
		__entry->region = region;
		__entry->offset = offset;
		__entry->distance = distance;
	),
	TP_printk("tier=%u region=%llu offset=%llu distance=%llu",
		  __entry->tier, __entry->region, __entry->offset,
		  __entry->distance)
);

#endif /* _KVTIER_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kvtier_trace
#include <trace/define_trace.h>
