# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Helpers of the kvtier Python tests.

Host tests (test_host) need no module. The others need a loaded module
and a tier they may write to, named by ``KVTIER_TEST_TIER`` (the tier
id); without it, or without /dev/kvtier<id>, they skip. They run as root
in the test VM (tests/kvtier_python_test.c), with ``KVTIER_LIBRARY`` at
the tree's libkvtier.so.0.
"""

from __future__ import annotations

import itertools
import os
import random
import stat
import traceback
import unittest
from collections.abc import Callable
from pathlib import Path

import kvtier

REPO = Path(__file__).resolve().parents[2]
"""The kvtier source tree (python/tests/ is two levels below it)."""

PYTHON_DIR = REPO / "python"

NOBODY = 65534
"""The uid and gid unprivileged steps run as."""

KVT_GID = 4242
"""Stands in for the udev rule's kvtier group (as kvtier_perm_test does)."""

_names = itertools.count()


def test_tier() -> int:
    """The tier the tests may use, or SkipTest."""
    raw = os.environ.get("KVTIER_TEST_TIER")
    if raw is None:
        raise unittest.SkipTest("KVTIER_TEST_TIER is not set: these tests "
                                "need a tier they may write to")
    tid = int(raw)
    if not os.path.exists(f"/dev/kvtier{tid}"):
        raise unittest.SkipTest(f"no /dev/kvtier{tid} (module not loaded?)")
    return tid


def unique_name(what: str) -> str:
    """A region name no other test (or run) uses."""
    return f"py-{what}-{os.getpid()}-{next(_names)}"


def pattern(seed: int, n: int) -> bytes:
    """``n`` bytes of a seeded random pattern."""
    return random.Random(seed).randbytes(n)


def as_user(fn: Callable[[], None], uid: int = NOBODY, gid: int = NOBODY,
            groups: tuple[int, ...] = ()) -> tuple[int, str]:
    """Run ``fn`` in a forked child as ``uid``/``gid`` with ``groups``.

    Returns (exit status, what it printed on failure): 0 if ``fn``
    returned, 1 and the traceback if it raised.
    """
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rd)
        status = 1
        try:
            os.setgroups(list(groups))
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            fn()
            status = 0
        except BaseException:
            os.write(wr, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        out = f.read().decode(errors="replace")
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st), out


class TierCase(unittest.TestCase):
    """A test with ``self.tier`` open on the test tier; named regions it
    makes through :meth:`name` are unlinked afterwards."""

    tier_id: int
    tier: kvtier.Tier

    @classmethod
    def setUpClass(cls) -> None:
        cls.tier_id = test_tier()

    def setUp(self) -> None:
        self.tier = kvtier.Tier(self.tier_id)
        self.addCleanup(self.tier.close)
        self._made: list[str] = []
        self.addCleanup(self._unlink_made)

    def _unlink_made(self) -> None:
        with kvtier.Tier(self.tier_id) as t:
            for name in self._made:
                try:
                    t.unlink(name)
                except FileNotFoundError:
                    pass

    def give_device_to_group(self) -> None:
        """Make /dev/kvtier<id> root:KVT_GID 0660, as the udev rule does,
        until the test ends; skips unless root (who alone can become
        another user)."""
        if os.geteuid() != 0:
            self.skipTest("needs root to become another user")
        dev = f"/dev/kvtier{self.tier_id}"
        st = os.stat(dev)
        os.chown(dev, 0, KVT_GID)
        os.chmod(dev, 0o660)
        self.addCleanup(os.chmod, dev, stat.S_IMODE(st.st_mode))
        self.addCleanup(os.chown, dev, st.st_uid, st.st_gid)

    def name(self, what: str) -> str:
        """A fresh region name, unlinked when the test ends."""
        n = unique_name(what)
        self._made.append(n)
        return n

    def assertKvtierError(self, err: BaseException, errno_: int,
                          *classes: type[BaseException]) -> None:
        """``err`` is a KvtierError with ``errno_``, of every class given."""
        self.assertIsInstance(err, kvtier.KvtierError)
        assert isinstance(err, OSError)
        self.assertEqual(err.errno, errno_, str(err))
        for c in classes:
            self.assertIsInstance(err, c)
