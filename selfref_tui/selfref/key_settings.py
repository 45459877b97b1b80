"""What a conversation remembers of how it is run: model, profile, instructions.

``<key dir>/settings.json``. These are invocation configuration — they shape
how the next request is made (which endpoint and model; text added to the
system prompt at compile) — not part of the conversation, so they are not
patches in the log: changing them rewrites nothing and replays nothing.

The file is the person's text (instructions), so it gets the store's rules:
written whole and durably (temp file, fsync, rename) and private (0600),
only by the process that holds the key's writer lock, read without following
a link or blocking on a FIFO. A file that is missing, garbled or of the wrong
shape reads as "nothing chosen" (the window's defaults), never as an error
that would keep the conversation from opening.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .errors import StoreError
from .fsutil import atomic_write, read_regular

SETTINGS_NAME = "settings.json"
#: longer instructions are refused: they ride in every request's system prompt
MAX_INSTRUCTIONS = 20_000


@dataclass(frozen=True)
class KeySettings:
    """A conversation's own choices; empty strings mean "the window's default"."""

    #: the model last chosen with /model (or with the profile it came with)
    model: str = ""
    #: the [providers.NAME] profile last chosen with /profile
    profile: str = ""
    #: added to the system prompt at compile (``/instructions``, ``keys instructions``)
    instructions: str = ""

    @property
    def empty(self) -> bool:
        return self == KeySettings()


def read_settings(key_dir: Path) -> KeySettings:
    """The key's settings; defaults when there are none or they cannot be read."""
    try:
        data = read_regular(key_dir / SETTINGS_NAME)
        raw = json.loads(data) if data is not None else None
    except (OSError, ValueError, RecursionError, StoreError):
        return KeySettings()
    if not isinstance(raw, dict):
        return KeySettings()
    values = {f.name: raw.get(f.name) for f in fields(KeySettings)}
    return KeySettings(**{k: v for k, v in values.items() if isinstance(v, str)})


def check_instructions(text: str) -> str:
    """``text`` trimmed; ValueError (one line) when it is too long to send every time."""
    text = text.strip()
    if len(text) > MAX_INSTRUCTIONS:
        raise ValueError(f"The instructions are {len(text):,} characters long; keep them under "
                         f"{MAX_INSTRUCTIONS:,} (they go with every request).")
    return text


def write_settings(key_dir: Path, settings: KeySettings) -> None:
    """Replace the key's settings (the caller holds the key's writer lock)."""
    body = json.dumps(asdict(settings), ensure_ascii=True, indent=1).encode("ascii")
    atomic_write(key_dir / SETTINGS_NAME, body, sync_dir=True)
