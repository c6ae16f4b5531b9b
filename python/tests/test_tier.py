# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.Tier and the module functions against the module: information,
counters, attributes, listings, GPU host verdicts, attach, detach and
format (and their refusals), unprivileged callers, closed objects.

Needs a tier (KVTIER_TEST_TIER, see _support), attached, with a second
tier after it for the detached cases (tests/kvtier_python_test.c loads
the module with num_tiers=2); KVTIER_NS1, where set, is a namespace the
attach cycle may format. Run as root.
"""

from __future__ import annotations

import errno
import os
import stat
import unittest
from collections.abc import Callable

import kvtier

from . import _support
from ._support import TierCase, pattern

PAGE = 4096

STAT_NAMES = [
    "faults_minor", "faults_major", "faults_zero_fill", "refaults",
    "evictions_clean", "evictions_dirty", "writeback_pages",
    "writeback_bytes", "read_pages", "read_bytes", "readahead_pages",
    "prefetch_pages", "budget_stalls", "checksum_errors", "io_errors",
    "inflight_bytes", "writeback_background", "writeback_unchecked",
    "direct_read_pages", "pages_reused", "resident_bytes", "pinned_bytes",
    "used_bytes",
    "capacity_bytes", "budget_bytes",
]


class State(TierCase):
    """What an open tier tells about itself."""

    def test_info(self) -> None:
        info = self.tier.info()
        self.assertEqual(info.abi_version, kvtier.ABI_VERSION)
        self.assertEqual(info.tier_id, self.tier_id)
        self.assertTrue(info.attached)
        self.assertIn(kvtier.TierFlag.ATTACHED, info.flags)
        self.assertIn(info.logical_block_size, (512, 1024, 2048, 4096))
        self.assertGreater(info.capacity_bytes, 0)
        self.assertEqual(self.tier.id, self.tier_id)
        self.assertTrue(stat.S_ISCHR(os.fstat(self.tier.fileno()).st_mode))
        self.assertIn(f"kvtier{self.tier_id}", repr(self.tier))

    def test_stats(self) -> None:
        before = self.tier.stats()
        self.assertEqual(list(before), STAT_NAMES)
        self.assertTrue(all(isinstance(v, int) for v in before.values()))
        self.assertEqual(before["budget_bytes"],
                         int(self.tier.attr("host_budget_mb")) << 20)
        self.assertEqual(before["capacity_bytes"],
                         self.tier.info().capacity_bytes)
        with self.tier.create(16 * PAGE) as r:
            r.pwrite(pattern(7, 16 * PAGE), 0)
            r.cold()
            r.pread(16 * PAGE)
        after = kvtier.stats(self.tier_id)
        self.assertGreaterEqual(after["writeback_bytes"],
                                before["writeback_bytes"] + 16 * PAGE)
        self.assertGreaterEqual(after["read_bytes"],
                                before["read_bytes"] + 16 * PAGE)

    def test_attributes(self) -> None:
        self.assertEqual(self.tier.attr("state"), "attached")
        self.assertEqual(kvtier.attr(self.tier_id, "state"), "attached")
        self.assertTrue(self.tier.attr("backing_dev").startswith("/dev/"))
        old = self.tier.attr("readahead_kb")
        self.addCleanup(kvtier.set_attr, self.tier_id, "readahead_kb", old)
        new = 256 if old != "256" else 128
        self.tier.set_attr("readahead_kb", new)
        self.assertEqual(self.tier.attr("readahead_kb"), str(new))
        kvtier.set_attr(self.tier_id, "readahead_kb", str(old))
        self.assertEqual(self.tier.attr("readahead_kb"), old)
        with self.assertRaises(kvtier.KvtierError) as cm:
            self.tier.set_attr("readahead_kb", 5000)    # above its max
        self.assertKvtierError(cm.exception, errno.EINVAL)
        self.assertEqual(cm.exception.filename, "readahead_kb")
        self.assertEqual(self.tier.attr("readahead_kb"), old)
        with self.assertRaises(FileNotFoundError) as cm2:
            self.tier.attr("no_such_knob")
        self.assertIn("has no attribute no_such_knob", str(cm2.exception))
        with self.assertRaises(ValueError):
            self.tier.attr("../../power")

    def test_regions(self) -> None:
        name = self.name("listed")
        with self.tier.open(name, 3 * PAGE, create=True, mode=0o604) as r:
            r.pwrite(b"x", 0)
            entries = {e.name: e for e in self.tier.regions()}
            self.assertIn(name, entries)
            e = entries[name]
            self.assertEqual(e.size, 3 * PAGE)
            self.assertEqual(e.mode, 0o604)
            self.assertEqual(e.owner, os.geteuid())
            self.assertEqual(e.users, 1)
            self.assertFalse(e.is_persistent or e.is_pinned or e.is_sealed)
            self.assertGreater(e.created, 0)
            self.assertGreaterEqual(e.last_used, e.created)

    def test_gpu_host(self) -> None:
        host = self.tier.gpu_host()
        self.assertEqual(host.tier_id, self.tier_id)
        self.assertEqual(host.tier, 1)
        self.assertEqual(host.tier_device, self.tier.attr("backing_dev"))
        verdict, why = host.check(kvtier.GpuMode.OFFLOAD)
        self.assertIs(verdict, kvtier.GpuVerdict.YES)
        self.assertIn(f"tier {self.tier_id}", why)

    def test_closed(self) -> None:
        t = kvtier.Tier(self.tier_id)
        t.close()
        t.close()
        self.assertTrue(t.closed)
        calls: list[Callable[[], object]] = [
                     t.info, t.stats, t.fileno, t.regions, t.gpu_host,
                     lambda: t.attr("state"), lambda: t.create(PAGE),
                     lambda: t.open("x"), lambda: t.unlink("x"),
                     lambda: t.pin("x"), lambda: t.seal("x"),
                     lambda: t.set_attr("readahead_kb", 512)]
        for call in calls:
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("is closed", str(cm.exception))

    def test_close_with_open_regions(self) -> None:
        t = kvtier.Tier(self.tier_id)
        r = t.create(PAGE)
        t.close()
        with self.assertRaises(ValueError):
            t.info()
        r.pwrite(b"still works", 0)
        self.assertEqual(r.pread(11), b"still works")
        r.close()

    def test_no_such_tier(self) -> None:
        with self.assertRaises(FileNotFoundError) as cm:
            kvtier.Tier(4000)
        self.assertIn("num_tiers above 4000", str(cm.exception))


class Admin(TierCase):
    """attach, detach and format: refusals on a tier in use, and a cycle."""

    def next_tier(self) -> int:
        tid = self.tier_id + 1
        if not os.path.exists(f"/dev/kvtier{tid}"):
            self.skipTest(f"no /dev/kvtier{tid} (load with num_tiers=2)")
        if kvtier.attr(tid, "state") != "detached":
            self.skipTest(f"kvtier{tid} is not detached")
        return tid

    def test_refusals_on_a_tier_in_use(self) -> None:
        dev = self.tier.attr("backing_dev")
        tid = self.tier_id
        with self.assertRaises(kvtier.KvtierError) as cm:
            kvtier.detach(tid)                  # the tier is open
        self.assertKvtierError(cm.exception, errno.EBUSY)
        self.assertEqual(str(cm.exception), f"detach kvtier{tid}: Device "
                         "or resource busy (the tier is open, or has named "
                         "regions that are not persistent)")
        with self.assertRaises(kvtier.KvtierError) as cm2:
            kvtier.attach(tid, dev)             # attached already
        self.assertKvtierError(cm2.exception, errno.EBUSY)
        self.assertEqual(str(cm2.exception), f"attach {dev} to kvtier{tid}: "
                         "the device is claimed by someone else (a mount, "
                         "md/dm, another tier) or the tier is busy")
        self.assertEqual(cm2.exception.filename, dev)
        self.assertEqual(self.tier.attr("state"), "attached")

    def test_refusals_on_a_detached_tier(self) -> None:
        tid = self.next_tier()
        dev = self.tier.attr("backing_dev")
        with kvtier.Tier(tid) as t:
            info = t.info()
            self.assertFalse(info.attached)
            self.assertEqual((info.capacity_bytes, info.logical_block_size),
                             (0, 0))
            with self.assertRaises(kvtier.KvtierError) as cm:
                t.create(PAGE)
            self.assertKvtierError(cm.exception, errno.ENODEV)
            with self.assertRaises(kvtier.KvtierError) as cm2:
                t.open(_support.unique_name("nodev"), PAGE, create=True)
            self.assertKvtierError(cm2.exception, errno.ENODEV)
            self.assertIn("no namespace is attached", str(cm2.exception))
            self.assertEqual(t.gpu_host().tier, 0)
        with self.assertRaises(kvtier.KvtierError) as cm3:
            kvtier.attach(tid, dev)             # tier 0 holds it
        self.assertKvtierError(cm3.exception, errno.EBUSY)
        self.assertIn("claimed by someone else", str(cm3.exception))
        with self.assertRaises(kvtier.KvtierError) as cm4:
            kvtier.attach(tid, "/dev/null")     # not a block device
        self.assertKvtierError(cm4.exception, errno.EINVAL)
        self.assertEqual(str(cm4.exception), f"attach /dev/null to "
                         f"kvtier{tid}: Invalid argument")
        with self.assertRaises(FileNotFoundError) as cm5:
            kvtier.format(tid, "/nonexistent/ns")
        self.assertEqual(str(cm5.exception), f"format /nonexistent/ns for "
                         f"kvtier{tid}: No such file or directory")
        kvtier.detach(tid)                      # detached: does nothing
        self.assertEqual(kvtier.attr(tid, "state"), "detached")

    def test_format_attach_detach_cycle(self) -> None:
        ns = os.environ.get("KVTIER_NS1", "")
        if not ns or not stat.S_ISBLK(os.stat(ns).st_mode):
            self.skipTest("no second namespace in KVTIER_NS1")
        tid = self.next_tier()

        def detached() -> None:
            if kvtier.attr(tid, "state") != "detached":
                kvtier.detach(tid)
        self.addCleanup(detached)
        name = _support.unique_name("cycle")
        data = pattern(8, 5 * PAGE)
        kvtier.format(tid, ns)
        with kvtier.Tier(tid) as t:
            self.assertTrue(t.info().attached)
            self.assertEqual(t.regions(), [])
            with t.open(name, 8 * PAGE, create=True, persistent=True) as r:
                r.pwrite(data, 0)
                r.fsync()
        kvtier.detach(tid)
        self.assertEqual(kvtier.attr(tid, "state"), "detached")
        kvtier.attach(tid, ns)                  # the region comes back
        with kvtier.Tier(tid) as t:
            self.assertEqual([e.name for e in t.regions()], [name])
            with t.open(name) as r:
                self.assertEqual(r.pread(len(data)), data)
            t.unlink(name)
        kvtier.detach(tid)


class Unprivileged(TierCase):
    """A user in the tier's group, not root."""

    def setUp(self) -> None:
        super().setUp()
        self.give_device_to_group()

    def test_reads_but_does_not_administer(self) -> None:
        tid = self.tier_id
        dev = self.tier.attr("backing_dev")

        def child() -> None:
            with kvtier.Tier(tid) as t:
                assert t.info().attached
                assert set(t.stats()) == set(STAT_NAMES)
                assert t.attr("state") == "attached"
            tries: list[tuple[Callable[[], None], str]] = [
                    (lambda: kvtier.set_attr(tid, "readahead_kb", 128),
                     f"kvtier{tid}: set readahead_kb to 128: Permission "
                     "denied (needs root)"),
                    (lambda: kvtier.detach(tid),
                     f"detach kvtier{tid}: Permission denied (needs root)"),
                    (lambda: kvtier.attach(tid, dev),
                     f"attach {dev} to kvtier{tid}: Permission denied "
                     "(needs root)")]
            for call, text in tries:
                try:
                    call()
                except PermissionError as e:
                    assert isinstance(e, kvtier.KvtierError), repr(e)
                    assert str(e) == text, str(e)
                else:
                    raise AssertionError(text)
        status, out = _support.as_user(child, groups=(_support.KVT_GID,))
        self.assertEqual(status, 0, out)


if __name__ == "__main__":
    unittest.main()
