"""Memory key names and the directory names they are stored under.

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
import unicodedata

from .errors import InvalidKeyError

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
        raise InvalidKeyError(f"Memory key must be text, not {type(key).__name__}.")
    if not key or not key.strip():
        raise InvalidKeyError("Memory key is empty; give it a name such as 'main'.")
    shown = repr(key[:40] + ("…" if len(key) > 40 else ""))
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKeyError(
            f"Memory key {shown} is {len(key)} characters long; use at most {MAX_KEY_LENGTH}."
        )
    if key != key.strip():
        raise InvalidKeyError(f"Memory key {shown} starts or ends with whitespace; remove it.")
    if "/" in key or "\\" in key:
        raise InvalidKeyError(
            f"Memory key {shown} contains a path separator; use ':' or '-' instead."
        )
    if ".." in key:
        raise InvalidKeyError(f"Memory key {shown} contains '..'; use another name.")
    for ch in key:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs", "Cn") or ch in "\u2028\u2029":
            raise InvalidKeyError(
                f"Memory key {shown} contains a control or invalid character "
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
