# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.kvstore.KVStore against the module: every method, the block
layout's crash rules (headers, leftovers, puts in progress, collisions),
several processes, other users, pins and capacity reclaim.

Needs a tier (KVTIER_TEST_TIER, see _support); run as root in the VM by
tests/kvtier_python_test.c on a 512 MiB namespace.
"""

from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import tempfile
import unittest

import kvtier
from kvtier.kvstore import HEADER_BYTES, KEY_MAX, KVStore

from ._support import KVT_GID, NOBODY, TierCase, as_user

KiB = 1 << 10
MiB = 1 << 20
BLOCK = 64 * KiB
# <linux/loop.h>
_LOOP_SET_FD, _LOOP_CLR_FD, _LOOP_CTL_GET_FREE = 0x4C00, 0x4C01, 0x4C82


def key(i: int, tag: str = "k") -> bytes:
    return f"{tag}-{os.getpid()}-{i}".encode()


def block(k: bytes, n: int = BLOCK) -> bytes:
    """A block only @k has: its bytes repeated, cut to @n."""
    unit = k + b"|"
    return (unit * (n // len(unit) + 1))[:n]


class StoreCase(TierCase):
    """A KVStore on the test tier with a prefix no other test uses;
    every region of that prefix is unlinked afterwards."""

    def setUp(self) -> None:
        super().setUp()
        self.prefix = f"t{os.getpid() % 10000}{self.id()[-3:]}."[:15]
        self.kv = KVStore(self.tier, BLOCK, prefix=self.prefix)
        self.addCleanup(self._clean)

    def _clean(self) -> None:
        self.kv.close()
        with kvtier.Tier(self.tier_id) as t:
            for e in t.regions():
                if e.name.startswith(self.prefix):
                    if e.is_pinned:
                        t.set_flags(e.name, clear=kvtier.RegionFlag.PINNED)
                    t.unlink(e.name)


class Blocks(StoreCase):
    """put, get, exists, delete and their batches: bytes round-trip."""

    def test_put_get(self) -> None:
        k = key(1)
        self.assertFalse(self.kv.exists(k))
        self.assertTrue(self.kv.put(k, block(k)))
        self.assertTrue(self.kv.exists(k))
        out = bytearray(BLOCK)
        self.assertTrue(self.kv.get(k, out))
        self.assertEqual(out, block(k))
        # A second put of a stored key stores nothing and changes nothing.
        self.assertFalse(self.kv.put(k, bytes(BLOCK)))
        out2 = bytearray(BLOCK)
        self.assertTrue(self.kv.get(k, out2))
        self.assertEqual(out2, block(k))
        self.assertEqual(len(self.kv), 1)

    def test_miss_leaves_buffer(self) -> None:
        out = bytearray(b"\x5a" * BLOCK)
        self.assertFalse(self.kv.get(key(2), out))
        self.assertEqual(out, b"\x5a" * BLOCK)

    def test_layout(self) -> None:
        """One persistent region per block: header page, then the block."""
        k = key(3)
        self.kv.put(k, block(k))
        name = self.kv.name_of(k)
        self.assertTrue(name.startswith(self.prefix))
        self.assertLessEqual(len(name), 63)
        [e] = [e for e in self.tier.regions() if e.name == name]
        self.assertTrue(e.is_persistent)
        self.assertEqual(e.size, HEADER_BYTES + BLOCK)
        with self.tier.open(name, readonly=True) as r:
            head = r.pread(HEADER_BYTES, 0)
            self.assertEqual(head[:8], b"KVTBLK01")
            self.assertIn(k, head)
            self.assertEqual(r.pread(BLOCK, HEADER_BYTES), block(k))

    def test_buffers(self) -> None:
        """Any C-contiguous buffer of block_bytes: bytearray, memoryview,
        array, mmap; get writes into it in place."""
        import array
        import mmap
        k = key(4)
        self.kv.put(k, memoryview(block(k)))
        a = array.array("I", bytes(BLOCK))
        self.assertTrue(self.kv.get(k, a))
        self.assertEqual(a.tobytes(), block(k))
        m = mmap.mmap(-1, BLOCK)
        self.assertTrue(self.kv.get(k, m))
        self.assertEqual(m[:], block(k))
        m.close()

    def test_batches(self) -> None:
        keys = [key(i, "b") for i in range(8)]
        self.assertEqual(self.kv.batch_put(keys[:5], [block(k) for k in keys[:5]]),
                         [True] * 5)
        self.assertEqual(self.kv.batch_put(keys[3:], [block(k) for k in keys[3:]]),
                         [False, False, True, True, True])
        outs = [bytearray(BLOCK) for _ in keys]
        self.assertEqual(self.kv.batch_get(keys, outs), [True] * 8)
        for k, o in zip(keys, outs):
            self.assertEqual(o, block(k))
        self.assertTrue(self.kv.delete(keys[5]))
        self.assertEqual(self.kv.batch_exists(keys),
                         [True] * 5 + [False] + [True] * 2)
        self.assertEqual(self.kv.prefix_hits(keys), 5)
        self.assertEqual(self.kv.prefix_hits([]), 0)
        # A key twice in one batch is stored once, at once.
        twice = [key(20, "b"), key(21, "b"), key(20, "b")]
        self.assertEqual(self.kv.batch_put(twice, [block(k) for k in twice]),
                         [True, True, False])
        out = bytearray(BLOCK)
        self.assertTrue(self.kv.get(twice[0], out))
        self.assertEqual(out, block(twice[0]))

    def test_delete(self) -> None:
        k = key(6)
        self.assertFalse(self.kv.delete(k))
        self.kv.put(k, block(k))
        # A reader with the block open keeps its bytes through a delete.
        with self.tier.open(self.kv.name_of(k), readonly=True) as r:
            self.assertTrue(self.kv.delete(k))
            self.assertFalse(self.kv.exists(k))
            self.assertEqual(r.pread(BLOCK, HEADER_BYTES), block(k))
        self.assertTrue(self.kv.put(k, block(k, BLOCK)))
        self.assertEqual(len(self.kv), 1)

    def test_persists(self) -> None:
        """Across store objects and tier handles (module reloads and
        reboots: tests/kvtier_python_test.c and the crash cuts)."""
        k = key(7)
        self.kv.put(k, block(k))
        self.kv.close()
        with KVStore(self.tier_id, BLOCK, prefix=self.prefix) as kv:
            out = bytearray(BLOCK)
            self.assertTrue(kv.get(k, out))
            self.assertEqual(out, block(k))
        # Another block size under the same prefix sees no blocks, and
        # never replaces one.
        with KVStore(self.tier_id, 2 * BLOCK, prefix=self.prefix) as kv:
            self.assertFalse(kv.exists(k))
            with self.assertRaises(FileExistsError) as cm:
                kv.put(k, bytes(2 * BLOCK))
            self.assertKvtierError(cm.exception, errno.EEXIST)
        out = bytearray(BLOCK)
        self.assertTrue(self.kv.get(k, out))
        self.assertEqual(out, block(k))

    def test_odd_size(self) -> None:
        """Blocks that are not a page multiple."""
        with KVStore(self.tier, 5000, prefix=self.prefix) as kv:
            k = key(8)
            kv.put(k, block(k, 5000))
            out = bytearray(5000)
            self.assertTrue(kv.get(k, out))
            self.assertEqual(out, block(k, 5000))


class BadArguments(StoreCase):
    """Refused before any call to the tier, with clear errors."""

    def test_store_arguments(self) -> None:
        for bad in (0, -1, 1.5, "4096"):
            with self.assertRaises(ValueError):
                KVStore(self.tier, bad)  # type: ignore[arg-type]
        for bad in ("", "x" * 16, "a/b", "a b", "é"):
            with self.assertRaises(ValueError):
                KVStore(self.tier, BLOCK, prefix=bad)
        for bad in (-1, 0o1000):
            with self.assertRaises(ValueError):
                KVStore(self.tier, BLOCK, mode=bad)
        with self.assertRaises(FileNotFoundError):
            KVStore(99, BLOCK)

    def test_keys(self) -> None:
        out = bytearray(BLOCK)
        for bad in (b"", b"x" * (KEY_MAX + 1)):
            with self.assertRaises(ValueError):
                self.kv.get(bad, out)
            with self.assertRaises(ValueError):
                self.kv.put(bad, out)
        for bad in ("str", 5, None):
            with self.assertRaises(TypeError):
                self.kv.exists(bad)  # type: ignore[arg-type]
        self.assertTrue(self.kv.put(b"x" * KEY_MAX, block(b"x")))

    def test_buffers(self) -> None:
        k = key(9)
        with self.assertRaises(ValueError):
            self.kv.put(k, bytes(BLOCK - 1))
        with self.assertRaises(ValueError):
            self.kv.get(k, bytearray(BLOCK + 1))
        with self.assertRaises(TypeError):
            self.kv.get(k, bytes(BLOCK))        # read-only
        with self.assertRaises(TypeError):
            self.kv.put(k, 12)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            self.kv.get(k, memoryview(bytearray(2 * BLOCK))[::2])
        with self.assertRaises(ValueError):
            self.kv.batch_put([k], [])
        with self.assertRaises(ValueError):
            self.kv.batch_get([k, k], [bytearray(BLOCK)])
        # Nothing of it reached the tier.
        self.assertEqual(len(self.kv), 0)


class CrashRules(StoreCase):
    """What a crashed, a concurrent or a colliding put leaves."""

    def _region(self, k: bytes, head: bytes = b"") -> kvtier.Region:
        r = self.tier.open(self.kv.name_of(k), HEADER_BYTES + BLOCK, create=True,
                           exclusive=True, persistent=True)
        r.pwrite(block(k), HEADER_BYTES)
        if head:
            r.pwrite(head, 0)
        r.fsync()
        return r

    def test_leftover_is_a_miss_and_replaced(self) -> None:
        """A region without a valid header (a put cut before its header
        was durable) is a miss; the next put replaces it."""
        k = key(10)
        self._region(k).close()
        self.assertFalse(self.kv.exists(k))
        out = bytearray(BLOCK)
        self.assertFalse(self.kv.get(k, out))
        self.assertEqual(out, bytes(BLOCK))
        self.assertTrue(self.kv.put(k, block(k)))
        self.assertTrue(self.kv.get(k, out))
        self.assertEqual(out, block(k))

    def test_put_in_progress(self) -> None:
        """While another file holds a header-less region, a put of that
        key waits for its writer, then gives EAGAIN and leaves it."""
        k = key(11)
        with self._region(k):
            with self.assertRaises(BlockingIOError) as cm:
                self.kv.put(k, block(k))
            self.assertKvtierError(cm.exception, errno.EAGAIN)
            self.assertFalse(self.kv.exists(k))
        self.assertTrue(self.kv.put(k, block(k)))

    def test_damaged_header(self) -> None:
        k = key(12)
        self.kv.put(k, block(k))
        with self.tier.open(self.kv.name_of(k)) as r:
            head = bytearray(r.pread(64, 0))
            head[32] ^= 1                       # the key's first byte
            r.pwrite(head, 0)
        self.assertFalse(self.kv.exists(k))

    def test_collision_is_a_miss(self) -> None:
        """A whole block of another key under this key's name (a digest
        collision) is never returned for it."""
        k, other = key(13), key(14)
        self.kv.put(other, block(other))
        with self.tier.open(self.kv.name_of(other), readonly=True) as r:
            head = r.pread(HEADER_BYTES, 0)
        self._region(k, head).close()
        out = bytearray(BLOCK)
        self.assertFalse(self.kv.get(k, out))
        self.assertEqual(out, bytes(BLOCK))
        with self.assertRaises(FileExistsError):
            self.kv.put(k, block(k))
        self.assertTrue(self.kv.get(other, out))


class Processes(StoreCase):
    """Several processes on one store; other users."""

    def test_concurrent_puts(self) -> None:
        keys = [key(i, "c") for i in range(24)]
        pids = []
        for p in range(4):
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    with KVStore(self.tier_id, BLOCK, prefix=self.prefix) as kv:
                        mine = keys[p * 4:] + keys[:p * 4]
                        stored = sum(kv.put(k, block(k)) for k in mine)
                        os.write(1, f"# process {p}: stored {stored}\n".encode())
                        status = 0
                finally:
                    os._exit(status)
            pids.append(pid)
        for pid in pids:
            _, st = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(st), 0)
        self.assertEqual(len(self.kv), len(keys))
        out = bytearray(BLOCK)
        for k in keys:
            self.assertTrue(self.kv.get(k, out))
            self.assertEqual(out, block(k))

    def test_other_users(self) -> None:
        """mode 0o600 blocks are the owner's; 0o644 ones others read."""
        private, public = key(20), key(21)
        self.kv.put(private, block(private))
        with KVStore(self.tier, BLOCK, prefix=self.prefix, mode=0o644) as kv:
            kv.put(public, block(public))
        self.give_device_to_group()
        prefix = self.prefix

        def reader() -> None:
            with KVStore(self.tier_id, BLOCK, prefix=prefix) as kv:
                out = bytearray(BLOCK)
                assert kv.get(public, out) and out == block(public)
                try:
                    kv.get(private, out)
                except PermissionError as e:
                    assert isinstance(e, kvtier.KvtierError) and e.errno == errno.EACCES
                else:
                    raise AssertionError("read another user's 0o600 block")
                try:
                    kv.delete(public)
                except PermissionError:
                    pass
                else:
                    raise AssertionError("deleted another user's block")
        status, why = as_user(reader, NOBODY, NOBODY, (KVT_GID,))
        self.assertEqual(status, 0, why)
        self.assertTrue(self.kv.exists(public))


class Capacity(StoreCase):
    """A full namespace: unused blocks reclaimed least recently used,
    pinned ones kept; nothing reclaimable is ENOSPC. On tier 1, attached
    to a 64 MiB loop device over tmpfs (/tmp): filling the 512 MiB emulated NVMe
    namespace twice took minutes under TCG."""

    LOOP_MIB = 64

    def setUp(self) -> None:
        if os.geteuid() != 0:
            self.skipTest("needs root for a loop device and an attach")
        spare = self.tier_id + 1
        if not os.path.exists(f"/dev/kvtier{spare}"):
            self.skipTest(f"no /dev/kvtier{spare} (the module has one tier)")
        if kvtier.attr(spare, "state") != "detached":
            self.skipTest(f"kvtier{spare} is in use")
        fd, img = tempfile.mkstemp(prefix="kvstore-", dir="/tmp")
        self.addCleanup(os.unlink, img)
        try:
            os.ftruncate(fd, self.LOOP_MIB * MiB)
            # As kvt_loop_attach() does, once the loop driver is loaded.
            subprocess.run(["modprobe", "-q", "loop"], check=False)
            ctl = os.open("/dev/loop-control", os.O_RDWR)
            try:
                n = fcntl.ioctl(ctl, _LOOP_CTL_GET_FREE)
            finally:
                os.close(ctl)
            dev = f"/dev/loop{n}"
            lfd = os.open(dev, os.O_RDWR)
            self.addCleanup(os.close, lfd)
            fcntl.ioctl(lfd, _LOOP_SET_FD, fd)
            self.addCleanup(fcntl.ioctl, lfd, _LOOP_CLR_FD, 0)
        finally:
            os.close(fd)
        kvtier.attach(spare, dev)
        self.addCleanup(kvtier.detach, spare)
        self.tier_id = spare
        super().setUp()

    def test_reclaim_lru_pins_enospc(self) -> None:
        """Fill 16 blocks past the namespace: the oldest unused blocks go,
        the pinned ones (held open; PINNED) and the newest stay. Then,
        with every block held open, a put is ENOSPC and leaves nothing."""
        big = MiB
        cap = self.tier.info().capacity_bytes
        n = cap // big + 16
        with KVStore(self.tier, big, prefix=self.prefix) as kv:
            keys = [key(i, "r") for i in range(n)]
            kv.put(keys[0], block(keys[0], big))
            kv.put(keys[1], block(keys[1], big))
            self.assertTrue(kv.pin(keys[0]))            # held open
            self.assertTrue(kv.pin(keys[1], persistent=True))
            for k in keys[2:]:
                kv.put(k, block(k, big))
            out = bytearray(big)
            hits = [kv.get(k, out) and out == block(k, big) for k in keys]
            print(f"# {n} blocks of 1 MiB on {cap >> 20} MiB: {sum(hits)} kept")
            self.assertTrue(hits[0] and hits[1], "pinned blocks were reclaimed")
            self.assertTrue(all(hits[-8:]), "the newest blocks are gone")
            self.assertFalse(all(hits[2:12]), "nothing old was reclaimed")
            # Every hit is whole; the misses are gone, not damaged.
            self.assertEqual(len(kv), sum(hits))

            for k, hit in zip(keys, hits):
                if hit:
                    self.assertTrue(kv.pin(k))
            before = len(kv)
            extra = [key(i, "f") for i in range(16)]
            with self.assertRaises(OSError) as cm:
                for k in extra:
                    kv.put(k, block(k, big))
            self.assertKvtierError(cm.exception, errno.ENOSPC)
            stored = sum(kv.exists(k) for k in extra)
            self.assertEqual(len(kv), before + stored)
            for k in keys:
                if kv.exists(k):
                    self.assertTrue(kv.get(k, out) and out == block(k, big))

            self.assertTrue(kv.unpin(keys[0]))
            self.assertFalse(kv.unpin(keys[0]))
            self.assertTrue(kv.unpin(keys[1], persistent=True))
            self.assertFalse(kv.unpin(keys[1], persistent=True))
            [e] = [e for e in self.tier.regions() if e.name == kv.name_of(keys[1])]
            self.assertFalse(e.is_pinned)

    def test_region_table_full(self) -> None:
        """More blocks than the tier has persistent region records (one
        per 256 KiB of namespace): put makes room by unlinking this
        store's least recently used blocks."""
        small = 4 * KiB
        records = self.tier.info().capacity_bytes // (256 * KiB)
        n = records + 32
        with KVStore(self.tier, small, prefix=self.prefix) as kv:
            keys = [key(i, "t") for i in range(n)]
            for k in keys:
                self.assertTrue(kv.put(k, block(k, small)))
            out = bytearray(small)
            hits = [kv.get(k, out) and out == block(k, small) for k in keys]
            print(f"# {n} blocks, {records} records: {sum(hits)} kept")
            self.assertTrue(all(hits[-16:]), "the newest blocks are gone")
            self.assertFalse(hits[0], "the oldest block was kept")
            self.assertEqual(len(kv), sum(hits))


if __name__ == "__main__":
    unittest.main()
