"""``SelfReference``: the facade that hands out memory keys.

It knows where the data directory is, keeps one loaded :class:`MemoryKey` per
key (so the runtime, forks and the UI share one fold instead of re-reading a
long log), and owns the write locks it took, so one ``close()`` releases them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from selfref_tui.safety import name_line

from .errors import (
    READ_ONLY,
    InvalidKeyError,
    StoreError,
    StoreLockedError,
    UnsafeStoreFileError,
    denied,
)
from .fsutil import DIR_MODE, check_dir, ensure_dir, open_regular, read_regular
from .keys import (
    FORK_MARK,
    copy_key_dir,
    is_fork_key,
    key_dirname,
    key_from_dirname,
    move_to_trash,
    trash_folder,
    validate_key,
    validate_name,
    write_branch_dir,
    write_empty_meta,
)
from .log_lines import SCHEMA, header_line, log_prefix, now_iso, pin_record, sealed_record
from .store import LOG_NAME, META_NAME, KeyInfo, MemoryKey

KEYS_DIR = "keys"


def default_data_dir() -> Path:
    env = os.environ.get("SELFREF_DATA_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("selfref-tui"))


class SelfReference:
    """All memory keys under one data directory."""

    def __init__(self, data_dir: str | Path | None = None, *, source: str = "") -> None:
        """``source`` names the setting that chose ``data_dir`` (``--data-dir``…) for errors."""
        self.data_dir = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        self.source = source or "SELFREF_DATA_DIR or --data-dir"
        self._open: dict[str, MemoryKey] = {}
        self._stamp: dict[str, tuple[int, int]] = {}
        #: set by close(): a thread still counting tokens when the app shuts down must
        #: not open the key again and keep its lock for the rest of the process
        self._closed = False
        #: open, release and close from several threads (the token count runs in one):
        #: a close must not slip between an open's check and its taking the lock
        self._guard = threading.RLock()

    @property
    def keys_dir(self) -> Path:
        return self.data_dir / KEYS_DIR

    def key_dir(self, key: str) -> Path:
        return self.keys_dir / key_dirname(validate_key(key))

    def open(self, key: str, *, write: bool = True) -> MemoryKey:
        """The loaded key; ``write=True`` takes its lock (``StoreLockedError`` if held).

        The same object is returned to every caller in this process. A
        read-only open reloads when the log changed on disk since it was read,
        so a viewer of a key another process writes sees the new turns.
        """
        with self._guard:
            return self._open_guarded(key, write)

    def _open_guarded(self, key: str, write: bool) -> MemoryKey:
        if write and self._closed:
            raise StoreError(f"Conversation '{name_line(key)}': this store was closed; it "
                             "takes no locks.")
        key_dir = self.key_dir(key)
        cached = self._open.get(key)
        if cached is not None:
            if cached.writable:
                return cached
            if not write and self._stamp.get(key) == _stamp(key_dir):
                return cached
        if write:
            if not is_fork_key(key) and not self.exists(key):
                validate_name(key)  # opening it makes it: a new name's rules
            self._ensure_root()
            try:
                # A key folder that is a link (say, to another key's) is refused before
                # anything in it is locked, read or moved.
                if not check_dir(key_dir):
                    ensure_dir(key_dir)
                from .lock import WriterLock  # a write only: searches never import the lock

                lock = WriterLock(key, key_dir)
                lock.acquire()
            except OSError as exc:
                raise denied(exc, key_dir, "write") from exc
            try:
                memory = MemoryKey(key, key_dir, lock=lock)
            except BaseException:
                lock.release()
                raise
        else:
            memory = MemoryKey(key, key_dir)
        self._open[key] = memory
        self._stamp[key] = _stamp(key_dir)
        return memory

    def open_key(self, key: str, *, write: bool = True) -> MemoryKey:
        """Alias of :meth:`open` (the name docs/architecture.md uses)."""
        return self.open(key, write=write)

    def create(self, key: str) -> bool:
        """Make ``key`` exist on disk before its first message, so lists show it.

        False when it already existed (its files are left as they are).
        """
        if not self.exists(key):
            validate_name(key)
        self._ensure_root()
        return write_empty_meta(self.key_dir(key), key, SCHEMA)

    def rename(self, old: str, new: str) -> None:
        """Give a key a new name; its old folder goes to the trash, never deleted.

        Refused (``StoreLockedError``) while any process, this one included,
        writes the key, and (``InvalidKeyError``) when ``new`` exists.
        """
        validate_name(new)
        src, dst = self.key_dir(old), self.key_dir(new)
        if old == new:
            return
        if not self.exists(old):
            raise InvalidKeyError(f"There is no conversation named '{name_line(old)}'.")
        if self.exists(new):
            raise InvalidKeyError(f"A conversation named '{name_line(new)}' already exists; "
                                  "pick another name.")
        trash_folder(self.data_dir)  # refused before anything is copied
        with self._exclusive(old):
            copy_key_dir(src, dst, new)
            move_to_trash(src, self.data_dir)

    def trash(self, key: str) -> Path:
        """Move a key's folder, and its forks' folders, to ``<data dir>/trash/``.

        Returns where the key's own folder went.
        """
        src = self.key_dir(key)
        if not src.exists():
            raise InvalidKeyError(f"There is no conversation named '{name_line(key)}'.")
        trash_folder(self.data_dir)  # refused before anything moves (a fork's folder too)
        with self._exclusive(key):
            where = move_to_trash(src, self.data_dir)
        for info in self.keys():
            if info.key.startswith(f"{key}{FORK_MARK}"):
                with self._exclusive(info.key):
                    move_to_trash(self.key_dir(info.key), self.data_dir)
        return where

    def branch(self, key: str, n: int, new: str) -> MemoryKey:
        """A new key ``new`` holding ``key``'s messages before message ``n`` and its state then.

        Its log is the source log's records up to that point (folded, they give
        exactly that state: messages with their numbers, experiences, refs and
        their versions, the summary) and an ``origin`` record naming where it
        came from. The source key is not changed. Returns the new key, open
        for writing.
        """
        validate_name(new)
        if self.exists(new):
            raise InvalidKeyError(f"A conversation named '{name_line(new)}' already exists; "
                                  "pick another name.")
        source = self.open(key, write=False) if key not in self._open else self._open[key]
        try:
            # one past the last message: the whole conversation
            patch = source.patch_count if n == source.last_number + 1 else source.patch_of(n)
        except IndexError:
            raise InvalidKeyError(
                f"no message {n} in conversation '{name_line(key)}': its messages are "
                f"numbered 1 to {source.last_number}") from None
        data = read_regular(self.key_dir(key) / LOG_NAME) or b""
        created = now_iso()
        prefix = log_prefix(data, patch)
        lines = [header_line(new, created), *prefix,
                 *_pins_now(prefix, source.pins, n, created),
                 sealed_record({"t": "origin", "key": key, "message": n, "created": created,
                                "ts": created})]
        self._ensure_root()
        write_branch_dir(self.key_dir(key), self.key_dir(new),
                         b"".join(line + b"\n" for line in lines))
        return self.open(new)

    def exists(self, key: str) -> bool:
        """Whether ``key`` was ever written (opening it for writing would make it)."""
        d = self.key_dir(key)
        return (d / META_NAME).exists() or (d / LOG_NAME).exists()

    @contextmanager
    def _exclusive(self, key: str) -> Iterator[None]:
        """Hold ``key``'s writer lock (not held by this instance) around a move of its folder."""
        if key in self._open and self._open[key].writable:
            raise StoreLockedError(
                f"Conversation '{name_line(key)}' is open in this window; "
                "switch to another conversation first."
            )
        self.release(key)
        from .lock import WriterLock

        lock = WriterLock(key, self.key_dir(key))
        lock.acquire()
        try:
            yield
        finally:
            lock.release()

    def keys(self, *, forks: bool = True) -> list[KeyInfo]:
        """Every stored key, newest activity first, from the small meta files only.

        ``forks=False`` leaves out the agent's fork keys (``main::fork::1``).
        """
        try:
            entries = list(os.scandir(self.keys_dir))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise denied(exc, self.keys_dir, "read") from exc
        infos: list[KeyInfo] = []
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            info = _read_info(Path(entry.path))
            if info is not None and (forks or not is_fork_key(info.key)):
                infos.append(info)
        infos.sort(key=lambda i: (i.updated, i.key), reverse=True)
        return infos

    def open_keys(self) -> list[str]:
        """The keys this instance has loaded (and, when writable, locked)."""
        return list(self._open)

    def release(self, key: str) -> None:
        """Let go of one key: its lock returns to the store, its state is dropped."""
        with self._guard:
            memory = self._open.pop(key, None)
            self._stamp.pop(key, None)
        if memory is not None:
            memory.close()

    def close(self) -> None:
        """Release every lock this instance took, for good (no writable open after it)."""
        with self._guard:
            self._closed = True
            for memory in self._open.values():
                memory.close()
            self._open.clear()
            self._stamp.clear()

    def __enter__(self) -> SelfReference:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_root(self) -> None:
        created = not self.data_dir.exists()
        try:
            ensure_dir(self.keys_dir)
        except OSError as exc:
            if created:  # nothing there to read
                raise StoreError(
                    f"Cannot create the data directory {self.data_dir} (set by {self.source}): "
                    f"{exc.strerror}; point {self.source} at a writable folder."
                ) from exc
            raise StoreError(
                f"Cannot write in the data directory {self.data_dir} (set by {self.source}): "
                f"{exc.strerror}; {READ_ONLY}, or point {self.source} at a writable folder."
            ) from exc
        if created:
            os.chmod(self.data_dir, DIR_MODE)


class ReadOnlyReference:
    """A :class:`SelfReference` that only ever opens keys for reading.

    ``--read-only`` hands this to the runtime, so previews, history, refs and
    exports work on a key another process is writing, and any write is refused
    by the key itself (``MemoryKey.commit`` on a read-only key raises).
    """

    read_only = True

    def __init__(self, store: SelfReference) -> None:
        self._store = store

    def open(self, key: str, *, write: bool = True) -> MemoryKey:
        return self._store.open(key, write=False)

    def open_key(self, key: str, *, write: bool = True) -> MemoryKey:
        return self.open(key)

    def create(self, key: str) -> bool:
        raise StoreError("This window is read-only (--read-only); it cannot create keys.")

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def _stamp(key_dir: Path) -> tuple[int, int]:
    try:
        st = os.stat(key_dir / LOG_NAME)
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def _read_info(key_dir: Path) -> KeyInfo | None:
    """A key's list entry; a damaged meta file degrades to what the log header says."""
    try:
        data = read_regular(key_dir / META_NAME)
        if data is None:
            raise FileNotFoundError
        meta = json.loads(data)
        if isinstance(meta, dict) and isinstance(meta.get("key"), str):
            messages = meta.get("messages")
            updated = meta.get("updated")
            origin = meta.get("origin") if isinstance(meta.get("origin"), dict) else {}
            origin_key, at = origin.get("key"), origin.get("message")
            return KeyInfo(
                key=meta["key"],
                messages=messages if isinstance(messages, int) else 0,
                updated=updated if isinstance(updated, str) else "",
                origin_key=origin_key if isinstance(origin_key, str) else "",
                origin_message=at if type(at) is int else 0,
            )
        problem = "meta.json has the wrong shape"
    except FileNotFoundError:
        problem = "meta.json is missing"
    except UnsafeStoreFileError:
        problem = "meta.json is not a regular file"
    except (OSError, ValueError, RecursionError) as exc:
        problem = f"meta.json is unreadable ({exc.__class__.__name__})"
    key = _key_from_log_header(key_dir) or key_from_dirname(key_dir.name)
    if key is None:
        return None
    if problem == "meta.json is missing" and not (key_dir / LOG_NAME).exists():
        return None  # a directory with no log yet (opened, never written)
    return KeyInfo(key=key, messages=0, updated="", problem=problem)


def _key_from_log_header(key_dir: Path) -> str | None:
    try:
        fd = open_regular(key_dir / LOG_NAME, os.O_RDONLY)  # never a FIFO's blocking open
        with os.fdopen(fd, "rb") as fh:
            header = json.loads(fh.readline(4096))
    except (OSError, ValueError, RecursionError, StoreError):
        return None
    key = header.get("key") if isinstance(header, dict) else None
    return key if isinstance(key, str) else None


def _pins_now(prefix: list[bytes], pins: frozenset[int], n: int, ts: str) -> list[bytes]:
    """Pin records that leave a branch's messages (before ``n``) pinned as the source's
    are now: a pin is the person's mark on a number, not the state at a point (a
    rewind keeps pins too), so one made or taken back after ``n`` counts."""
    then: set[int] = set()
    for line in prefix:
        if b'"t":"pin"' not in line:
            continue
        record = json.loads(line)
        if record.get("t") != "pin":
            continue
        if record["pinned"]:
            then.add(record["n"])
        else:
            then.discard(record["n"])
    wanted = {k for k in pins if k < n}
    return [sealed_record({**pin_record(k, k in wanted), "ts": ts})
            for k in sorted(then ^ wanted)]
