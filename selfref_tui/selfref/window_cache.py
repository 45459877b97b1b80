"""``windows.json``: the windows servers told, kept in the data directory for a short while.

Each ``ask`` is a new process, and asking a server its window costs up to
three requests, so the answers are kept on disk (what they mean, and for how
long they hold, is :mod:`selfref_tui.agent.provider.window`'s business). The file is a
store file like any other, and input like any other:

- it is opened only when it is a regular file (never a link, a FIFO or a
  device: a FIFO by this name froze start-up, a link to ``/dev/zero`` read
  gigabytes) and read up to :data:`MAX_CACHE_BYTES`;
- it is written private (0600) through a temp file and a rename, and never
  over an entry that is not a regular file (the person is told to move it);
- it holds plain JSON objects under string keys; the caller validates what
  they say and drops what it does not believe.

Problems come back as one line for a notice, never as an exception: the
cache is an optimisation, and a broken one only means asking the server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import StoreError, UnsafeStoreFileError
from .fsutil import atomic_write, check_regular, ensure_dir, not_regular, read_regular

CACHE_FILE = "windows.json"
#: far more than MAX_ENTRIES entries ever take (about 150 bytes each)
MAX_CACHE_BYTES = 64 * 1024
#: the most entries kept (the newest); one per server and model asked
MAX_ENTRIES = 64


def load_entries(path: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """The file's entries (key → JSON object) and a problem to tell, if any.

    A missing file is no problem; an unsafe, oversized or garbled one gives no
    entries and one line saying what was found and what to do.
    """
    try:
        data = read_regular(path, limit=MAX_CACHE_BYTES)
    except UnsafeStoreFileError:
        return {}, _refused(path)
    except StoreError as exc:
        return {}, f"the window cache was not used: {exc}"
    except OSError as exc:
        return {}, f"the window cache {path} cannot be read ({exc.strerror or exc})"
    if data is None:
        return {}, None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return {}, None  # a torn or foreign file: rewritten at the next answer
    if not isinstance(value, dict):
        return {}, None
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, dict)}, None


def save_entries(path: Path, entries: dict[str, dict[str, Any]]) -> str | None:
    """Write ``entries`` (the newest :data:`MAX_ENTRIES`, by insertion order); a problem or None."""
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    try:
        ensure_dir(path.parent)
        check_regular(path)  # an entry planted here is refused, not replaced
        atomic_write(path, json.dumps(kept).encode("utf-8"), fsync=False)
    except UnsafeStoreFileError:
        return _refused(path)
    except StoreError as exc:
        return f"the window cache was not saved: {exc}"
    except OSError as exc:
        return f"the window cache {path} cannot be written ({exc.strerror or exc})"
    return None


def _refused(path: Path) -> str:
    return not_regular(path, "the window cache is not used (nor followed or opened)")
