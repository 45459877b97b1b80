"""The state of one running turn: what its steps (and its forks) share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...selfref.session import SelfRefSession
from ..abort import AbortSignal
from ..protocols import MemoryLike
from .inbox import Inbox


@dataclass
class TurnState:
    """Per-turn state shared by the steps of one ``run_turn`` (and its forks)."""

    key: str
    memory: MemoryLike
    session: SelfRefSession
    fds: Any
    abort: AbortSignal
    inbox: Inbox
    depth: int
    forks: Any | None = None
    on_step: Callable[[str, int], None] | None = None
    step: int = 0
    #: the last failure the person read, stored with a failed message
    failure: str = ""
    #: overflow handling: the model was asked to compact because the request was too big;
    #: the server refused for length once (the step is retried once); a smaller budget
    #: than the window after such a refusal; the refusal itself
    overflow_asked: bool = False
    overflow_retried: bool = False
    budget: int = 0
    overflow_error: BaseException | None = None
    #: the server refused tools' images: the step was retried once without them
    images_omitted: bool = False
    #: a note in this turn asked the model to compact ("requested", "auto", "overflow")
    #: and no compaction has been queued since ("" when none is awaited)
    compaction_asked: str = ""
    #: the error of the model's last invalid ``compact`` call, until a valid one follows
    compact_error: str = ""
    #: invalid ``compact`` calls in this turn (at COMPACT_TRIES the tool is withdrawn)
    compact_failures: int = 0
    #: tokens the last request spent before its first working message (the system
    #: message and the tool schemas): what a compaction's summary cannot make smaller
    fixed_tokens: int = 0
