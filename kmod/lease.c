// SPDX-License-Identifier: GPL-2.0
/*
 * The ownership lease: at most one read-write attach of a namespace at a
 * time, across tiers and hosts that reach it by different paths (two
 * fabrics controllers, a loop or dm device over it). The block layer's
 * exclusive claim only covers one block device of one host.
 *
 * It is ext4's multi-mount protection (fs/ext4/mmp.c) for a namespace: a
 * record in its own block (struct kvtier_disk_lease) names the holder and
 * a sequence number that a live holder bumps every interval_ms. A read-write
 * attach that finds the record held watches it for 2 x interval_ms + 1 s
 * (the holder's interval, from the record): if it changes, a live writer
 * has it and the attach fails with -EBUSY; if not, the holder is gone and
 * the attach takes it over. It then writes its own record and, after one
 * interval of its own, reads it back: if another attach wrote in between,
 * that one wins and this one fails with -EBUSY. Every renewal reads the
 * record first; finding another holder's nonce means two writers were
 * attached (a path that stalled longer than the takeover wait): the tier is
 * fenced (kvtier_fenced(): no more writes, sticky error -EBUSY). Detach
 * writes the record free. An attach refused after it took the lease (its
 * metadata turned out damaged) puts the block back as it found it, so a
 * refused attach leaves the namespace bit for bit as it was. Read-only
 * attaches only read it.
 *
 * NVMe and SCSI persistent reservations (block_device_operations->pr_ops)
 * would enforce this in the device; see Documentation/admin-guide for why
 * they are not used.
 *
 * Renewals run on kvtier_lease_wq, a high-priority queue of their own, so
 * no other work of the module (a storm of WILLNEED prefetches, write-back)
 * can delay one past another host's takeover wait.
 *
 * Locking: the lease fields of struct kvtier_store are written at attach
 * and detach under tier->lock and in between only by lease_work; detach
 * cancels lease_work before it writes the record free.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/utsname.h>

#include <linux/kvtier_format.h>

#include "kvtier.h"

/* A holder's interval is trusted up to this (a sane bound on the wait). */
#define KVTIER_LEASE_MAX_MS	60000
#define KVTIER_LEASE_MIN_MS	100

static u32 kvtier_lease_crc(const struct kvtier_disk_lease *l)
{
	struct kvtier_disk_lease tmp = *l;

	tmp.crc = 0;
	return kvtier_crc32c(&tmp, sizeof(tmp));
}

/* Is @l an intact record of this namespace? */
static bool kvtier_lease_valid(struct kvtier_tier *tier,
			       const struct kvtier_disk_lease *l)
{
	return le64_to_cpu(l->magic) == KVTIER_LEASE_MAGIC &&
	       le32_to_cpu(l->crc) == kvtier_lease_crc(l) &&
	       !memcmp(l->uuid, tier->store.uuid, sizeof(l->uuid));
}

static int kvtier_lease_read(struct kvtier_tier *tier, void *buf)
{
	return kvtier_io_meta(tier, REQ_OP_READ, tier->store.lease_block, buf,
			      1, KVT_META_QUIET);
}

/* Write this attach's record, with @state and the next seq, into @buf. */
static int kvtier_lease_write(struct kvtier_tier *tier, void *buf, u32 state)
{
	struct kvtier_store *st = &tier->store;
	struct kvtier_disk_lease *l = buf;
	int ret;

	memset(buf, 0, PAGE_SIZE);
	l->magic = cpu_to_le64(KVTIER_LEASE_MAGIC);
	l->state = cpu_to_le32(state);
	memcpy(l->uuid, st->uuid, sizeof(l->uuid));
	l->seq = cpu_to_le64(st->lease_seq + 1);
	l->nonce = cpu_to_le64(st->lease_nonce);
	l->interval_ms = cpu_to_le32(st->lease_interval_ms);
	l->tier = cpu_to_le32(tier->id);
	l->acquired = cpu_to_le64(st->lease_acquired);
	l->renewed = cpu_to_le64(ktime_get_real_seconds());
	strscpy_pad(l->host, utsname()->nodename, sizeof(l->host));
	l->crc = cpu_to_le32(kvtier_lease_crc(l));
	ret = kvtier_io_meta(tier, REQ_OP_WRITE | REQ_FUA,
			     tier->store.lease_block, buf, 1, KVT_META_QUIET);
	if (!ret) {
		WRITE_ONCE(st->lease_seq, st->lease_seq + 1);
		WRITE_ONCE(st->lease_renewed, le64_to_cpu(l->renewed));
	}
	return ret;
}

/*
 * Was the record in @buf written by another attach? Only an intact record
 * with another nonce says so: a renewal the device lost (the seq did not
 * move) is not another writer, and neither is a record that reads back
 * damaged (a read error the CRC caught; renewing rewrites it).
 */
static bool kvtier_lease_foreign(struct kvtier_tier *tier, const void *buf)
{
	const struct kvtier_disk_lease *l = buf;

	return kvtier_lease_valid(tier, l) &&
	       le64_to_cpu(l->nonce) != tier->store.lease_nonce;
}

/* Sleep @ms; -EINTR if a fatal signal arrives (the attach is abandoned). */
static int kvtier_lease_sleep(unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	while (time_before(jiffies, end)) {
		schedule_timeout_killable(end - jiffies);
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	return 0;
}

static void kvtier_lease_renew(struct work_struct *work)
{
	struct kvtier_store *st = container_of(to_delayed_work(work),
					       struct kvtier_store, lease_work);
	struct kvtier_tier *tier = container_of(st, struct kvtier_tier, store);
	struct kvtier_disk_lease *l;
	void *buf;
	int ret;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		goto again;
	l = buf;
	ret = kvtier_lease_read(tier, buf);
	if (!ret && kvtier_lease_foreign(tier, buf)) {
		WRITE_ONCE(st->lease_lost, true);
		kvtier_set_error(tier, -EBUSY);
		dev_err(&tier->dev, "%s: ownership lease taken over (%.64s, kvtier%u, seq %llu): another read-write attach; this tier writes nothing more (detach it)\n",
			tier->backing.path, l->host, le32_to_cpu(l->tier),
			le64_to_cpu(l->seq));
		kfree(buf);
		return;
	}
	if (!ret)
		ret = kvtier_lease_write(tier, buf, KVTIER_LEASE_HELD);
	if (ret)
		dev_warn_ratelimited(&tier->dev, "%s: ownership lease renewal failed: %d (another host may take the namespace over after %u ms)\n",
				     tier->backing.path, ret,
				     2 * st->lease_interval_ms + 1000);
	kfree(buf);
again:
	queue_delayed_work(kvtier_lease_wq, &st->lease_work,
			   msecs_to_jiffies(st->lease_interval_ms));
}

/*
 * Take the lease for a read-write attach. Caller holds tier->lock; the
 * store's geometry and uuid are known. A namespace without a lease block
 * is attached with a warning. @found (a PAGE_SIZE buffer, or NULL) gets
 * the lease block as it was before this attach wrote it, for
 * kvtier_lease_release() if the attach is then refused. Errors: -EBUSY (a
 * live holder renews it, or another attach took it meanwhile), -EINTR
 * (fatal signal while waiting), -EIO, -ENOMEM. Nothing is written before
 * the holder is known to be gone.
 */
int kvtier_lease_acquire(struct kvtier_tier *tier, void *found)
{
	struct kvtier_store *st = &tier->store;
	const char *path = tier->backing.path;
	struct kvtier_disk_lease *l, old;
	void *buf;
	int ret;

	st->lease_held = false;
	st->lease_lost = false;
	if (!st->lease_block) {
		dev_warn(&tier->dev, "%s: no ownership lease on this namespace (formatted before it existed): a second read-write attach through another path is not detected; format it to get one\n",
			 path);
		return 0;
	}
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	l = buf;
	ret = kvtier_lease_read(tier, buf);
	if (ret)
		goto out;
	old = *l;
	if (found)
		memcpy(found, buf, PAGE_SIZE);
	if (!kvtier_lease_valid(tier, l) ||
	    le32_to_cpu(l->state) != KVTIER_LEASE_FREE) {
		bool valid = kvtier_lease_valid(tier, l);
		unsigned int iv = valid ?
			clamp_t(u32, le32_to_cpu(l->interval_ms),
				KVTIER_LEASE_MIN_MS, KVTIER_LEASE_MAX_MS) :
			READ_ONCE(tier->knobs.lease_interval_ms);
		unsigned int waited = 0, wait = 2 * iv + 1000;

		dev_info(&tier->dev, "%s: ownership lease %s (%.64s, kvtier%u, seq %llu); watching it for %u ms\n",
			 path, valid ? "held" : "damaged",
			 valid ? l->host : "-", le32_to_cpu(l->tier),
			 le64_to_cpu(l->seq), wait);
		while (waited < wait) {
			unsigned int step = min(iv, wait - waited);

			ret = kvtier_lease_sleep(step);
			if (ret)
				goto out;
			waited += step;
			ret = kvtier_lease_read(tier, buf);
			if (ret)
				goto out;
			if (memcmp(&old, l, sizeof(old)) &&
			    kvtier_lease_valid(tier, l) &&
			    le32_to_cpu(l->state) == KVTIER_LEASE_FREE) {
				/* The holder detached meanwhile. */
				old = *l;
				if (found)
					memcpy(found, buf, PAGE_SIZE);
				break;
			}
			if (memcmp(&old, l, sizeof(old))) {
				ret = -EBUSY;
				dev_err(&tier->dev, "%s: attached read-write elsewhere: ownership lease held by %.64s (kvtier%u, attached at %llu s since the epoch) and renewed within %u ms; refusing a second read-write attach (read_only=1 attaches it read-only)\n",
					path, kvtier_lease_valid(tier, l) ?
					l->host : "?", le32_to_cpu(l->tier),
					le64_to_cpu(l->acquired), waited);
				goto out;
			}
		}
		if (le32_to_cpu(old.state) != KVTIER_LEASE_FREE)
			dev_warn(&tier->dev, "%s: ownership lease of %.64s (kvtier%u) not renewed for %u ms: taking it over\n",
				 path, valid ? old.host : "-",
				 le32_to_cpu(old.tier), wait);
	}

	st->lease_seq = le64_to_cpu(old.seq);
	st->lease_nonce = get_random_u64();
	st->lease_acquired = ktime_get_real_seconds();
	st->lease_interval_ms = READ_ONCE(tier->knobs.lease_interval_ms);
	ret = kvtier_lease_write(tier, buf, KVTIER_LEASE_HELD);
	if (ret)
		goto out;
	/* Another attach that read the record when we did writes in this time. */
	ret = kvtier_lease_sleep(st->lease_interval_ms);
	if (!ret)
		ret = kvtier_lease_read(tier, buf);
	if (!ret && kvtier_lease_foreign(tier, buf)) {
		ret = -EBUSY;
		dev_err(&tier->dev, "%s: another read-write attach (%.64s, kvtier%u) took the ownership lease at the same time; refusing this one\n",
			path, l->host, le32_to_cpu(l->tier));
	} else if (!ret && !kvtier_lease_valid(tier, l)) {
		ret = -EIO;
		dev_err(&tier->dev, "%s: the ownership lease record just written reads back damaged\n",
			path);
	}
	if (ret)
		goto out;
	st->lease_held = true;
	queue_delayed_work(kvtier_lease_wq, &st->lease_work,
			   msecs_to_jiffies(st->lease_interval_ms));
out:
	kfree(buf);
	return ret;
}

/*
 * Detach (@found NULL): stop renewing and write the record free, unless
 * another attach took it over. A refused attach passes what
 * kvtier_lease_acquire() found and that block is written back as it was.
 * Caller holds tier->lock. A failed write is logged; the next attach then
 * waits for the lease to expire instead.
 */
void kvtier_lease_release(struct kvtier_tier *tier, const void *found)
{
	struct kvtier_store *st = &tier->store;
	void *buf;
	int ret = -ENOMEM;

	if (!st->lease_held)
		return;
	cancel_delayed_work_sync(&st->lease_work);
	st->lease_held = false;
	if (st->lease_lost)
		return;
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (buf) {
		ret = kvtier_lease_read(tier, buf);
		if (!ret && kvtier_lease_foreign(tier, buf))
			ret = -EBUSY;
		if (!ret && found) {
			memcpy(buf, found, PAGE_SIZE);
			ret = kvtier_io_meta(tier, REQ_OP_WRITE | REQ_FUA,
					     tier->store.lease_block, buf, 1,
					     KVT_META_QUIET);
		} else if (!ret) {
			ret = kvtier_lease_write(tier, buf, KVTIER_LEASE_FREE);
		}
	}
	kfree(buf);
	if (ret)
		dev_warn(&tier->dev, "%s: ownership lease not released (%d): the next read-write attach waits for it to expire\n",
			 tier->backing.path, ret);
}

/*
 * sysfs "lease": what the namespace's lease record says. The holder shows
 * its own record from memory (no I/O: a stalled path must not block the
 * reader, who holds tier->lock); anyone else reads it from the media now.
 * Caller holds tier->lock with a namespace attached.
 */
ssize_t kvtier_lease_show(struct kvtier_tier *tier, char *out)
{
	struct kvtier_store *st = &tier->store;
	struct kvtier_disk_lease *l;
	const char *who;
	void *buf;
	ssize_t n;
	int ret;

	if (!st->lease_block)
		return sysfs_emit(out, "none\n");
	if (st->lease_held && !READ_ONCE(st->lease_lost)) {
		n = sysfs_emit(out, "held-here host=%.64s tier=%u seq=%llu ",
			       utsname()->nodename, tier->id,
			       READ_ONCE(st->lease_seq));
		n += sysfs_emit_at(out, n, "interval_ms=%u acquired=%llu renewed=%llu\n",
				   st->lease_interval_ms, st->lease_acquired,
				   READ_ONCE(st->lease_renewed));
		return n;
	}
	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	l = buf;
	ret = kvtier_lease_read(tier, buf);
	if (ret) {
		kfree(buf);
		return ret;
	}
	if (!kvtier_lease_valid(tier, l)) {
		n = sysfs_emit(out, "damaged\n");
	} else {
		who = le32_to_cpu(l->state) == KVTIER_LEASE_FREE ? "free" : "held";
		n = sysfs_emit(out, "%s host=%.64s tier=%u seq=%llu ", who,
			       l->host, le32_to_cpu(l->tier), le64_to_cpu(l->seq));
		n += sysfs_emit_at(out, n, "interval_ms=%u acquired=%llu renewed=%llu\n",
				   le32_to_cpu(l->interval_ms),
				   le64_to_cpu(l->acquired),
				   le64_to_cpu(l->renewed));
	}
	kfree(buf);
	return n;
}

/*
 * Format: a free record of the new uuid (what the block held before is no
 * record of it, and would be waited on as a damaged one).
 */
int kvtier_lease_format(struct kvtier_tier *tier)
{
	struct kvtier_store *st = &tier->store;
	void *buf;
	int ret;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	st->lease_seq = 0;
	st->lease_nonce = 0;
	st->lease_acquired = 0;
	st->lease_interval_ms = READ_ONCE(tier->knobs.lease_interval_ms);
	ret = kvtier_lease_write(tier, buf, KVTIER_LEASE_FREE);
	kfree(buf);
	return ret;
}

void kvtier_lease_init(struct kvtier_store *st)
{
	INIT_DELAYED_WORK(&st->lease_work, kvtier_lease_renew);
}
