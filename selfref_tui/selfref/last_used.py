"""Which conversation a data dir's app showed last: ``<data dir>/state.json``.

The app opens it again when started without ``--key``, so a restart shows
the conversation the person left, not an empty ``main`` that reads as if the
history were gone. It is state, not configuration: the app writes it each
time a key opens on screen; nobody edits it.

The file is a store file with the rules of ``windows.json``
(:mod:`selfref_tui.selfref.window_cache`), and input like any other:

- it is opened only when it is a regular file (never a link, a FIFO or a
  device: a FIFO would freeze the start, a link to ``/dev/zero`` read without
  end) and read up to :data:`MAX_STATE_BYTES`;
- it is written private (0600), whole (temp file + rename), not fsynced (a
  power loss may cost the choice, never a conversation), and never over an
  entry that is not a regular file or is larger than anything written here:
  that is not ours, so it is left as it is and the person told;
- a file whose content is not what is written here (garbled, another shape,
  a key name the store refuses) is ignored and written anew at the next key.

Anything odd means "no last key": the app opens its default key instead of
failing, and says why once, in one line (:func:`read_last_key`'s problem).
A key deleted or renamed since is no problem: it is simply not offered.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .errors import StoreError, StoreFileTooLargeError, UnsafeStoreFileError
from .fsutil import atomic_write, check_regular, ensure_dir, not_regular, read_regular
from .keys import is_fork_key, key_dirname, validate_key

STATE_NAME = "state.json"
#: far more than is ever written: ``{"last_key": …}`` with a key of at most 128
#: characters, each at most 12 bytes as ASCII-only JSON
MAX_STATE_BYTES = 4096
#: where the keys live under the data dir (reference.KEYS_DIR; not imported: a cycle)
_KEYS_DIR = "keys"
#: what the person loses when the file is not used, said after what was found
_NOT_USED = "the conversation shown last is not remembered"

log = logging.getLogger(__name__)


def read_last_key(data_dir: Path) -> tuple[str | None, str | None]:
    """The key shown last under ``data_dir`` when it still exists (else None), and a
    problem to tell (one line) when the file was found odd (else None)."""
    path = data_dir / STATE_NAME
    try:
        data = read_regular(path, limit=MAX_STATE_BYTES)
    except UnsafeStoreFileError:
        return None, _refused(path)
    except StoreFileTooLargeError:
        return None, _too_large(path)
    except (OSError, StoreError) as exc:
        return None, f"{path} cannot be read ({_why(exc)}): {_NOT_USED}"
    if data is None:
        return None, None
    try:
        state = json.loads(data)
        key = state.get("last_key") if isinstance(state, dict) else None
        key_dir = data_dir / _KEYS_DIR / key_dirname(validate_key(key))
        if is_fork_key(key):  # never written here: the agent's, opened by no person
            raise ValueError(key)
    except (ValueError, RecursionError, StoreError):
        return None, (f"{path} is not what selfref-tui writes there (garbled, or no valid "
                      f"conversation name in it): ignored — {_NOT_USED}; it is written anew "
                      "at the next conversation opened")
    if not ((key_dir / "meta.json").exists() or (key_dir / "log.jsonl").exists()):
        return None, None  # deleted or renamed since (by another window, or by hand)
    return key, None


def write_last_key(data_dir: Path, key: str) -> str | None:
    """Record ``key`` as the one shown last; a problem (one line) when it was not.

    A fork's key is never recorded (the person did not pick it), and that is no
    problem. An entry that is not a regular file, or larger than anything
    written here, is left as it is.
    """
    if is_fork_key(key):
        return None
    body = json.dumps({"last_key": validate_key(key)}, ensure_ascii=True).encode("ascii")
    path = data_dir / STATE_NAME
    try:
        ensure_dir(data_dir)
        found = check_regular(path)  # a planted entry is refused, not replaced
        if found is not None and found.st_size > MAX_STATE_BYTES:
            return _too_large(path)
        atomic_write(path, body, fsync=False)
    except UnsafeStoreFileError:
        return _refused(path)
    except (OSError, StoreError) as exc:
        log.warning("could not record the last key in %s: %s", data_dir, exc)
        return f"{path} cannot be written ({_why(exc)}): {_NOT_USED}"
    return None


def _refused(path: Path) -> str:
    return not_regular(path, f"{_NOT_USED} (it is not followed, opened or replaced)")


def _too_large(path: Path) -> str:
    return (f"{path} is over {MAX_STATE_BYTES:,} bytes, more than selfref-tui ever writes "
            f"there: {_NOT_USED} (it is not read or replaced) — move it out of the way")


def _why(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))[:120]
