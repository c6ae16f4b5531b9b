# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
"""kvtier.kvstore: fixed-size KV blocks keyed by bytes, on one tier.

An inference engine keys a KV block (the keys and values of, say, 16
tokens for every layer) by a hash of the token prefix that produced it.
A :class:`KVStore` keeps each block in a persistent named region of the
tier, so a block outlives the process, a module reload and a reboot, and
the module's own rules give the store its properties:

* **layout:** one region per block, named ``PREFIX + blake2b(key)`` (48
  hex digits, 192 bits), holding a 4 KiB header (magic, key, block size,
  a CRC of the header) and then the block. The full key in the header is
  compared on every read, so a digest collision is a miss, never another
  key's bytes. Documentation/userspace-api/kvtier-kvstore.rst says why
  this layout and not a few large regions with an index.
* **crash consistency:** :meth:`KVStore.put` writes the block, ``fsync``
  s it, then writes the header and ``fsync`` s again. A block whose
  header is durable therefore has durable bytes; after a crash a key
  reads back its block or nothing (a region without a valid header is a
  miss, and the next ``put`` of that key replaces it).
* **capacity:** when the namespace is full the module unlinks unused
  persistent regions least recently used first (the writer's own first);
  when the tier's table of persistent regions is full (one per 256 KiB of
  namespace), ``put`` unlinks this store's least recently used unused
  blocks itself. A block that is open (being read, or pinned by
  :meth:`KVStore.pin`) or flagged pinned is never taken. A reclaimed
  block is a miss.
* **several processes:** creation is exclusive in the module, so two
  processes storing one key store it once; readers see a block whole or
  not at all. A ``KVStore`` may be used from several threads.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import struct
import threading
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .constants import NAME_MAX, RegionFlag
from .errors import make_error
from .region import Region
from .tier import Tier

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer, WriteableBuffer

__all__ = ["KVStore", "HEADER_BYTES", "KEY_MAX"]

PAGE = 4096
#: Bytes before a block in its region: the header.
HEADER_BYTES = PAGE
#: The longest key a store takes, in bytes.
KEY_MAX = 1024
DIGEST_BYTES = 24
_MAGIC = b"KVTBLK01"
_VERSION = 1
# magic, version, key length, block bytes, header CRC (of the bytes before
# it and the key), reserved; then the key.
_HDR = struct.Struct("<8sIIQII")
_PREFIX_MAX = NAME_MAX - 2 * DIGEST_BYTES
# What a block's header says (_state()).
_BLANK, _WHOLE, _OTHER = range(3)
# How long a put waits for another file's put of the same key to finish.
_BUSY_WAIT_S = 5.0


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def _key_bytes(key: object) -> bytes:
    """@key as bytes, checked: 1..KEY_MAX bytes of a bytes-like object."""
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"a key is bytes, not {type(key).__name__}")
    k = bytes(memoryview(key).cast("B")) if isinstance(key, memoryview) else bytes(key)
    if not 1 <= len(k) <= KEY_MAX:
        raise ValueError(f"a key is 1..{KEY_MAX} bytes, not {len(k)}")
    return k


def _header(key: bytes, block_bytes: int) -> bytes:
    head = _HDR.pack(_MAGIC, _VERSION, len(key), block_bytes, 0, 0)
    crc = zlib.crc32(head[:24] + key)
    head = _HDR.pack(_MAGIC, _VERSION, len(key), block_bytes, crc, 0)
    return (head + key).ljust(HEADER_BYTES, b"\0")


class KVStore:
    """Fixed-size KV blocks keyed by bytes, one persistent region each.

    :param tier: an open :class:`~kvtier.Tier`, or a tier id to open.
    :param block_bytes: the size of every block, in bytes (> 0).
    :param prefix: the start of every region name of this store: 1 to
        15 printable ASCII characters without ``/`` or spaces. Stores with
        different prefixes on one tier never see each other's blocks.
    :param mode: permission bits of the regions it creates; 0o644 lets
        other users read them (the tier's rules,
        Documentation/userspace-api/kvtier.rst).
    :raises ValueError: for a bad block size or prefix.
    :raises OSError: (a :class:`~kvtier.KvtierError`) when the tier
        cannot be opened.

    Blocks are immutable: a key's bytes are what its first ``put`` wrote
    until :meth:`delete`. Methods raise :class:`~kvtier.KvtierError`
    (an :class:`OSError` with ``errno``) for failures of the tier: EIO for
    a block whose bytes fail their checksum (never wrong bytes), ENOSPC
    when the namespace is full of blocks that are open or pinned.
    """

    def __init__(self, tier: Tier | int, block_bytes: int, *,
                 prefix: str = "kvs.", mode: int = 0o600) -> None:
        if not isinstance(block_bytes, int) or block_bytes <= 0:
            raise ValueError(f"block_bytes must be a positive int, not {block_bytes!r}")
        if (not isinstance(prefix, str) or not 1 <= len(prefix) <= _PREFIX_MAX
                or any(not 0x21 <= ord(c) <= 0x7e or c == "/" for c in prefix)):
            raise ValueError(f"prefix must be 1..{_PREFIX_MAX} printable ASCII "
                             f"characters without '/' or spaces, not {prefix!r}")
        if not isinstance(mode, int) or mode & ~0o777:
            raise ValueError(f"mode must be permission bits (0..0o777), not {mode!r}")
        self._own_tier = not isinstance(tier, Tier)
        self._tier = Tier(tier) if isinstance(tier, int) else tier
        self.block_bytes = block_bytes
        self.prefix = prefix
        self.mode = mode
        #: The size of each block's region: the header page and the block,
        #: rounded up to the page size (what a block takes of the namespace).
        self.region_bytes = _round_up(HEADER_BYTES + block_bytes, mmap.PAGESIZE)
        self._pins: dict[bytes, Region] = {}
        self._lock = threading.Lock()

    # -- naming and checks -----------------------------------------------

    def name_of(self, key: bytes) -> str:
        """The region name that holds @key's block."""
        k = _key_bytes(key)
        return self.prefix + hashlib.blake2b(k, digest_size=DIGEST_BYTES).hexdigest()

    def _ours(self, name: str) -> bool:
        """Whether region @name is one of this store's blocks."""
        return (len(name) == len(self.prefix) + 2 * DIGEST_BYTES
                and name.startswith(self.prefix))

    def _view(self, buf: ReadableBuffer, writable: bool) -> memoryview:
        try:
            mv = memoryview(buf)
        except TypeError:
            raise TypeError(f"a block buffer supports the buffer protocol, "
                            f"not {type(buf).__name__}") from None
        if not mv.c_contiguous:
            raise ValueError("a block buffer must be C-contiguous")
        if writable and mv.readonly:
            raise TypeError("get needs a writable buffer")
        mv = mv.cast("B")
        if mv.nbytes != self.block_bytes:
            raise ValueError(f"a block is {self.block_bytes} bytes, the buffer "
                             f"is {mv.nbytes}")
        return mv

    def _state(self, region: Region, key: bytes) -> int:
        """_WHOLE: @region holds @key's block of this store's size;
        _BLANK: it has no valid header (a put in progress, or the leftover
        of one that was cut); _OTHER: a valid header of another key or
        block size (a digest collision, another store's geometry)."""
        head = bytearray(HEADER_BYTES)
        if region.readinto(head, 0) != HEADER_BYTES:
            return _BLANK
        magic, version, klen, bbytes, crc, _ = _HDR.unpack_from(head)
        if magic != _MAGIC or klen > KEY_MAX:
            return _BLANK
        k = bytes(head[_HDR.size:_HDR.size + klen])
        if zlib.crc32(bytes(head[:24]) + k) != crc:
            return _BLANK
        if (version != _VERSION or k != key or bbytes != self.block_bytes
                or region.size != self.region_bytes):
            return _OTHER
        return _WHOLE

    def _open(self, key: bytes) -> Region | None:
        """@key's region for reading, or None when there is none."""
        try:
            return self._tier.open(self.name_of(key), readonly=True)
        except FileNotFoundError:
            return None

    def _complete(self, region: Region, key: bytes) -> bool:
        return self._state(region, key) == _WHOLE

    # -- the block API -----------------------------------------------------

    def exists(self, key: bytes) -> bool:
        """Whether @key's block is stored whole (counts as a use)."""
        key = _key_bytes(key)
        region = self._open(key)
        if region is None:
            return False
        with region:
            return self._complete(region, key)

    def batch_exists(self, keys: Iterable[bytes]) -> list[bool]:
        """:meth:`exists` of each key."""
        return [self.exists(k) for k in keys]

    def prefix_hits(self, keys: Iterable[bytes]) -> int:
        """How many of @keys, from the first, are stored: the longest
        stored prefix of a prefix hash chain (SGLang's batch_exists,
        vLLM's lookup)."""
        n = 0
        for k in keys:
            if not self.exists(k):
                break
            n += 1
        return n

    def get(self, key: bytes, out: WriteableBuffer) -> bool:
        """Read @key's block into @out (block_bytes, writable), no copy
        in between. Returns False, with @out untouched, on a miss."""
        mv = self._view(out, writable=True)
        key = _key_bytes(key)
        region = self._open(key)
        if region is None:
            return False
        with region:
            if not self._complete(region, key):
                return False
            n = region.readinto(mv, HEADER_BYTES)
            if n != self.block_bytes:
                # readinto stops at an error; reading on gives its errno.
                region.readinto(mv[n:], HEADER_BYTES + n)
                raise make_error(errno.EIO, f"kvstore: read block {self.name_of(key)}",
                                 hint=f"{n} of {self.block_bytes} bytes",
                                 filename=self.name_of(key))
            return True

    def batch_get(self, keys: Sequence[bytes], outs: Sequence[WriteableBuffer]) -> list[bool]:
        """:meth:`get` of each key into the buffer at the same index."""
        if len(keys) != len(outs):
            raise ValueError(f"{len(keys)} keys but {len(outs)} buffers")
        return [self.get(k, o) for k, o in zip(keys, outs)]

    def _create(self, key: bytes) -> Region | None:
        """A new region for @key, or None when the key is stored already.

        Replaces the leftover of a put that was cut (a region without a
        valid header that no other file has open). Waits up to
        _BUSY_WAIT_S for another file's put of the key, then raises EAGAIN;
        raises EEXIST for a valid block of another key or geometry under
        the name, ENOSPC when neither the namespace nor the tier's table of
        persistent regions has room and no block of this store can go.
        """
        name = self.name_of(key)
        deadline = time.monotonic() + _BUSY_WAIT_S
        reclaimed = False
        while True:
            try:
                return self._tier.open(name, size=self.region_bytes, create=True,
                                       exclusive=True, persistent=True,
                                       mode=self.mode)
            except FileExistsError:
                pass
            except OSError as e:
                if e.errno != errno.ENOSPC or reclaimed:
                    raise
                reclaimed = True
                if not self._reclaim():
                    raise
                continue
            region = self._open(key)
            if region is None:
                continue        # deleted in between: try again
            with region:
                state = self._state(region, key)
                if state == _WHOLE:
                    return None
                if state == _OTHER:
                    raise make_error(errno.EEXIST, f"kvstore: put {name}",
                                     hint="a block of another key or block size "
                                     "has this name", filename=name)
                # No valid header and only our probe has it open: the
                # leftover of a cut put. Unlinked while the probe holds it,
                # so another prober sees two users and cannot unlink what
                # replaces it; capacity reclaim cannot take it either.
                if region.info().users == 1:
                    try:
                        self._tier.unlink(name)
                    except FileNotFoundError:
                        pass
                    continue
            if time.monotonic() > deadline:
                raise make_error(errno.EAGAIN, f"kvstore: put {name}",
                                 hint="another file has held the unfinished "
                                 f"block for {_BUSY_WAIT_S:.0f} s", filename=name)
            time.sleep(0.01)

    def _reclaim(self) -> bool:
        """Unlink this store's least recently used unused, unpinned blocks
        (1/64 of them, at least one) for a put the tier's table of
        persistent regions has no room for. False when there were none."""
        mine = [e for e in self._tier.regions()
                if self._ours(e.name) and not e.users and not e.is_pinned]
        mine.sort(key=lambda e: e.last_used)
        gone = 0
        for e in mine[:max(1, len(mine) // 64)]:
            try:
                self._tier.unlink(e.name)
                gone += 1
            except FileNotFoundError:
                pass
        return gone > 0

    @staticmethod
    def _write(region: Region, data: ReadableBuffer, offset: int) -> None:
        """All of @data at @offset, or the error that stopped it."""
        mv = memoryview(data).cast("B")
        n = region.pwrite(mv, offset)
        if n != len(mv):
            # pwrite stops at an error after some bytes; writing on gives
            # its errno (ENOSPC, EIO, ...).
            region.pwrite(mv[n:], offset + n)
            raise make_error(errno.EIO, f"kvstore: write {region.name}",
                             hint=f"{n} of {len(mv)} bytes", filename=region.name)

    def _abandon(self, key: bytes, region: Region) -> None:
        try:
            self._tier.unlink(self.name_of(key))
        except OSError:
            pass
        region.close()

    def put(self, key: bytes, block: ReadableBuffer) -> bool:
        """Store @block (block_bytes) under @key, durably.

        Returns True when this call stored it, False when the key was
        stored already (its bytes are left as they are). Another file's
        put of the same key in progress is waited for (up to 5 s, then
        EAGAIN). A failure removes what it wrote and raises.
        """
        return self.batch_put([key], [block])[0]

    def batch_put(self, keys: Sequence[bytes], blocks: Sequence[ReadableBuffer]) -> list[bool]:
        """:meth:`put` of each key; the blocks are all written before the
        first header, so a crash leaves each key whole or absent. A key
        given twice is stored once (False for the repeat)."""
        if len(keys) != len(blocks):
            raise ValueError(f"{len(keys)} keys but {len(blocks)} blocks")
        views = [self._view(b, writable=False) for b in blocks]
        keys = [_key_bytes(k) for k in keys]
        made: list[tuple[bytes, Region]] = []
        done = [False] * len(keys)
        seen: set[bytes] = set()
        try:
            for i, (k, mv) in enumerate(zip(keys, views)):
                # A key twice in one batch: the first stores it (waiting
                # for our own unfinished region would only time out).
                if k in seen:
                    continue
                seen.add(k)
                region = self._create(k)
                if region is None:
                    continue
                made.append((k, region))
                done[i] = True
                self._write(region, mv, HEADER_BYTES)
            # The blocks, then the headers that say they are whole.
            for _, region in made:
                region.fsync()
            for k, region in made:
                self._write(region, _header(k, self.block_bytes), 0)
            for _, region in made:
                region.fsync()
        except BaseException:
            for k, region in made:
                self._abandon(k, region)
            raise
        for _, region in made:
            region.close()
        return done

    def delete(self, key: bytes) -> bool:
        """Remove @key's block; False when there was none. A reader that
        has it open finishes with the old bytes."""
        key = _key_bytes(key)
        with self._lock:
            pinned = self._pins.pop(key, None)
        if pinned is not None:
            pinned.close()
        try:
            self._tier.unlink(self.name_of(key))
        except FileNotFoundError:
            return False
        return True

    def pin(self, key: bytes, *, persistent: bool = False) -> bool:
        """Keep @key's block from capacity reclaim.

        By default for as long as this store is open (it holds the block's
        region open); with @persistent, by the region's PINNED flag, until
        :meth:`unpin` with @persistent, across reboots (needs
        CAP_SYS_RESOURCE). Returns False when the key is not stored.
        """
        key = _key_bytes(key)
        if persistent:
            if not self.exists(key):
                return False
            self._tier.set_flags(self.name_of(key), set=RegionFlag.PINNED)
            return True
        region = self._open(key)
        if region is None:
            return False
        try:
            whole = self._complete(region, key)
        except BaseException:
            region.close()
            raise
        if not whole:
            region.close()
            return False
        with self._lock:
            old = self._pins.pop(key, None)
            self._pins[key] = region
        if old is not None:
            old.close()
        return True

    def unpin(self, key: bytes, *, persistent: bool = False) -> bool:
        """Undo :meth:`pin`; False when the key was not pinned that way."""
        key = _key_bytes(key)
        if persistent:
            name = self.name_of(key)
            if not any(e.name == name and e.is_pinned for e in self._tier.regions()):
                return False
            self._tier.set_flags(name, clear=RegionFlag.PINNED)
            return True
        with self._lock:
            region = self._pins.pop(key, None)
        if region is None:
            return False
        region.close()
        return True

    def __len__(self) -> int:
        """The regions of this store on the tier (whole blocks or not)."""
        return sum(1 for e in self._tier.regions() if self._ours(e.name))

    def close(self) -> None:
        """Drop this store's pins, and its tier if it opened it."""
        with self._lock:
            pins, self._pins = self._pins, {}
        for region in pins.values():
            region.close()
        if self._own_tier:
            self._tier.close()

    def __enter__(self) -> KVStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
