# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""Host tests of the kvtier package: no module, no tier needed.

The ctypes layouts against the C headers (compiled with gcc where it is
installed), the flag values, errors and their messages, argument checks
made before any library call, loading the library, the version, buffer
pinning, the close guard, and the build backend's archives.

``make -C python check`` runs them with KVTIER_LIBRARY at the tree's
libkvtier.so.0.
"""

from __future__ import annotations

import array
import base64
import ctypes
import errno
import hashlib
import importlib
import mmap
import os
import pickle
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import unittest
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import kvtier
from kvtier import _check, _lib, errors
from kvtier._buffer import Pinned
from kvtier._resource import Resource
from kvtier._structs import STRUCTS
from kvtier.region import _byte_view

from . import _support

REPO = _support.REPO
HEADERS = (REPO / "lib" / "kvtier.h", REPO / "include" / "uapi" / "linux" /
           "kvtier.h")
GCC = shutil.which("gcc")

# C constants and the Python values that must equal them.
CONSTANTS: dict[str, int] = {
    "KVTIER_ABI_VERSION": kvtier.ABI_VERSION,
    "KVTIER_NAME_MAX - 1": kvtier.NAME_MAX,
    "KVTIER_TIER_ATTACHED": kvtier.TierFlag.ATTACHED,
    "KVTIER_OPEN_CREATE": kvtier.OpenFlag.CREATE,
    "KVTIER_OPEN_EXCL": kvtier.OpenFlag.EXCL,
    "KVTIER_OPEN_PERSISTENT": kvtier.OpenFlag.PERSISTENT,
    "KVTIER_OPEN_RDONLY": kvtier.OpenFlag.RDONLY,
    "KVTIER_OPEN_SHARED": kvtier.OpenFlag.SHARED,
    "KVTIER_OPEN_PERSISTENT + 0": kvtier.RegionFlag.PERSISTENT,
    "KVTIER_OPEN_RDONLY + 0": kvtier.RegionFlag.RDONLY,
    "KVTIER_REGION_PINNED": kvtier.RegionFlag.PINNED,
    "KVTIER_REGION_SEALED": kvtier.RegionFlag.SEALED,
    "KVTIER_GPU_MODE_HMM": kvtier.GpuMode.HMM,
    "KVTIER_GPU_MODE_MANAGED": kvtier.GpuMode.MANAGED,
    "KVTIER_GPU_MODE_OFFLOAD": kvtier.GpuMode.OFFLOAD,
    "KVTIER_GPU_NO": kvtier.GpuVerdict.NO,
    "KVTIER_GPU_YES": kvtier.GpuVerdict.YES,
    "KVTIER_GPU_MAYBE": kvtier.GpuVerdict.MAYBE,
    "KVTIER_XFER_CUDA": kvtier.xfer.XFER_CUDA,
}


def compile_and_run(source: str, *extra: str) -> str:
    """Build ``source`` with gcc against the tree's headers; its stdout."""
    assert GCC is not None
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "probe.c"
        exe = Path(d) / "probe"
        src.write_text(source)
        subprocess.run([GCC, "-std=gnu11", "-Wall", "-Werror",
                        f"-I{REPO / 'lib'}",
                        f"-I{REPO / 'include' / 'uapi'}", "-o", str(exe),
                        str(src), *extra], check=True, capture_output=True)
        return subprocess.run([str(exe)], check=True, capture_output=True,
                              text=True).stdout


def need_gcc(test: Callable[..., None]) -> Callable[..., None]:
    """Skip where there is no gcc or no headers (an sdist, say)."""
    if GCC is None:
        return unittest.skip("no gcc")(test)
    if not all(h.exists() for h in HEADERS):
        return unittest.skip("no kvtier headers (not in the tree)")(test)
    return test


def library() -> ctypes.CDLL:
    """libkvtier, or SkipTest if it cannot be loaded here."""
    try:
        return _lib.lib()
    except kvtier.LibraryError as e:
        raise unittest.SkipTest(f"libkvtier not loadable: {e}") from None


class Layout(unittest.TestCase):
    """The ctypes mirrors match the C structures field for field."""

    @need_gcc
    def test_sizes_and_offsets(self) -> None:
        lines = ["#include <stddef.h>", "#include <stdio.h>",
                 "#include <kvtier.h>", "int main(void)", "{"]
        for cname, cls in STRUCTS.items():
            lines.append(f'\tprintf("{cname} - %zu\\n", '
                         f"sizeof(struct {cname}));")
            for fname, *_ in cls._fields_:
                lines.append(
                    f'\tprintf("{cname} {fname} %zu %zu\\n", '
                    f"offsetof(struct {cname}, {fname}), "
                    f"sizeof(((struct {cname} *)0)->{fname}));")
        lines += ["\treturn 0;", "}"]
        out = compile_and_run("\n".join(lines) + "\n")
        seen = 0
        for line in out.splitlines():
            cname, fname, *nums = line.split()
            cls = STRUCTS[cname]
            with self.subTest(struct=cname, field=fname):
                if fname == "-":
                    self.assertEqual(ctypes.sizeof(cls), int(nums[0]))
                else:
                    desc = getattr(cls, fname)
                    self.assertEqual(desc.offset, int(nums[0]), "offset")
                    self.assertEqual(desc.size, int(nums[1]), "size")
            seen += 1
        self.assertEqual(seen, sum(len(c._fields_) + 1
                                   for c in STRUCTS.values()))

    @need_gcc
    def test_struct_fields_complete(self) -> None:
        # Every field the header declares is mirrored: the C compiler
        # knows the sum of what the mirror lists only if nothing is
        # missing between them (the last field ends at sizeof, less
        # trailing padding). Checked by the sizes above; here the names.
        text = "\n".join(h.read_text() for h in HEADERS)
        for cname, cls in STRUCTS.items():
            m = re.search(r"struct %s \{(.*?)\n\};" % cname, text, re.S)
            self.assertIsNotNone(m, cname)
            assert m is not None
            body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
            declared = re.findall(r"(\w+)(?:\[[^\]]*\])?;", body)
            self.assertEqual(declared, [f[0] for f in cls._fields_], cname)

    @need_gcc
    def test_constants(self) -> None:
        body = "".join(f'\tprintf("%lld\\n", (long long)({c}));\n'
                       for c in CONSTANTS)
        out = compile_and_run("#include <stdio.h>\n#include <kvtier.h>\n"
                              "int main(void)\n{\n" + body +
                              '\tprintf("%s\\n", KVTIER_DEV_PREFIX);\n'
                              "\treturn 0;\n}\n")
        values = out.splitlines()
        for (c, want), got in zip(CONSTANTS.items(), values):
            with self.subTest(constant=c):
                self.assertEqual(int(want), int(got))
        self.assertEqual(values[-1], kvtier.DEV_PREFIX)


class Errors(unittest.TestCase):
    """errno to exception class, messages, attach explanations."""

    MAPPED = [
        (errno.ENOENT, kvtier.KvtierFileNotFoundError, FileNotFoundError),
        (errno.EEXIST, kvtier.KvtierFileExistsError, FileExistsError),
        (errno.EACCES, kvtier.KvtierPermissionError, PermissionError),
        (errno.EPERM, kvtier.KvtierPermissionError, PermissionError),
        (errno.EAGAIN, kvtier.KvtierBlockingIOError, BlockingIOError),
        (errno.EINTR, kvtier.KvtierInterruptedError, InterruptedError),
        (errno.ETIMEDOUT, kvtier.KvtierTimeoutError, TimeoutError),
        (errno.EISDIR, kvtier.KvtierIsADirectoryError, IsADirectoryError),
        (errno.ENOTDIR, kvtier.KvtierNotADirectoryError,
         NotADirectoryError),
        (errno.EPIPE, kvtier.KvtierBrokenPipeError, BrokenPipeError),
        (errno.ECHILD, kvtier.KvtierChildProcessError, ChildProcessError),
        (errno.ESRCH, kvtier.KvtierProcessLookupError, ProcessLookupError),
        (errno.ECONNRESET, kvtier.KvtierConnectionResetError,
         ConnectionResetError),
        (errno.ECONNREFUSED, kvtier.KvtierConnectionRefusedError,
         ConnectionRefusedError),
        (errno.ECONNABORTED, kvtier.KvtierConnectionAbortedError,
         ConnectionAbortedError),
    ]

    def test_classes(self) -> None:
        for code, cls, builtin in self.MAPPED:
            for sign in (1, -1):
                with self.subTest(errno=errno.errorcode[code], sign=sign):
                    got = kvtier.error_class(sign * code)
                    self.assertIs(got, cls)
                    self.assertTrue(issubclass(got, kvtier.KvtierError))
                    self.assertTrue(issubclass(got, builtin))
        for code in (errno.EINVAL, errno.EBUSY, errno.EIO, errno.ENOSPC,
                     errno.ENODEV, errno.EFBIG, errno.EDQUOT, errno.ENOTTY):
            with self.subTest(errno=errno.errorcode[code]):
                self.assertIs(kvtier.error_class(code), kvtier.KvtierError)
        self.assertTrue(issubclass(kvtier.KvtierError, OSError))

    def test_every_builtin_subclass_has_a_kvtier_class(self) -> None:
        builtins = {type(OSError(e, "")) for e in errno.errorcode}
        for b in builtins - {OSError}:
            with self.subTest(builtin=b.__name__):
                self.assertIn(b, errors._BY_BUILTIN)

    def test_message_and_fields(self) -> None:
        e = errors.make_error(-errno.ENOENT, "kvtier0: open region 'abc'",
                              filename="abc")
        self.assertIsInstance(e, FileNotFoundError)
        self.assertEqual(e.errno, errno.ENOENT)
        self.assertEqual(e.strerror, "kvtier0: open region 'abc': "
                         "No such file or directory")
        self.assertEqual(e.filename, "abc")
        self.assertEqual(str(e), e.strerror)
        h = errors.make_error(errno.EBUSY, "detach kvtier1", hint="open")
        self.assertEqual(str(h), "detach kvtier1: Device or resource busy "
                         "(open)")
        self.assertIsNone(h.filename)
        m = errors.make_error(errno.EIO, "x", message="exactly this")
        self.assertEqual(str(m), "exactly this")

    def test_raise_and_catch(self) -> None:
        with self.assertRaises(FileExistsError) as cm:
            errors.check(-errno.EEXIST, "kvtier0: open region 'x'",
                         filename="x", hints={errno.EEXIST: "taken"})
        self.assertIsInstance(cm.exception, kvtier.KvtierError)
        self.assertTrue(str(cm.exception).endswith("File exists (taken)"))
        self.assertIsNone(cm.exception.__cause__)
        self.assertEqual(errors.check(7, "fine"), 7)
        with self.assertRaises(kvtier.KvtierError) as cm2:
            errors.check(-errno.EINVAL, "y")
        self.assertNotIsInstance(cm2.exception, FileNotFoundError)

    def test_pickle(self) -> None:
        e = errors.make_error(errno.EACCES, "kvtier0: open region 'p'",
                              filename="p")
        back = pickle.loads(pickle.dumps(e))
        self.assertIs(type(back), type(e))
        self.assertEqual((back.errno, back.strerror, back.filename),
                         (e.errno, e.strerror, e.filename))

    def test_attach_messages(self) -> None:
        p = "/dev/nvme9n1"
        want = {
            errno.EMEDIUMTYPE: f"{p} holds a foreign signature or data "
                               "(see dmesg); use attach --format to "
                               "destroy it",
            errno.EUCLEAN: f"damaged kvtier metadata on {p}: see dmesg; "
                           "attach --format to start over (loses all "
                           "persistent regions)",
            errno.EOPNOTSUPP: f"{p} has a newer kvtier format than this "
                              "module",
            errno.ENOSPC: f"{p} is too small for a kvtier namespace",
            errno.EBUSY: f"attach {p} to kvtier3: the device is claimed by "
                         "someone else (a mount, md/dm, another tier) or "
                         "the tier is busy",
            errno.EIO: f"attach {p} to kvtier3: I/O error on the device "
                       "(see dmesg)",
            errno.EACCES: f"attach {p} to kvtier3: Permission denied "
                          "(needs root)",
            errno.EPERM: f"attach {p} to kvtier3: Operation not permitted "
                         "(needs root)",
            errno.EINVAL: f"attach {p} to kvtier3: Invalid argument",
        }
        for code, text in want.items():
            with self.subTest(errno=errno.errorcode[code]):
                self.assertEqual(errors.attach_message(3, p, False, -code),
                                 text)
        self.assertEqual(errors.attach_message(3, p, True, errno.EIO),
                         f"format {p} for kvtier3: I/O error on the device "
                         "(see dmesg)")

    def test_attach_messages_follow_kvtierctl(self) -> None:
        src = REPO / "tools" / "cmd_attach.c"
        if not src.exists():
            self.skipTest("no tools/cmd_attach.c")
        text = re.sub(r'"\s*\n\s*"', "", src.read_text())
        body = text[text.index("int attach_error("):]
        body = body[:body.index("\n}\n")]
        phrases = [
            "holds a foreign signature or data (see dmesg); use attach "
            "--format to destroy it",
            "damaged kvtier metadata on %s: see dmesg; attach --format to "
            "start over (loses all persistent regions)",
            "%s has a newer kvtier format than this module",
            "%s is too small for a kvtier namespace",
            "the device is claimed by someone else (a mount, md/dm, another "
            "tier) or the tier is busy",
            "I/O error on the device (see dmesg)",
            "%s (needs root)",
        ]
        for ph in phrases:
            with self.subTest(phrase=ph):
                self.assertIn(ph, body)


@contextmanager
def library_forbidden() -> Iterator[None]:
    """Within: any use of libkvtier fails the test (AssertionError)."""
    saved_lib, saved_load = _lib._lib, _lib._load

    def refuse() -> ctypes.CDLL:
        raise AssertionError("libkvtier was called before the arguments "
                             "were checked")
    _lib._lib = None
    _lib._load = refuse
    try:
        yield
    finally:
        _lib._lib, _lib._load = saved_lib, saved_load


class Arguments(unittest.TestCase):
    """Bad arguments raise ValueError or TypeError before any call."""

    def bad(self, exc: type[Exception], fn: Callable[..., Any],
            *args: Any, **kw: Any) -> str:
        with library_forbidden():
            with self.assertRaises(exc) as cm:
                fn(*args, **kw)
        return str(cm.exception)

    def test_tier_ids(self) -> None:
        fns: tuple[Callable[..., Any], ...] = (kvtier.Tier, kvtier.detach,
                                               kvtier.stats, kvtier.gpu_host)
        for fn in fns:
            with self.subTest(fn=fn.__name__):
                self.assertIn("tier id must be 0 to 2**32 - 1, not -1",
                              self.bad(ValueError, fn, -1))
                self.bad(ValueError, fn, 1 << 32)
                self.bad(TypeError, fn, "0")
                self.bad(TypeError, fn, True)
                self.bad(TypeError, fn, 0.0)

    def test_device_paths(self) -> None:
        for fn in (kvtier.attach, kvtier.format):
            with self.subTest(fn=fn.__name__):
                self.bad(ValueError, fn, 0, "")
                self.assertIn("detach", self.bad(ValueError, fn, 0, "none"))
                self.bad(ValueError, fn, 0, "/dev/a\0b")
                self.bad(TypeError, fn, 0, 5)
                self.bad(ValueError, fn, -1, "/dev/x")

    def test_attributes(self) -> None:
        for name in ("", ".", "..", "a/b", "../state", "a\0"):
            with self.subTest(name=name):
                self.bad(ValueError, kvtier.attr, 0, name)
                self.bad(ValueError, kvtier.set_attr, 0, name, "1")
        self.bad(TypeError, kvtier.attr, 0, b"state")
        self.bad(TypeError, kvtier.set_attr, 0, "readahead_kb", None)
        self.bad(TypeError, kvtier.set_attr, 0, "readahead_kb", True)
        self.bad(TypeError, kvtier.set_attr, 0, "readahead_kb", 1.5)
        self.bad(ValueError, kvtier.set_attr, 0, "readahead_kb", "1\0")

    def test_region_names(self) -> None:
        self.assertEqual(_check.region_name("a" * 63), b"a" * 63)
        self.assertEqual(_check.region_name(b"prefix:sys~1"),
                         b"prefix:sys~1")
        self.assertEqual(_check.region_name("!~"), b"!~")
        msg = self.bad(ValueError, _check.region_name, "a" * 64)
        self.assertIn("64 bytes long: at most 63", msg)
        for bad in ("", "a b", "a/b", "a\0b", "a\tb", "\x7f", "é"):
            with self.subTest(name=bad):
                self.bad(ValueError, _check.region_name, bad)
        self.bad(TypeError, _check.region_name, 5)
        self.bad(TypeError, _check.region_name, None)

    def test_sizes(self) -> None:
        self.assertEqual(_check.size(0), 0)
        self.assertEqual(_check.size((1 << 63) - 1), (1 << 63) - 1)
        self.assertIn("size must be 0 to 2**63 - 1, not -1",
                      self.bad(ValueError, _check.size, -1))
        self.bad(ValueError, _check.size, 1 << 63)
        self.bad(TypeError, _check.size, 4096.0)
        self.bad(TypeError, _check.size, "4096")
        self.bad(TypeError, _check.size, False)

        class Index:
            def __index__(self) -> int:
                return 8192
        self.assertEqual(_check.size(Index()), 8192)

    def test_gpu_modes(self) -> None:
        host = kvtier.GpuHost(kernel="6.1.0", machine="x86_64",
                              config_path="", hmm_mirror=-1,
                              device_private=-1, nvidia=0, nvidia_open=-1,
                              nvidia_version="", uvm=0, uvm_hmm_disabled=-1,
                              tier_id=0, tier=-1, tier_device="")
        self.bad(ValueError, kvtier.gpu_mode_check, host, "bogus")
        self.bad(ValueError, kvtier.gpu_mode_check, host, 7)
        self.bad(TypeError, kvtier.gpu_mode_check, host, 1.0)
        self.bad(TypeError, kvtier.gpu_mode_check, "host", "hmm")
        self.bad(ValueError, host.check, "")

    def test_xfer_needs_a_region(self) -> None:
        self.bad(TypeError, kvtier.Xfer, "region", 4096)
        self.bad(TypeError, kvtier.Xfer, None, 4096)

    def test_buffers(self) -> None:
        self.assertEqual(_byte_view(b"abc", writable=False).nbytes, 3)
        self.assertEqual(_byte_view(array.array("d", [1, 2]), True).nbytes,
                         16)
        self.bad(TypeError, _byte_view, b"abc", writable=True)
        self.bad(TypeError, _byte_view, 42, writable=False)
        self.bad(ValueError, _byte_view, memoryview(bytearray(8))[::2],
                 writable=False)


class Library(unittest.TestCase):
    """Finding and loading libkvtier, and what it says without a module."""

    def run_python(self, code: str, env_lib: str | None) -> str:
        env = dict(os.environ)
        env.pop(_lib.ENV, None)
        if env_lib is not None:
            env[_lib.ENV] = env_lib
        env["PYTHONPATH"] = str(_support.PYTHON_DIR)
        out = subprocess.run([sys.executable, "-c", code], env=env,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    PROBE = ("import kvtier\n"
             "print(kvtier.__version__)\n"
             "try:\n"
             "    kvtier.version()\n"
             "except kvtier.LibraryError as e:\n"
             "    assert isinstance(e, ImportError)\n"
             "    print(e)\n"
             "else:\n"
             "    print('loaded')\n")

    def test_not_a_library(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".so") as f:
            f.write("not an ELF file\n" * 256)
            f.flush()
            out = self.run_python(self.PROBE, f.name).splitlines()
        self.assertEqual(out[0], kvtier.__version__)    # import still works
        self.assertIn(f"cannot load libkvtier from KVTIER_LIBRARY={f.name}",
                      out[1])
        self.assertIn("invalid ELF header", out[1])

    def test_missing_file(self) -> None:
        out = self.run_python(self.PROBE, "/nonexistent/libkvtier.so.0")
        self.assertIn("KVTIER_LIBRARY=/nonexistent/libkvtier.so.0", out)
        self.assertIn("No such file", out)

    def test_not_a_path(self) -> None:
        out = self.run_python(self.PROBE, "libkvtier.so.0")
        self.assertIn("KVTIER_LIBRARY='libkvtier.so.0' is not a path", out)

    def test_library_without_kvtier(self) -> None:
        libc = next((line.split()[-1] for line in
                     Path("/proc/self/maps").read_text().splitlines()
                     if re.search(r"/libc(\.so\.\d+|-[\d.]+\.so)$",
                                  line)), None)
        if libc is None:
            self.skipTest("no libc path in /proc/self/maps")
        out = self.run_python(self.PROBE, libc)
        self.assertIn(f"{libc} (from KVTIER_LIBRARY={libc}) has no "
                      "kvtier_version()", out)
        self.assertIn("LIBKVTIER_0.4", out)

    def test_loads_from_environment(self) -> None:
        path = os.environ.get(_lib.ENV)
        if not path:
            self.skipTest("KVTIER_LIBRARY not set")
        self.assertEqual(self.run_python(self.PROBE, path).splitlines()[1],
                         "loaded")

    def test_version_is_the_c_librarys(self) -> None:
        library()
        path = os.environ.get(_lib.ENV)
        if GCC is None or not path or not all(h.exists() for h in HEADERS):
            self.skipTest("needs gcc, the headers and KVTIER_LIBRARY")
        libdir = str(Path(path).resolve().parent)
        out = compile_and_run(
            "#include <stdio.h>\n#include <kvtier.h>\n"
            "int main(void)\n{\n\tputs(kvtier_version());\n\treturn 0;\n}\n",
            f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lkvtier")
        self.assertEqual(kvtier.version(), out.strip())

    def test_versions_agree(self) -> None:
        library()
        self.assertEqual(kvtier.__version__, kvtier.version())
        dkms = REPO / "dkms.conf"
        if dkms.exists():
            m = re.search(r'^PACKAGE_VERSION="([^"]+)"$', dkms.read_text(),
                          re.M)
            assert m is not None
            self.assertEqual(kvtier.__version__, m.group(1))

    def test_no_module_errors(self) -> None:
        """Real calls into the library on a tier that does not exist."""
        library()
        t = 4000
        with self.assertRaises(FileNotFoundError) as cm:
            kvtier.Tier(t)
        e = cm.exception
        self.assertIsInstance(e, kvtier.KvtierError)
        self.assertEqual(e.errno, errno.ENOENT)
        self.assertEqual(e.filename, f"/dev/kvtier{t}")
        self.assertTrue(str(e).startswith(
            f"kvtier{t}: open /dev/kvtier{t}: No such file or directory"))
        with self.assertRaises(FileNotFoundError) as cm:
            kvtier.attach(t, "/nonexistent/dev")
        self.assertEqual(str(cm.exception), f"attach /nonexistent/dev to "
                         f"kvtier{t}: No such file or directory")
        self.assertEqual(cm.exception.filename, "/nonexistent/dev")
        with self.assertRaises(FileNotFoundError) as cm:
            kvtier.format(t, "/nonexistent/dev")
        self.assertTrue(str(cm.exception).startswith("format /nonexistent/"
                                                     f"dev for kvtier{t}: "))
        for fn, args in ((kvtier.detach, (t,)), (kvtier.stats, (t,)),
                         (kvtier.attr, (t, "state")),
                         (kvtier.set_attr, (t, "readahead_kb", 64))):
            with self.subTest(fn=fn.__name__):
                with self.assertRaises(kvtier.KvtierFileNotFoundError):
                    fn(*args)  # type: ignore[operator]

    def test_gpu_host_without_a_tier(self) -> None:
        library()
        host = kvtier.gpu_host(4000)
        self.assertEqual(host.tier_id, 4000)
        self.assertEqual(host.tier, -1)
        self.assertEqual(host.kernel, os.uname().release)
        self.assertEqual(host.machine, os.uname().machine)
        self.assertEqual((host.pageable, host.host_page_tables), (-1, -1))
        verdict, why = host.check("offload")
        self.assertIs(verdict, kvtier.GpuVerdict.NO)
        self.assertIn("there is no tier 4000", why)
        modes: tuple[kvtier.GpuMode | int | str, ...] = (
            kvtier.GpuMode.HMM, 2, "MANAGED")
        for mode in modes:
            verdict, why = kvtier.gpu_mode_check(host, mode)
            self.assertIsInstance(verdict, kvtier.GpuVerdict)
            self.assertTrue(why)


class Buffers(unittest.TestCase):
    """Pinned: the address of a buffer, exported until released."""

    def test_objects(self) -> None:
        for obj, writable in ((b"abcd", False), (bytearray(b"abcd"), True),
                              (memoryview(bytearray(b"abcd")), True),
                              (array.array("B", b"abcd"), True)):
            with self.subTest(type=type(obj).__name__):
                p = Pinned(obj, writable)
                self.assertEqual(p.nbytes, 4)
                self.assertEqual(ctypes.string_at(p.address, 4), b"abcd")
                p.release()
                p.release()

    def test_held_until_released(self) -> None:
        b = bytearray(16)
        p = Pinned(b, True)
        with self.assertRaises(BufferError):
            b.extend(b"x")
        p.release()
        b.extend(b"x")
        m = mmap.mmap(-1, mmap.PAGESIZE)
        p = Pinned(m, True)
        with self.assertRaises(BufferError):
            m.close()
        p.release()
        m.close()

    def test_refusals(self) -> None:
        with self.assertRaises(BufferError):
            Pinned(b"read-only", True)
        with self.assertRaises(BufferError):
            Pinned(memoryview(bytearray(8))[::2], False)
        with self.assertRaises(TypeError):
            Pinned(12, False)

    def test_numpy(self) -> None:
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        a = np.arange(8, dtype=np.uint32)
        p = Pinned(a, True)
        self.assertEqual(p.address, a.ctypes.data)
        self.assertEqual(p.nbytes, 32)
        p.release()
        ro = np.arange(4)
        ro.flags.writeable = False
        with self.assertRaises(BufferError):
            Pinned(ro, True)
        Pinned(ro, False).release()
        with self.assertRaises(BufferError):
            Pinned(np.zeros((4, 4))[:, 1], False)


class Guard(unittest.TestCase):
    """Resource: close waits for calls in progress, then refuses calls."""

    class Thing(Resource):
        def __init__(self) -> None:
            super().__init__()
            self._handle = "handle"
            self.released = 0

        def _release(self) -> None:
            self.released += 1

    def test_close_waits(self) -> None:
        t = self.Thing()
        inside = threading.Event()
        order: list[str] = []

        def call() -> None:
            with t._use() as h:
                self.assertEqual(h, "handle")
                inside.set()
                time.sleep(0.2)
                order.append("call done")

        th = threading.Thread(target=call)
        th.start()
        inside.wait()
        t.close()
        order.append("closed")
        th.join()
        self.assertEqual(order, ["call done", "closed"])
        self.assertEqual(t.released, 1)
        t.close()
        self.assertEqual(t.released, 1)
        self.assertTrue(t.closed)
        with self.assertRaises(ValueError):
            with t._use():
                pass
        with self.assertRaises(ValueError):
            with t:
                pass

    def test_unclosed_warns(self) -> None:
        t = self.Thing()
        with self.assertWarns(ResourceWarning):
            t.__del__()
        self.assertEqual(t.released, 1)


class Backend(unittest.TestCase):
    """The in-tree build backend: wheel, sdist and editable wheel."""

    backend: Any

    @classmethod
    def setUpClass(cls) -> None:
        sys.path.insert(0, str(_support.PYTHON_DIR / "build_backend"))
        try:
            cls.backend = importlib.import_module("kvtier_build")
        finally:
            sys.path.pop(0)

    def check_record(self, z: zipfile.ZipFile, dist_info: str) -> None:
        record = z.read(f"{dist_info}/RECORD").decode().splitlines()
        names = set(z.namelist())
        listed = set()
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            listed.add(path)
            if path == f"{dist_info}/RECORD":
                self.assertEqual((digest, size), ("", ""))
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual(digest, f"sha256={want}", path)
            self.assertEqual(int(size), len(data), path)
        self.assertEqual(listed, names)

    def test_hooks_need_nothing(self) -> None:
        b = self.backend
        self.assertEqual(b.get_requires_for_build_wheel(), [])
        self.assertEqual(b.get_requires_for_build_sdist(), [])
        self.assertEqual(b.get_requires_for_build_editable(), [])

    def test_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = self.backend.build_wheel(d)
            self.assertEqual(name, f"kvtier-{kvtier.__version__}-py3-none-"
                             "any.whl")
            first = (Path(d) / name).read_bytes()
            di = f"kvtier-{kvtier.__version__}.dist-info"
            with zipfile.ZipFile(Path(d) / name) as z:
                self.check_record(z, di)
                files = set(z.namelist())
                pkg = {f"kvtier/{p.name}" for p in
                       (_support.PYTHON_DIR / "kvtier").iterdir()
                       if p.is_file() and p.suffix in (".py", ".typed")}
                self.assertEqual(files - {f"{di}/{f}" for f in
                                          ("METADATA", "WHEEL", "RECORD",
                                           "top_level.txt")}, pkg)
                self.assertIn("kvtier/py.typed", files)
                meta = z.read(f"{di}/METADATA").decode()
                wheel = z.read(f"{di}/WHEEL").decode()
            self.assertIn("\nName: kvtier\n", meta)
            self.assertIn(f"\nVersion: {kvtier.__version__}\n", meta)
            self.assertIn("\nRequires-Python: >=3.11\n", meta)
            self.assertNotIn("Requires-Dist", meta)
            self.assertIn("Root-Is-Purelib: true", wheel)
            self.assertIn("Tag: py3-none-any", wheel)
            os.unlink(Path(d) / name)
            self.backend.build_wheel(d)
            self.assertEqual((Path(d) / name).read_bytes(), first,
                             "the wheel is not reproducible")

    def test_metadata_matches_wheel(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            di = self.backend.prepare_metadata_for_build_wheel(d)
            meta = (Path(d) / di / "METADATA").read_text()
            name = self.backend.build_wheel(d)
            with zipfile.ZipFile(Path(d) / name) as z:
                self.assertEqual(z.read(f"{di}/METADATA").decode(), meta)

    def test_sdist(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = self.backend.build_sdist(d)
            base = f"kvtier-{kvtier.__version__}"
            self.assertEqual(name, f"{base}.tar.gz")
            with tarfile.open(Path(d) / name) as t:
                names = t.getnames()
            for f in ("PKG-INFO", "pyproject.toml", "README.md",
                      "build_backend/kvtier_build.py", "kvtier/__init__.py",
                      "kvtier/py.typed", "tests/test_host.py"):
                self.assertIn(f"{base}/{f}", names)
            self.assertFalse([n for n in names if "__pycache__" in n])

    def test_editable(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            name = self.backend.build_editable(d)
            di = f"kvtier-{kvtier.__version__}.dist-info"
            with zipfile.ZipFile(Path(d) / name) as z:
                self.check_record(z, di)
                finder = z.read("_kvtier_editable.py").decode()
                pth = [n for n in z.namelist() if n.endswith(".pth")]
                self.assertEqual(len(pth), 1)
                self.assertEqual(z.read(pth[0]), b"import _kvtier_editable\n")
            self.assertIn(repr(str(_support.PYTHON_DIR)), finder)


if __name__ == "__main__":
    unittest.main()
