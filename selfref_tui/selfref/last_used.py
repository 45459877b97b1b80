"""Which conversation a data dir's app showed last: ``<data dir>/state.json``.

The app opens it again when started without ``--key``, so a restart shows
the conversation the person left, not an empty ``main`` that reads as if the
history were gone. It is state, not configuration: the app writes it each
time a key opens on screen; nobody edits it.

The file follows the store's rules: written whole (temp file + rename) and
private (0600), read without following a link or blocking on a FIFO. It is a
convenience, so it is not fsynced, and anything odd about it — missing,
garbled, a link, a key that was deleted since — means "no last key": the app
falls back to its default key instead of failing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .errors import StoreError
from .fsutil import atomic_write, ensure_dir, read_regular
from .keys import is_fork_key, key_dirname, validate_key

STATE_NAME = "state.json"
#: where the keys live under the data dir (reference.KEYS_DIR; not imported: a cycle)
_KEYS_DIR = "keys"

log = logging.getLogger(__name__)


def read_last_key(data_dir: Path) -> str | None:
    """The key shown last under ``data_dir``, when it still exists; else None."""
    try:
        data = read_regular(data_dir / STATE_NAME)
        state = json.loads(data) if data is not None else None
    except (OSError, ValueError, RecursionError, StoreError):
        return None
    key = state.get("last_key") if isinstance(state, dict) else None
    if not isinstance(key, str):
        return None
    try:
        key_dir = data_dir / _KEYS_DIR / key_dirname(validate_key(key))
    except StoreError:
        return None
    if not ((key_dir / "meta.json").exists() or (key_dir / "log.jsonl").exists()):
        return None  # deleted or renamed since (by another window, or by hand)
    return key


def write_last_key(data_dir: Path, key: str) -> bool:
    """Record ``key`` as the one shown last; False (and nothing raised) when it cannot be.

    A fork's key is never recorded: the person did not pick it.
    """
    if is_fork_key(key):
        return False
    body = json.dumps({"last_key": validate_key(key)}, ensure_ascii=True).encode("ascii")
    try:
        ensure_dir(data_dir)
        # No fsync: a power loss may cost the choice, never a conversation.
        atomic_write(data_dir / STATE_NAME, body, fsync=False)
    except OSError as exc:
        log.warning("could not record the last key in %s: %s", data_dir, exc)
        return False
    return True
