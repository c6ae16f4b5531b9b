# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.Region against the module: bytes in and out every way, hints,
pins, named, persistent, read-only and sealed regions, and every error.

Needs a tier (KVTIER_TEST_TIER, see _support); run as root in the VM by
tests/kvtier_python_test.c, whose tier has a 16 MiB host budget.
"""

from __future__ import annotations

import array
import errno
import mmap
import os
import stat
import time
import unittest
from collections.abc import Callable

import kvtier

from . import _support
from ._support import TierCase, pattern

PAGE = mmap.PAGESIZE
MiB = 1 << 20


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``cond()`` until it is true or ``timeout`` seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Anonymous(TierCase):
    """Unnamed regions: sizes, explicit I/O, ends of the region."""

    def test_create(self) -> None:
        with self.tier.create(5000) as r:
            self.assertEqual(r.size, 2 * PAGE)
            self.assertIsNone(r.name)
            self.assertFalse(r.readonly)
            self.assertIs(r.tier, self.tier)
            self.assertTrue(stat.S_ISCHR(os.fstat(r.fileno()).st_mode))
            info = r.info()
            self.assertIsNone(info.name)
            self.assertEqual(info.size, 2 * PAGE)
            self.assertEqual(info.users, 1)
            self.assertFalse(info.is_persistent)
            self.assertFalse(info.is_readonly)
            self.assertEqual(info.error, 0)
            self.assertEqual(r.pread(2 * PAGE), bytes(2 * PAGE))
        self.assertTrue(r.closed)

    def test_pwrite_pread(self) -> None:
        with self.tier.create(MiB) as r:
            data = pattern(1, 300000)
            self.assertEqual(r.pwrite(data, 12345), len(data))
            self.assertEqual(r.pread(len(data), 12345), data)
            self.assertEqual(r.pread(10, 12340), bytes(5) + data[:5])
            # Any buffer: memoryview, array, a slice of one.
            self.assertEqual(r.pwrite(memoryview(data)[100:200], 0), 100)
            self.assertEqual(r.pread(100, 0), data[100:200])
            a = array.array("I", range(1000))
            self.assertEqual(r.pwrite(a, PAGE), 4000)
            self.assertEqual(r.pread(4000, PAGE), a.tobytes())

    def test_readinto(self) -> None:
        with self.tier.create(MiB) as r:
            data = pattern(2, MiB)
            r.pwrite(data, 0)
            buf = bytearray(70000)
            self.assertEqual(r.readinto(buf, 999), 70000)
            self.assertEqual(buf, data[999:70999])
            big = bytearray(2000)
            view = memoryview(big)[500:1500]
            self.assertEqual(r.readinto(view, 0), 1000)
            self.assertEqual(big[500:1500], data[:1000])
            self.assertEqual(big[:500], bytes(500))
            a = array.array("H", bytes(64))
            self.assertEqual(r.readinto(a, 64), 64)
            self.assertEqual(a.tobytes(), data[64:128])
            self.assertEqual(r.readinto(bytearray(), 0), 0)
            with self.assertRaises(TypeError):
                r.readinto(b"read-only", 0)         # type: ignore[arg-type]
            with self.assertRaises(TypeError):
                r.readinto(42, 0)                   # type: ignore[arg-type]

    def test_numpy_readinto(self) -> None:
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        with self.tier.create(MiB) as r:
            src = np.arange(MiB // 8, dtype=np.uint64)
            self.assertEqual(r.pwrite(src, 0), MiB)
            dst = np.zeros((512, 256), dtype=np.uint64)
            self.assertEqual(r.readinto(dst, 0), MiB)
            self.assertTrue((dst.reshape(-1) == src).all())
            with self.assertRaises(ValueError):
                r.readinto(dst[:, ::2], 0)          # not contiguous

    def test_ends(self) -> None:
        with self.tier.create(2 * PAGE) as r:
            self.assertEqual(r.pread(100, 2 * PAGE), b"")
            self.assertEqual(r.pread(100, 3 * PAGE), b"")
            self.assertEqual(len(r.pread(100, 2 * PAGE - 10)), 10)
            buf = bytearray(100)
            self.assertEqual(r.readinto(buf, 2 * PAGE - 30), 30)
            self.assertEqual(r.pwrite(b"x" * 100, 2 * PAGE - 40), 40)
            with self.assertRaises(kvtier.KvtierError) as cm:
                r.pwrite(b"x", 2 * PAGE)
            self.assertKvtierError(cm.exception, errno.EFBIG)
            self.assertIn(f"write 1 bytes at {2 * PAGE}", str(cm.exception))
            self.assertIn("past the end", str(cm.exception))
            self.assertEqual(r.pwrite(b"", 2 * PAGE), 0)

    def test_bad_arguments(self) -> None:
        with self.tier.create(PAGE) as r:
            calls: list[Callable[[], object]] = [
                         lambda: r.pread(-1, 0), lambda: r.pread(1, -1),
                         lambda: r.pwrite(b"x", -5),
                         lambda: r.readinto(bytearray(1), -1),
                         lambda: r.cold(-1, 0), lambda: r.prefetch(0, -1),
                         lambda: r.pin(-4096), lambda: r.unpin(0, -1),
                         lambda: r.fadvise(-1, 0, os.POSIX_FADV_WILLNEED),
                         lambda: r.pread(1 << 62, 1 << 62),
                         lambda: r.map(offset=100),
                         lambda: r.map(offset=PAGE),
                         lambda: r.map(length=2 * PAGE),
                         lambda: r.map(length=0)]
            for call in calls:
                with self.assertRaises(ValueError):
                    call()
            calls = [lambda: r.pread("1", 0),       # type: ignore
                         lambda: r.pwrite("text", 0),   # type: ignore
                         lambda: r.pread(1, 0.5),       # type: ignore
                     lambda: self.tier.create("4096")]  # type: ignore
            for call in calls:
                with self.assertRaises(TypeError):
                    call()
            with self.assertRaises(ValueError):
                self.tier.create(0)
            with self.assertRaises(ValueError):
                self.tier.create(-1)

    def test_closed(self) -> None:
        r = self.tier.create(PAGE)
        r.close()
        r.close()
        self.assertTrue(r.closed)
        self.assertIn("closed", repr(r))
        calls: list[Callable[[], object]] = [
            r.fileno, r.info, r.map, r.fsync, r.cold, r.prefetch,
            r.pin, r.unpin, lambda: r.pread(1, 0),
                     lambda: r.pwrite(b"x", 0),
                     lambda: r.readinto(bytearray(1), 0),
            lambda: r.fadvise(0, 0, os.POSIX_FADV_WILLNEED)]
        for call in calls:
            with self.assertRaises(ValueError) as cm:
                call()
            self.assertIn("is closed", str(cm.exception))
        with self.assertRaises(ValueError):
            with r:
                pass


class Mapping(TierCase):
    """mmap views of a region: zero copy, both directions, lifetimes."""

    def test_map_both_ways(self) -> None:
        with self.tier.create(4 * PAGE) as r:
            with r.map() as m:
                self.assertEqual(len(m), 4 * PAGE)
                data = pattern(3, 4 * PAGE)
                m[:] = data
                self.assertEqual(r.pread(4 * PAGE), data)
                r.pwrite(b"kvtier", PAGE + 7)
                self.assertEqual(m[PAGE + 7:PAGE + 13], b"kvtier")
                mv = memoryview(m)
                mv[0:3] = b"abc"
                self.assertEqual(r.pread(3), b"abc")
                with self.assertRaises(BufferError):
                    m.close()           # exported: refused, not a crash
                mv.release()
            with r.map(offset=2 * PAGE, length=PAGE) as part:
                self.assertEqual(part[:], r.pread(PAGE, 2 * PAGE))

    def test_read_only_mapping(self) -> None:
        with self.tier.create(PAGE) as r:
            r.pwrite(b"hello", 0)
            with r.map(writable=False) as m:
                self.assertEqual(m[:5], b"hello")
                with self.assertRaises(TypeError):
                    m[0:1] = b"j"
                self.assertTrue(memoryview(m).readonly)

    def test_mapping_outlives_region(self) -> None:
        r = self.tier.create(PAGE)
        r.pwrite(b"survives", 0)
        m = r.map()
        r.close()
        self.assertEqual(m[:8], b"survives")
        m[8:10] = b"!!"
        self.assertEqual(m[:10], b"survives!!")
        m.close()

    def test_numpy_view(self) -> None:
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        with self.tier.create(MiB) as r:
            a = r.as_array(np.uint32)
            self.assertEqual(a.shape, (MiB // 4,))
            a[:] = np.arange(MiB // 4, dtype=np.uint32)
            self.assertEqual(r.pread(8, 4 * 10), np.array(
                [10, 11], dtype=np.uint32).tobytes())
            b = r.as_array("uint8", (256, -1), writable=False)
            self.assertEqual(b.shape, (256, 4096))
            self.assertFalse(b.flags.writeable)
            self.assertEqual(bytes(b[0, :8]), r.pread(8, 0))
            m = a.base
            m = getattr(m, "obj", m)        # numpy's memoryview of it
            self.assertIsInstance(m, mmap.mmap)
            with self.assertRaises(BufferError):
                m.close()                   # the array holds it
            del a, b

    def test_torch_view(self) -> None:
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        with self.tier.create(MiB) as r:
            t = r.as_tensor(torch.float16, (512, -1))
            self.assertEqual(tuple(t.shape), (512, 1024))
            t[3, 5] = 1.5
            off = (3 * 1024 + 5) * 2
            self.assertEqual(r.pread(2, off),
                             torch.tensor([1.5], dtype=torch.float16)
                             .numpy().tobytes())


class Hints(TierCase):
    """cold, prefetch, fadvise, pins, sync, and bytes through eviction."""

    def test_cold_and_prefetch(self) -> None:
        with self.tier.create(MiB) as r:
            data = pattern(4, MiB)
            r.pwrite(data, 0)
            r.fsync()
            self.assertEqual(r.info().dirty, 0)
            r.cold()
            info = r.info()
            self.assertEqual(info.resident, 0)
            self.assertGreaterEqual(info.namespace, MiB)
            self.assertEqual(r.pread(MiB), data)      # read back
            r.cold(0, 0)
            r.prefetch(0, MiB)
            self.assertTrue(wait_for(lambda: r.info().resident > 0),
                            "prefetch brought nothing in")
            self.assertEqual(r.pread(MiB), data)
            # Readahead of the reads above may still be landing: only the
            # calls and the bytes are checked here.
            r.fadvise(0, 0, os.POSIX_FADV_DONTNEED)
            r.fadvise(0, 0, os.POSIX_FADV_WILLNEED)
            self.assertEqual(r.pread(MiB), data)
            with self.assertRaises(kvtier.KvtierError) as cm:
                r.prefetch(2 * MiB, 0)          # offset past the end
            self.assertKvtierError(cm.exception, errno.EINVAL)

    def test_pins(self) -> None:
        with self.tier.create(4 * PAGE) as r:
            r.pwrite(pattern(5, 4 * PAGE), 0)
            r.pin(0, PAGE)
            self.assertEqual(r.info().pinned, PAGE)
            r.cold()
            self.assertGreaterEqual(r.info().resident, PAGE)
            r.unpin(0, PAGE)
            self.assertEqual(r.info().pinned, 0)
            r.pin()                              # the whole region
            self.assertEqual(r.info().pinned, 4 * PAGE)
            r.unpin()
            self.assertEqual(r.info().pinned, 0)
            for off, n in ((1, PAGE), (0, 100), (0, 8 * PAGE)):
                with self.subTest(offset=off, length=n):
                    with self.assertRaises(kvtier.KvtierError) as cm:
                        r.pin(off, n)
                    self.assertKvtierError(cm.exception, errno.EINVAL)
                    self.assertIn("page multiples", str(cm.exception))

    def test_bytes_survive_eviction(self) -> None:
        budget = int(self.tier.attr("host_budget_mb")) * MiB
        size = budget * 5 // 2
        chunk = MiB
        with self.tier.create(size) as r:
            for off in range(0, size, chunk):
                r.pwrite(pattern(off, chunk), off)
            self.assertLessEqual(r.info().resident, budget)
            for off in range(0, size, chunk):
                self.assertEqual(r.pread(chunk, off), pattern(off, chunk),
                                 f"bytes at {off}")
            with r.map(writable=False) as m:
                self.assertEqual(m[:chunk], pattern(0, chunk))


class Named(TierCase):
    """Named regions: opening, sharing, persistence, and their errors."""

    def test_shared_between_handles(self) -> None:
        name = self.name("shared")
        with self.tier.open(name, 2 * PAGE, create=True) as a, \
                self.tier.open(name) as b:
            self.assertEqual((a.name, b.name), (name, name))
            self.assertEqual(b.size, 2 * PAGE)
            a.pwrite(b"from a", 100)
            self.assertEqual(b.pread(6, 100), b"from a")
            self.assertEqual(a.info().users, 2)
            with self.tier.open(name, 2 * PAGE, create=True) as c:
                self.assertEqual(c.pread(6, 100), b"from a")   # own region

    def test_persistent_survives_close_and_reopen(self) -> None:
        name = self.name("persist")
        data = pattern(6, 3 * PAGE + 123)
        with self.tier.open(name, 4 * PAGE, create=True, persistent=True,
                            mode=0o640) as r:
            r.pwrite(data, 5)
            r.fsync()
            self.assertTrue(r.info().is_persistent)
        entry = next(e for e in self.tier.regions() if e.name == name)
        self.assertTrue(entry.is_persistent)
        self.assertEqual(entry.size, 4 * PAGE)
        self.assertEqual(entry.mode, 0o640)
        self.assertEqual(entry.owner, os.getuid())
        self.assertEqual(entry.users, 0)
        self.assertLessEqual(entry.created, time.time() + 1)
        with self.tier.open(name, persistent=True) as r:
            self.assertEqual(r.pread(len(data), 5), data)
            r.cold()
        with kvtier.Tier(self.tier_id) as t, t.open(name, 4 * PAGE) as r:
            self.assertEqual(r.pread(len(data), 5), data)

    def test_open_errors(self) -> None:
        missing = self.name("missing")
        with self.assertRaises(FileNotFoundError) as cm:
            self.tier.open(missing)
        e = cm.exception
        self.assertKvtierError(e, errno.ENOENT, kvtier.KvtierFileNotFoundError)
        self.assertEqual(e.filename, missing)
        self.assertEqual(e.strerror, f"kvtier{self.tier_id}: open region "
                         f"{missing!r}: No such file or directory (no "
                         "region has that name; create=True creates it)")

        name = self.name("exists")
        with self.tier.open(name, PAGE, create=True, exclusive=True):
            with self.assertRaises(FileExistsError) as cm2:
                self.tier.open(name, PAGE, create=True, exclusive=True)
            self.assertKvtierError(cm2.exception, errno.EEXIST)
            with self.assertRaises(FileExistsError):
                self.tier.open(name, persistent=True)   # not persistent
            flag_sets: list[dict[str, bool]] = [
                {"exclusive": True}, {"shared": True},
                {"create": True, "exclusive": True, "shared": True}]
            for kw in flag_sets:
                with self.subTest(flags=kw):
                    with self.assertRaises(kvtier.KvtierError) as cm3:
                        self.tier.open(name, PAGE, **kw)
                    self.assertKvtierError(cm3.exception, errno.EINVAL)
                    self.assertNotIsInstance(cm3.exception, FileExistsError)
            with self.assertRaises(kvtier.KvtierError) as cm4:
                self.tier.open(name, 3 * PAGE)          # not its size
            self.assertKvtierError(cm4.exception, errno.EINVAL)
        with self.assertRaises(kvtier.KvtierError) as cm5:
            self.tier.open(self.name("mode"), PAGE, create=True, mode=0o1000)
        self.assertKvtierError(cm5.exception, errno.EINVAL)
        with self.assertRaises(kvtier.KvtierError) as cm6:
            self.tier.open(self.name("size0"), 0, create=True)
        self.assertKvtierError(cm6.exception, errno.EINVAL)

    def test_names(self) -> None:
        long = "n" * 63
        self._made.append(long)
        with self.tier.open(long, PAGE, create=True) as r:
            self.assertEqual(r.name, long)
        with self.assertRaises(ValueError) as cm:
            self.tier.open("n" * 64, PAGE, create=True)
        self.assertIn("at most 63", str(cm.exception))
        for bad in ("", "has space", "a/b", "nul\0", "ü"):
            with self.subTest(name=bad):
                with self.assertRaises(ValueError):
                    self.tier.open(bad, PAGE, create=True)
                with self.assertRaises(ValueError):
                    self.tier.unlink(bad)
        with self.assertRaises(TypeError):
            self.tier.open(None, PAGE)                  # type: ignore
        for bad_mode in (-1, 1 << 32):
            with self.assertRaises(ValueError):
                self.tier.open(self.name("m"), PAGE, create=True,
                               mode=bad_mode)

    def test_read_only(self) -> None:
        name = self.name("ro")
        with self.tier.open(name, PAGE, create=True) as w:
            w.pwrite(b"written", 0)
        with self.tier.open(name, readonly=True) as r:
            self.assertTrue(r.readonly)
            self.assertTrue(r.info().is_readonly)
            self.assertEqual(r.pread(7), b"written")
            with self.assertRaises(PermissionError) as cm:
                r.pwrite(b"no", 0)
            self.assertKvtierError(cm.exception, errno.EACCES)
            self.assertIn("opened read-only", str(cm.exception))
            with r.map() as m:                      # read-only by default
                self.assertEqual(m[:7], b"written")
            with self.assertRaises(PermissionError):
                r.map(writable=True)

    def test_unlink(self) -> None:
        name = self.name("gone")
        r = self.tier.open(name, PAGE, create=True)
        r.pwrite(b"still here", 0)
        self.tier.unlink(name)
        self.assertNotIn(name, [e.name for e in self.tier.regions()])
        self.assertEqual(r.pread(10), b"still here")   # bound files keep it
        r.close()
        with self.assertRaises(FileNotFoundError):
            self.tier.unlink(name)
        with self.assertRaises(FileNotFoundError):
            self.tier.open(name)

    def test_flags_and_seal(self) -> None:
        name = self.name("seal")
        with self.tier.open(name, PAGE, create=True, persistent=True) as r:
            r.pwrite(b"immutable", 0)
            r.fsync()
            with self.assertRaises(kvtier.KvtierError) as cm:
                self.tier.seal(name)                    # still open
            self.assertKvtierError(cm.exception, errno.EBUSY)
            self.assertIn("files still have it open", str(cm.exception))
        self.tier.pin(name)
        entry = next(e for e in self.tier.regions() if e.name == name)
        self.assertTrue(entry.is_pinned)
        self.tier.unpin(name)
        entry = next(e for e in self.tier.regions() if e.name == name)
        self.assertFalse(entry.is_pinned)
        self.tier.seal(name)
        entry = next(e for e in self.tier.regions() if e.name == name)
        self.assertTrue(entry.is_sealed)
        with self.assertRaises(PermissionError) as cm2:
            self.tier.open(name)
        self.assertKvtierError(cm2.exception, errno.EPERM)
        with self.tier.open(name, readonly=True) as r:
            self.assertEqual(r.pread(9), b"immutable")
            self.assertTrue(r.info().is_sealed)
        with self.assertRaises(PermissionError):
            self.tier.set_flags(name, clear=kvtier.RegionFlag.SEALED)
        # Flags need a persistent region.
        plain = self.name("plain")
        with self.tier.open(plain, PAGE, create=True):
            with self.assertRaises(kvtier.KvtierError) as cm3:
                self.tier.pin(plain)
            self.assertKvtierError(cm3.exception, errno.EINVAL)
        with self.assertRaises(kvtier.KvtierError) as cm4:
            self.tier.set_flags(name, set=1 << 20)
        self.assertKvtierError(cm4.exception, errno.EINVAL)
        with self.assertRaises(ValueError):
            self.tier.set_flags(name, set=-1)
        self.tier.unlink(name)


class Users(TierCase):
    """Another user: the region's mode and owner decide."""

    def setUp(self) -> None:
        super().setUp()
        self.give_device_to_group()

    def run_as_nobody(self, fn: Callable[[], None],
                      group: bool = True) -> None:
        groups = (_support.KVT_GID,) if group else ()
        status, out = _support.as_user(fn, groups=groups)
        self.assertEqual(status, 0, out)

    def test_not_in_group(self) -> None:
        tid = self.tier_id

        def child() -> None:
            try:
                kvtier.Tier(tid)
            except PermissionError as e:
                assert isinstance(e, kvtier.KvtierError), repr(e)
                assert e.errno == errno.EACCES, e.errno
                assert "needs root or the kvtier group" in str(e), str(e)
            else:
                raise AssertionError("opened the tier outside the group")
        self.run_as_nobody(child, group=False)

    def test_modes(self) -> None:
        private, public = self.name("private"), self.name("public")
        with self.tier.open(private, PAGE, create=True, mode=0o600) as p, \
                self.tier.open(public, PAGE, create=True, mode=0o644) as q:
            p.pwrite(b"secret", 0)
            q.pwrite(b"public", 0)
        tid = self.tier_id

        def child() -> None:
            with kvtier.Tier(tid) as t:
                tries: list[tuple[str, dict[str, bool]]] = [
                    (private, {}), (private, {"readonly": True}),
                    (public, {})]
                for name, kw in tries:
                    try:
                        t.open(name, **kw)
                    except PermissionError as e:
                        assert isinstance(e, kvtier.KvtierError)
                        assert e.errno == errno.EACCES, (name, e.errno)
                        assert e.filename == name
                        assert "its mode does not let you open it" in str(e)
                    else:
                        raise AssertionError(f"opened {name} {kw}")
                with t.open(public, readonly=True) as r:
                    assert r.pread(6) == b"public"
                names = [e.name for e in t.regions()]
                assert public in names and private not in names, names
                try:
                    t.unlink(public)
                except PermissionError as e:
                    assert e.errno == errno.EPERM, e.errno
                    assert "only its owner or root" in str(e), str(e)
                else:
                    raise AssertionError("unlinked root's region")
                try:
                    t.open(public, PAGE, create=True)
                except FileExistsError as e:      # another user's, no SHARED
                    assert e.errno == errno.EEXIST
                else:
                    raise AssertionError("took root's region for its own")
                with t.open(public, PAGE, create=True, shared=True,
                            readonly=True) as r:
                    assert r.pread(6) == b"public"
        self.run_as_nobody(child)


if __name__ == "__main__":
    unittest.main()
