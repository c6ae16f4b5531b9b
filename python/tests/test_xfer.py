# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.Xfer against the module: blocks stored and restored from every
kind of buffer, tickets, buffers held until reaped, threads, a persistent
region restored by a new xfer, and every error.

Needs a tier (KVTIER_TEST_TIER, see _support); run as root in the VM.
"""

from __future__ import annotations

import array
import errno
import mmap
import threading
import time
import unittest
from collections.abc import Callable

import kvtier

from ._support import TierCase, pattern

BLOCK = 64 << 10
NBLOCKS = 16
SIZE = 4 << 20


class Blocks(TierCase):
    """Round trips and tickets."""

    def setUp(self) -> None:
        super().setUp()
        self.region = self.tier.create(SIZE)
        self.addCleanup(self.region.close)
        self.xfer = kvtier.Xfer(self.region, BLOCK)
        self.addCleanup(self.xfer.close)

    def offsets(self) -> list[int]:
        # Every other block, from the end, one unaligned.
        offs = [SIZE - (2 * i + 1) * BLOCK for i in range(NBLOCKS - 1)]
        return offs + [12345]

    def test_round_trip(self) -> None:
        x = self.xfer
        self.assertEqual(x.block_bytes, BLOCK)
        self.assertFalse(x.cuda)
        blocks = [pattern(100 + i, BLOCK) for i in range(NBLOCKS)]
        offs = self.offsets()
        t = x.store(blocks, offs)
        self.assertGreaterEqual(t, 1)
        x.wait(t)
        for b, o in zip(blocks, offs):
            self.assertEqual(self.region.pread(BLOCK, o), b)
        back = [bytearray(BLOCK) for _ in range(NBLOCKS)]
        t2 = x.restore(back, offs)
        self.assertGreater(t2, t)
        x.wait(t2)
        self.assertEqual([bytes(b) for b in back], blocks)
        self.assertEqual(x.pending, [])

    def test_buffer_kinds(self) -> None:
        x = self.xfer
        data = pattern(9, 4 * BLOCK)
        src: list[kvtier.Block] = [
            memoryview(data)[:BLOCK],                           # read-only
            array.array("B", data[BLOCK:2 * BLOCK]),
            bytearray(data[2 * BLOCK:3 * BLOCK] + b"extra"),    # larger
            data[3 * BLOCK:]]
        x.wait(x.store(src, [0, BLOCK, 2 * BLOCK, 3 * BLOCK]))
        m = mmap.mmap(-1, BLOCK)
        big = bytearray(2 * BLOCK)
        doubles = array.array("d", bytes(BLOCK))
        x.wait(x.restore([m, memoryview(big)[BLOCK:], doubles],
                         [0, BLOCK, 2 * BLOCK]))
        self.assertEqual(m[:], data[:BLOCK])
        self.assertEqual(big[BLOCK:], data[BLOCK:2 * BLOCK])
        self.assertEqual(big[:BLOCK], bytes(BLOCK))
        self.assertEqual(doubles.tobytes(), data[2 * BLOCK:3 * BLOCK])
        m.close()

    def test_numpy(self) -> None:
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        x = self.xfer
        src = np.arange(2 * BLOCK // 4, dtype=np.float32).reshape(2, -1)
        x.wait(x.store([src[0], src[1]], [0, BLOCK]))
        dst = np.zeros_like(src)
        x.wait(x.restore([dst[1], dst[0]], [0, BLOCK]))
        self.assertTrue((dst[1] == src[0]).all())
        self.assertTrue((dst[0] == src[1]).all())

    def test_poll_and_reaping(self) -> None:
        x = self.xfer
        t = x.store([pattern(10, BLOCK)] * 8, [i * BLOCK for i in range(8)])
        deadline = time.monotonic() + 30
        while not x.poll(t):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.001)
        for again in (x.poll, x.wait):
            with self.assertRaises(FileNotFoundError) as cm:
                again(t)
            e = cm.exception
            self.assertKvtierError(e, errno.ENOENT)
            self.assertIn(f"ticket {t}", str(e))
            self.assertIn("reaped already", str(e))
        with self.assertRaises(FileNotFoundError):
            x.wait(t + 1000)
        with self.assertRaises(ValueError):
            x.poll(0)
        with self.assertRaises(TypeError):
            x.wait("1")                                 # type: ignore

    def test_buffers_held_until_reaped(self) -> None:
        x = self.xfer
        buf = bytearray(BLOCK)
        t = x.restore([buf], [0])
        self.assertEqual(x.pending, [t])
        with self.assertRaises(BufferError):
            buf.extend(b"x")            # exported until the ticket is reaped
        x.wait(t)
        buf.extend(b"x")
        self.assertEqual(x.pending, [])

    def test_wait_all(self) -> None:
        x = self.xfer
        ts = [x.store([pattern(i, BLOCK)], [i * BLOCK]) for i in range(6)]
        self.assertEqual(x.pending, ts)
        x.wait_all()
        self.assertEqual(x.pending, [])
        for i in range(6):
            self.assertEqual(self.region.pread(BLOCK, i * BLOCK),
                             pattern(i, BLOCK))

    def test_threads(self) -> None:
        x = self.xfer
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                for rnd in range(4):
                    off = (k * 4 + rnd) * BLOCK
                    data = pattern(1000 * k + rnd, BLOCK)
                    x.wait(x.store([data], [off]))
                    back = bytearray(BLOCK)
                    t = x.restore([back], [off])
                    while not x.poll(t):
                        time.sleep(0.0005)
                    if bytes(back) != data:
                        raise AssertionError(f"thread {k} round {rnd}")
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,))
                   for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertEqual(x.pending, [])

    def test_bad_arguments(self) -> None:
        x = self.xfer
        blk = bytes(BLOCK)
        cases: list[tuple[type[Exception], Callable[[], object]]] = [
            (ValueError, lambda: x.store([], [])),
            (ValueError, lambda: x.store([blk], [0, BLOCK])),
            (ValueError, lambda: x.store([blk], [SIZE - BLOCK + 1])),
            (ValueError, lambda: x.store([blk], [-1])),
            (ValueError, lambda: x.store([bytes(BLOCK - 1)], [0])),
            (ValueError, lambda: x.restore([blk], [0])),    # read-only
            (ValueError, lambda: x.restore(
                [memoryview(bytearray(2 * BLOCK))[::2]], [0])),
            (TypeError, lambda: x.store(blk, [0])),          # one buffer
            (TypeError, lambda: x.store([12345], [0])),      # no cuda
            (TypeError, lambda: x.store([None], [0])),      # type: ignore
            (TypeError, lambda: x.store([blk], ["0"])),     # type: ignore
        ]
        for exc, call in cases:
            with self.subTest(exc=exc.__name__):
                with self.assertRaises(exc):
                    call()
        self.assertEqual(x.pending, [])
        for kw in ({"block_bytes": 0}, {"block_bytes": -1},
                   {"block_bytes": BLOCK, "staging_buffers": 65},
                   {"block_bytes": BLOCK, "staging_bytes": (1 << 30) + 1},
                   {"block_bytes": BLOCK, "device": -1}):
            with self.subTest(kw=kw):
                with self.assertRaises(ValueError):
                    kvtier.Xfer(self.region, **kw)      # type: ignore
        with self.assertRaises(kvtier.KvtierError) as cm:
            kvtier.Xfer(self.region, SIZE + 4096)
        self.assertKvtierError(cm.exception, errno.EINVAL)
        self.assertIn("larger than the region", str(cm.exception))

    def test_cuda_without_a_runtime(self) -> None:
        try:
            x = kvtier.Xfer(self.region, BLOCK, cuda=True)
        except kvtier.KvtierError as e:
            self.assertIn(e.errno, (errno.ENOENT, errno.EIO), str(e))
            self.assertIn("CUDA", str(e))
            return
        x.close()
        self.skipTest("a usable CUDA runtime is installed here")


class Lifetimes(TierCase):
    """Closing, read-only regions, persistence through a new xfer."""

    def test_close_waits_and_releases(self) -> None:
        with self.tier.create(SIZE) as r:
            x = kvtier.Xfer(r, BLOCK)
            bufs = [bytearray(pattern(i, BLOCK)) for i in range(NBLOCKS)]
            x.store(bufs, [i * BLOCK for i in range(NBLOCKS)])
            x.close()                   # waits for the store
            x.close()
            for b in bufs:
                b.extend(b"released")
            for i in range(NBLOCKS):
                self.assertEqual(r.pread(BLOCK, i * BLOCK),
                                 pattern(i, BLOCK))
            self.assertTrue(x.closed)
            calls: list[Callable[[], object]] = [
                lambda: x.store([bytes(BLOCK)], [0]),
                lambda: x.restore([bytearray(BLOCK)], [0]),
                lambda: x.poll(1), lambda: x.wait(1)]
            for call in calls:
                with self.assertRaises(ValueError):
                    call()

    def test_outlives_its_region(self) -> None:
        r = self.tier.create(SIZE)
        with kvtier.Xfer(r, BLOCK) as x:
            r.close()
            data = pattern(11, BLOCK)
            x.wait(x.store([data], [BLOCK]))
            back = bytearray(BLOCK)
            x.wait(x.restore([back], [BLOCK]))
            self.assertEqual(back, data)

    def test_read_only_region(self) -> None:
        name = self.name("xro")
        with self.tier.open(name, SIZE, create=True) as w:
            w.pwrite(pattern(12, BLOCK), 0)
        with self.tier.open(name, readonly=True) as r, \
                kvtier.Xfer(r, BLOCK) as x:
            with self.assertRaises(PermissionError) as cm:
                x.store([bytes(BLOCK)], [0])
            self.assertKvtierError(cm.exception, errno.EACCES)
            self.assertIn("opened read-only", str(cm.exception))
            self.assertEqual(x.pending, [])
            back = bytearray(BLOCK)
            x.wait(x.restore([back], [0]))
            self.assertEqual(back, pattern(12, BLOCK))

    def test_persistent_restore(self) -> None:
        name = self.name("xpersist")
        blocks = [pattern(200 + i, BLOCK) for i in range(4)]
        offs = [i * 3 * BLOCK for i in range(4)]
        with self.tier.open(name, SIZE, create=True, persistent=True) as r:
            with kvtier.Xfer(r, BLOCK, staging_buffers=2,
                             staging_bytes=BLOCK) as x:
                x.wait(x.store(blocks, offs))
            r.fsync()
            r.cold()
        with kvtier.Tier(self.tier_id) as t, t.open(name) as r, \
                kvtier.Xfer(r, BLOCK) as x:
            back = [bytearray(BLOCK) for _ in blocks]
            x.wait(x.restore(back, offs))
            self.assertEqual([bytes(b) for b in back], blocks)


if __name__ == "__main__":
    unittest.main()
