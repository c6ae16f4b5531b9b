# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""The PEP 517 build backend of the kvtier Python package, in the tree.

Standard library only, so that ``pip install ./python`` needs no network:
with ``requires = []`` pip's isolated build environment has nothing to
download. It builds the one thing this project needs, a pure-Python
wheel of the ``kvtier`` package (py3-none-any), its sdist, and an
editable wheel (PEP 660), from ``pyproject.toml``'s ``[project]`` table
and the version in ``kvtier/_version.py``.

Archives are reproducible: sorted entries, fixed permissions, and the
timestamp of ``SOURCE_DATE_EPOCH`` (else 1980-01-01, the earliest a zip
file holds).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

ROOT = Path(__file__).resolve().parent.parent
"""The package's source tree: the directory of pyproject.toml."""

PACKAGE = "kvtier"
TAG = "py3-none-any"
# What an sdist carries besides the package: enough to build and test it.
SDIST_EXTRA = ("pyproject.toml", "README.md", "build_backend", "examples",
               "tests")
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


class Project:
    """The metadata of pyproject.toml's [project] table."""

    def __init__(self, root: Path = ROOT) -> None:
        with open(root / "pyproject.toml", "rb") as f:
            data = tomllib.load(f)
        proj: dict[str, Any] = data["project"]
        self.root = root
        self.name: str = proj["name"]
        if proj.get("dependencies"):
            raise ValueError("kvtier_build: the package has no runtime "
                             "dependencies by design; none may be listed")
        if "version" in proj:
            self.version: str = proj["version"]
        else:
            self.version = self._dynamic_version()
        self.summary: str = proj.get("description", "")
        self.requires_python: str = proj.get("requires-python", "")
        lic = proj.get("license", {})
        self.license: str = lic.get("text", "") if isinstance(lic, dict) \
            else str(lic)
        self.authors: list[dict[str, str]] = proj.get("authors", [])
        self.keywords: list[str] = proj.get("keywords", [])
        self.classifiers: list[str] = proj.get("classifiers", [])
        self.urls: dict[str, str] = proj.get("urls", {})
        readme = proj.get("readme")
        self.readme = (root / readme).read_text("utf-8") if readme else ""

    def _dynamic_version(self) -> str:
        text = (self.root / PACKAGE / "_version.py").read_text("utf-8")
        m = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
        if not m:
            raise ValueError(f"kvtier_build: no __version__ in "
                             f"{PACKAGE}/_version.py")
        return m.group(1)

    @property
    def dist(self) -> str:
        """The distribution name as wheel file names spell it."""
        return re.sub(r"[-_.]+", "_", self.name).lower()

    @property
    def dist_info(self) -> str:
        """The wheel's .dist-info directory."""
        return f"{self.dist}-{self.version}.dist-info"

    def metadata(self) -> str:
        """Core metadata (METADATA, PKG-INFO), version 2.1."""
        lines = ["Metadata-Version: 2.1", f"Name: {self.name}",
                 f"Version: {self.version}"]
        if self.summary:
            lines.append(f"Summary: {self.summary}")
        names = [a["name"] for a in self.authors
                 if "name" in a and "email" not in a]
        emails = [f"{a['name']} <{a['email']}>" if "name" in a
                  else a["email"] for a in self.authors if "email" in a]
        if names:
            lines.append(f"Author: {', '.join(names)}")
        if emails:
            lines.append(f"Author-email: {', '.join(emails)}")
        if self.license:
            lines.append(f"License: {self.license}")
        if self.keywords:
            lines.append(f"Keywords: {','.join(self.keywords)}")
        lines += [f"Classifier: {c}" for c in self.classifiers]
        lines += [f"Project-URL: {k}, {v}" for k, v in self.urls.items()]
        if self.requires_python:
            lines.append(f"Requires-Python: {self.requires_python}")
        text = "\n".join(lines) + "\n"
        if self.readme:
            text += "Description-Content-Type: text/markdown\n\n"
            text += self.readme
        return text

    def wheel_file(self) -> str:
        """The WHEEL file."""
        return ("Wheel-Version: 1.0\nGenerator: kvtier_build\n"
                f"Root-Is-Purelib: true\nTag: {TAG}\n")


def _epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")),
               315532800)


def _files(base: Path, rel: str) -> list[str]:
    """The files under ``base/rel`` (or ``rel`` itself), as sorted
    relative POSIX paths, caches left out."""
    top = base / rel
    if top.is_file():
        return [rel]
    found = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for fn in filenames:
            if fn.endswith(_SKIP_SUFFIXES):
                continue
            found.append((Path(dirpath) / fn).relative_to(base).as_posix())
    return sorted(found)


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class _Wheel:
    """A wheel being written: every entry lands in RECORD."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self._record: list[str] = []
        self._date = time.gmtime(_epoch())[:6]

    def add(self, arcname: str, data: bytes) -> None:
        info = zipfile.ZipInfo(arcname, date_time=self._date)
        info.external_attr = (0o100644 & 0xFFFF) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        self._record.append(f"{arcname},{_record_hash(data)},{len(data)}")

    def close(self, dist_info: str) -> None:
        record = f"{dist_info}/RECORD"
        lines = self._record + [f"{record},,"]
        info = zipfile.ZipInfo(record, date_time=self._date)
        info.external_attr = (0o100644 & 0xFFFF) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, "\n".join(lines) + "\n")
        self._zip.close()


def _write_dist_info(wheel: _Wheel, proj: Project) -> None:
    d = proj.dist_info
    wheel.add(f"{d}/METADATA", proj.metadata().encode("utf-8"))
    wheel.add(f"{d}/WHEEL", proj.wheel_file().encode("utf-8"))
    wheel.add(f"{d}/top_level.txt", f"{PACKAGE}\n".encode())


def _wheel_name(proj: Project) -> str:
    return f"{proj.dist}-{proj.version}-{TAG}.whl"


# --- PEP 517 hooks --------------------------------------------------------

def get_requires_for_build_wheel(
        config_settings: dict[str, Any] | None = None) -> list[str]:
    """Nothing: the backend needs only the standard library."""
    return []


def get_requires_for_build_sdist(
        config_settings: dict[str, Any] | None = None) -> list[str]:
    """Nothing."""
    return []


def get_requires_for_build_editable(
        config_settings: dict[str, Any] | None = None) -> list[str]:
    """Nothing."""
    return []


def prepare_metadata_for_build_wheel(
        metadata_directory: str,
        config_settings: dict[str, Any] | None = None) -> str:
    """Write the .dist-info directory (METADATA, WHEEL, top_level.txt)."""
    proj = Project()
    d = Path(metadata_directory) / proj.dist_info
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(proj.metadata(), "utf-8")
    (d / "WHEEL").write_text(proj.wheel_file(), "utf-8")
    (d / "top_level.txt").write_text(f"{PACKAGE}\n", "utf-8")
    return proj.dist_info


def prepare_metadata_for_build_editable(
        metadata_directory: str,
        config_settings: dict[str, Any] | None = None) -> str:
    """As for a wheel: the metadata are the same."""
    return prepare_metadata_for_build_wheel(metadata_directory,
                                            config_settings)


def build_wheel(wheel_directory: str,
                config_settings: dict[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    """Build the pure-Python wheel of the kvtier package."""
    proj = Project()
    name = _wheel_name(proj)
    out = Path(wheel_directory)
    out.mkdir(parents=True, exist_ok=True)
    wheel = _Wheel(out / name)
    for rel in _files(proj.root, PACKAGE):
        wheel.add(rel, (proj.root / rel).read_bytes())
    _write_dist_info(wheel, proj)
    wheel.close(proj.dist_info)
    return name


_EDITABLE_FINDER = '''\
"""Editable install of kvtier: imports it from {src}."""
import sys
from importlib.machinery import PathFinder


class _KvtierEditableFinder:
    """Finds the kvtier package in its source tree, and nothing else."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "kvtier":
            return None
        return PathFinder.find_spec(name, [{src!r}])


if _KvtierEditableFinder not in sys.meta_path:
    sys.meta_path.append(_KvtierEditableFinder)
'''


def build_editable(wheel_directory: str,
                   config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    """Build an editable wheel (PEP 660): a finder that imports ``kvtier``
    from this source tree (and only it: not tests/ or build_backend/)."""
    proj = Project()
    name = _wheel_name(proj)
    out = Path(wheel_directory)
    out.mkdir(parents=True, exist_ok=True)
    wheel = _Wheel(out / name)
    src = str(proj.root)
    wheel.add("_kvtier_editable.py",
              _EDITABLE_FINDER.format(src=src).encode("utf-8"))
    wheel.add(f"__editable__.{proj.dist}-{proj.version}.pth",
              b"import _kvtier_editable\n")
    _write_dist_info(wheel, proj)
    wheel.close(proj.dist_info)
    return name


def build_sdist(sdist_directory: str,
                config_settings: dict[str, Any] | None = None) -> str:
    """Build the sdist: the package, its build backend, tests, examples."""
    proj = Project()
    base = f"{proj.dist}-{proj.version}"
    name = f"{base}.tar.gz"
    out = Path(sdist_directory)
    out.mkdir(parents=True, exist_ok=True)
    mtime = _epoch()
    entries = [("PKG-INFO", proj.metadata().encode("utf-8"))]
    for rel in [PACKAGE, *SDIST_EXTRA]:
        if (proj.root / rel).exists():
            entries += [(f, (proj.root / f).read_bytes())
                        for f in _files(proj.root, rel)]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for rel, data in sorted(entries):
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            info.mtime = mtime
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            t.addfile(info, io.BytesIO(data))
    with open(out / name, "wb") as f, \
            gzip.GzipFile(fileobj=f, mode="wb", mtime=mtime,
                          filename="") as gz:
        gz.write(raw.getvalue())
    return name
