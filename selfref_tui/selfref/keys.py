"""Memory key names, the directory names they are stored under, and their lifecycle.

A key is chosen by people and by the runtime (fork keys look like
``main::fork::1``), so it may hold characters no file system agrees on. The
mapping percent-encodes everything outside ``[a-z0-9_.-]`` — upper-case letters
too, so two keys differing only in case never share a directory on macOS or
Windows — and it never yields ``.``, ``..``, a hidden name, a trailing dot or a
reserved Windows device name. Long names get a hash suffix to stay under file
system limits; the real name is always kept inside the key's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

from selfref_tui.safety import (
    lookalike_letters,
    mixed_scripts,
    name_line,
    odd_space,
    one_script,
)

from .checkpoints import FILES_DIR
from .checksum import seal
from .errors import InvalidKeyError, StoreError
from .fsutil import atomic_write, check_dir, ensure_dir, fsync_dir, read_regular
from .images import copy_blobs, copy_images

MAX_KEY_LENGTH = 128
_MAX_DIRNAME = 180
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")
_WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"]
    + [f"com{i}" for i in range(1, 10)]
    + [f"lpt{i}" for i in range(1, 10)]
)


def validate_key(key: str) -> str:
    """Return ``key`` unchanged if it is a usable memory key name, else raise.

    The rules are strict on purpose: a key ends up in a path, and a name that
    is refused early is better than one that escapes the data directory.
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"A conversation name must be text, not {type(key).__name__}.")
    if not key or not key.strip():
        raise InvalidKeyError("The conversation name is empty; give it a name such as 'main'.")
    shown = repr(key[:40] + ("…" if len(key) > 40 else ""))
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(
            f"Conversation name {shown} is {len(key)} characters long; "
            f"use at most {MAX_KEY_LENGTH}."
        )
    if key != key.strip():
        raise InvalidKeyError(
            f"Conversation name {shown} starts or ends with whitespace; remove it."
        )
    if "/" in key or "\\" in key:
        raise InvalidKeyError(
            f"Conversation name {shown} contains a path separator; use ':' or '-' instead."
        )
    if ".." in key:
        raise InvalidKeyError(f"Conversation name {shown} contains '..'; use another name.")
    for ch in key:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs", "Cn") or ch in "\u2028\u2029":
            raise InvalidKeyError(
                f"Conversation name {shown} contains a control or invalid character "
                f"(U+{ord(ch):04X}); remove it."
            )
    return key


def key_dirname(key: str) -> str:
    """The directory name for a (validated) key: safe on every OS, one key per name."""
    validate_key(key)
    parts: list[str] = []
    for ch in key:
        if ch in _SAFE:
            parts.append(ch)
        else:
            parts.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    # Never a hidden name, "." or "..", or a trailing dot (Windows drops it).
    if parts[0] == ".":
        parts[0] = "%2E"
    if parts[-1] == ".":
        parts[-1] = "%2E"
    name = "".join(parts)
    stem = name.split(".", 1)[0]
    if stem in _WINDOWS_RESERVED:
        name = f"%{ord(name[0]):02X}{name[1:]}"
    if len(name) > _MAX_DIRNAME:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        # "~" is always encoded above, so it marks a hashed (irreversible) name.
        name = f"{name[:_MAX_DIRNAME - 20]}~{digest}"
    return name


def key_from_dirname(name: str) -> str | None:
    """The key a directory name stands for, or None when it cannot be decoded.

    Used only as a fallback when a key's own files are unreadable.
    """
    if "~" in name:
        return None
    out = bytearray()
    i = 0
    try:
        while i < len(name):
            ch = name[i]
            if ch == "%":
                out.append(int(name[i + 1 : i + 3], 16))
                i += 3
            else:
                out.extend(ch.encode("ascii"))
                i += 1
        key = out.decode("utf-8")
        validate_key(key)
    except (ValueError, UnicodeError, InvalidKeyError):
        return None
    return key if key_dirname(key) == name else None


# --------------------------------------------------------------- key lifecycle
#
# A key is listed once its folder holds a meta file, so a key a person creates
# is written at once (empty) instead of appearing only after its first message.
# Rename and delete never destroy: a deleted key's folder moves to a trash
# folder in the data dir, and a rename writes the new folder before the old one
# goes to the trash.

FORK_MARK = "::fork::"
TRASH_DIR = "trash"


def is_fork_key(key: str) -> bool:
    """Fork keys are the agent's (``main::fork::1``), not keys a person made."""
    return FORK_MARK in key


def validate_name(key: str) -> str:
    """:func:`validate_key` for a name a person gives a new conversation (a branch, a
    rename, a new one): also never a fork's name. Lists hide such a key, and the
    agent's next fork of the conversation before ``::fork::`` took it over (its
    messages marked compacted under the fork's snapshot).

    Nor an invisible format character (Unicode Cf: zero-width spaces and joiners,
    U+FEFF, bidirectional marks and overrides): "ma\u200bin" would look exactly
    like "main" in every list. Nor a space other than the plain one ("my\u00a0chat"
    reads as "my chat"), nor a word that mixes Latin, Cyrillic and Greek letters
    ("m\u0430in" with a Cyrillic "а" reads as "main"); a name wholly in one of them, or
    with words in each, is fine. A key that already has one still opens, and is shown
    with the character escaped (``safety.name_line``).
    """
    validate_key(key)
    if FORK_MARK in key:
        raise InvalidKeyError(
            f"Conversation name {key[:40]!r} contains {FORK_MARK!r}, which names the agent's "
            "forks; use another name.")
    hidden = next((ch for ch in key if _hidden(ch)), None)
    if hidden is not None:
        raise InvalidKeyError(
            f"Conversation name {key[:40]!r} contains an invisible character "
            f"(U+{ord(hidden):04X}) that would make it look like another name; remove it.")
    space = odd_space(key)
    if space is not None:
        raise InvalidKeyError(
            f"Conversation name '{name_line(key, 60)}' contains a space that is not a plain "
            f"one ({_described(space)}) and reads as one; type a plain space or '-'.")
    scripts = mixed_scripts(key)
    if scripts:
        letter = key[min(lookalike_letters(key))]
        mixed = " and ".join(script.title() for script in scripts)
        raise InvalidKeyError(
            f"Conversation name '{name_line(key, 60)}' mixes {mixed} letters in one word "
            f"({_described(letter)}), so it can look like another name; write each word "
            "in one alphabet.")
    return key


def _described(ch: str) -> str:
    """"U+00A0 NO-BREAK SPACE": a character that cannot be told apart by sight, named."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".rstrip()


def without_hidden(key: str) -> str:
    """``key`` without its invisible format characters: what a name made from it (a
    branch's suggested name) may hold, since :func:`validate_name` refuses them; a space
    that only looks plain becomes a plain one, and a word that mixes alphabets is put in
    one (``safety.one_script``: "m\u0430in" → "main")."""
    return one_script("".join(" " if odd_space(ch) else ch for ch in key if not _hidden(ch)))


def _hidden(ch: str) -> bool:
    """An invisible format character (Unicode Cf), which makes a name look like another."""
    return unicodedata.category(ch) == "Cf"


def write_empty_meta(key_dir: Path, key: str, schema: int) -> bool:
    """Make a new key exist on disk (listed, 0 messages); False if it already had files."""
    meta = key_dir / "meta.json"
    if meta.exists() or (key_dir / "log.jsonl").exists():
        return False
    ensure_dir(key_dir)
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    body = {"schema": schema, "key": key, "messages": 0, "created": now, "updated": now}
    atomic_write(meta, json.dumps(body, ensure_ascii=True).encode("ascii"), sync_dir=True)
    return True


def copy_key_dir(src: Path, dst: Path, new_key: str) -> None:
    """Write ``src``'s files into a new folder ``dst`` under ``new_key``'s name.

    The key's name is inside its files (the log header, the meta file), so a
    rename rewrites those two lines; every record after the header is copied
    byte for byte. ``dst`` must not exist: the copy is made in a temporary
    sibling and renamed into place, so a crash leaves either no new key or a
    whole one.
    """
    tmp = _new_key_sibling(dst)
    data = read_regular(src / "log.jsonl")  # never a link's target or a FIFO's open
    if data is not None:
        first, sep, rest = data.partition(b"\n")
        header = json.loads(first)
        header.pop("c", None)  # the header is sealed again with its new name
        header["key"] = new_key
        line = seal(json.dumps(header, ensure_ascii=True, separators=(",", ":")))
        atomic_write(tmp / "log.jsonl", line.encode("ascii") + sep + rest)
    try:
        meta = json.loads(read_regular(src / "meta.json") or b"null")
    except (OSError, ValueError, StoreError):
        meta = None
    if isinstance(meta, dict):
        meta["key"] = new_key
        atomic_write(tmp / "meta.json", json.dumps(meta, ensure_ascii=True).encode("ascii"))
    _fill_and_place(src, tmp, dst)


def _new_key_sibling(dst: Path) -> Path:
    """An empty temporary folder beside ``dst`` to make a new key folder in (a crash
    leaves no half key under its name); refused when ``dst`` already exists."""
    if dst.exists():
        raise InvalidKeyError(f"A key folder named {dst.name!r} already exists; pick another name.")
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    ensure_dir(tmp)
    return tmp


def _fill_and_place(src: Path, tmp: Path, dst: Path) -> None:
    """``src``'s settings, images and file copies into ``tmp``, then ``tmp`` renamed to
    ``dst``: what a copied key and a branch both take from their origin."""
    copy_settings(src, tmp)
    copy_images(src, tmp)
    copy_blobs(src, tmp, FILES_DIR)
    os.rename(tmp, dst)
    fsync_dir(dst.parent)


def copy_settings(src: Path, dst: Path) -> None:
    """``src``'s settings (model, profile, instructions) into the folder ``dst``, as they are."""
    settings = read_regular(src / "settings.json")
    if settings is not None:
        atomic_write(dst / "settings.json", settings)


def write_branch_dir(src: Path, dst: Path, log: bytes) -> None:
    """A new key folder ``dst`` holding ``log`` and ``src``'s stored images, file copies and
    settings: a branch goes on with the model and instructions its origin runs with now
    (settings are not in the log, so "at that point" can only mean as they are).

    Made in a temporary sibling and renamed into place, like
    :func:`copy_key_dir`, so a crash leaves no half branch. The meta file is
    written when the key is first opened (from its log).
    """
    tmp = _new_key_sibling(dst)
    try:
        atomic_write(tmp / "log.jsonl", log)
        _fill_and_place(src, tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def trash_folder(data_dir: Path) -> Path:
    """``<data_dir>/trash/``, made when missing. A link (or anything else) planted there is
    refused (``UnsafeStoreFileError``), never followed: a deleted or renamed conversation
    would be moved into the folder it leads to, out of the person's data folder."""
    trash = data_dir / TRASH_DIR
    ensure_dir(trash)
    check_dir(trash)
    return trash


def move_to_trash(key_dir: Path, data_dir: Path) -> Path:
    """Move a key's folder into ``<data_dir>/trash/`` (time-stamped); returns where it went."""
    trash = trash_folder(data_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = trash / f"{key_dir.name}.{stamp}"
    os.rename(key_dir, target)
    fsync_dir(key_dir.parent)
    fsync_dir(trash)
    return target
