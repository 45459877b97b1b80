"""The per-turn adapter between the runtime loop and one memory key.

Tools (``remember``, ``forget``, ``compact``) and the person (``/forget``)
never touch the store directly: they queue patches here, and the loop hands
them over at the next compile boundary (:meth:`SelfRefSession.collect_context_mutations`)
and persists them (:meth:`SelfRefSession.commit`). The session simulates the
queue the way :class:`~selfref_tui.context.apply.TranscriptBuilder` will fold
it — forgets first, then remembers, then the compaction — so the experience
id a tool returns is the id the fold assigns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from ..context.apply import fold_experiences
from ..context.experiences import experiences_of, with_edited, with_forgotten, with_remembered
from ..context.mutations import (
    ContextMutation,
    ContextSummaryMutation,
    ExperienceEditMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
)

_WATCHED = (ExperienceRememberMutation, ExperienceForgetMutation, ExperienceEditMutation,
            ContextSummaryMutation)


@dataclass
class CommitReport:
    """What a commit changed, for the runtime to turn into events.

    The session lives below the agent layer, so it reports instead of emitting.
    """

    remembered: list[tuple[str, str]] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    #: experiences whose text the person changed: (id, new text)
    edited: list[tuple[str, str]] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    messages_before: int = 0


class SelfRefSession:
    """Queues SelfRef patches for one turn of one memory key and persists them."""

    def __init__(
        self,
        memory: Any,
        *,
        token_usage: Callable[[], dict[str, int]] | None = None,
        count_text: Callable[[str], int] | None = None,
    ) -> None:
        self.memory = memory
        self.key: str = memory.key
        self._token_usage = token_usage
        #: counts a text's tokens, for the budget of what a compaction keeps verbatim
        self._count_text = count_text
        self._experience_queue: list[ContextMutation] = []
        self._compaction: ContextSummaryMutation | None = None

    # ------------------------------------------------------------ primitives

    def remember(self, text: str, *, source: str = "person", message: int | None = None) -> str:
        """Queue ``text`` as an experience; the id it will have ("" for empty text).

        ``source`` says who wanted it kept ("agent", "person"); ``message`` is
        the number of the message it came from — by default the latest stored
        one for the agent (the answer that called ``remember``), none for the
        person (a fact typed in the sidebar or ``/remember`` is no message).
        """
        if not text.strip():
            return ""
        _, exp_id = with_remembered(self._simulated_system(), text)
        if message is None:
            message = self.latest_message() if source == "agent" else 0
        self._experience_queue.append(ExperienceRememberMutation(
            text=text.strip(), source=source, from_message=message, created=now_iso()))
        return exp_id

    def edit(self, experience_id: str, text: str) -> bool:
        """Queue a new text for ``experience_id`` (the person's correction); False when
        no such experience is stored or the text is empty."""
        _, existed = with_edited(self._simulated_system(), experience_id, text)
        if existed:
            self._experience_queue.append(ExperienceEditMutation(
                experience_id=experience_id, text=text.strip(), edited=now_iso()))
        return existed

    def experience(self, experience_id: str) -> dict[str, Any] | None:
        """The experience ``experience_id`` as the next step will have it, or None."""
        return next((e for e in experiences_of(self._simulated_system())
                     if e.get("id") == experience_id), None)

    def latest_message(self) -> int:
        """The number of the latest stored message (0 for none): what a fact came from."""
        return int(getattr(self.memory, "last_number", 0) or 0)

    def forget(self, experience_id: str) -> bool:
        """Queue removal of ``experience_id``; False when no such experience is stored."""
        # The fold applies every queued forget before any queued remember, so
        # only the committed state minus earlier forgets decides existence.
        system = self._base_system()
        for m in self._experience_queue:
            if isinstance(m, ExperienceForgetMutation):
                system, _ = with_forgotten(system, m.experience_id)
        _, existed = with_forgotten(system, experience_id)
        if existed:
            self._experience_queue.append(ExperienceForgetMutation(experience_id=experience_id))
        return existed

    def compact(self, **fields: Any) -> ContextSummaryMutation:
        """Queue a compaction (a later call replaces an earlier queued one)."""
        from ..context.summary import Summary, summary_mutation

        summary = Summary(
            goal=str(fields.get("goal", "")),
            instruction=str(fields.get("instruction", "")),
            discoveries=_str_list(fields.get("discoveries")),
            completed=_str_list(fields.get("completed")),
            current_status=str(fields.get("current_status", "")),
            likely_next_work=str(fields.get("likely_next_work", "")),
            relevant_files_directories=_str_list(fields.get("relevant_files_directories")),
            errors_and_fixes=_str_list(fields.get("errors_and_fixes")),
            constraints_and_preferences=_str_list(fields.get("constraints_and_preferences")),
            pending_tasks=_str_list(fields.get("pending_tasks")),
            remember=_str_list(fields.get("remember")),
        )
        mutation = summary_mutation(summary, self._kept_words(summary))
        if mutation.remember:  # facts the summary keeps: provenance "compaction"
            meta = {"source": "compaction", "created": now_iso()}
            message = self.latest_message()
            if message:
                meta["message"] = message
            mutation = replace(mutation, remember=[{**item, **meta} for item in mutation.remember])
        self._compaction = mutation
        return self._compaction

    def _kept_words(self, summary: Any) -> Any:
        """What the summary carries verbatim, chosen from the stored messages (never by the
        model): the person's messages since the previous compaction, the last exchange,
        pinned messages; None for a store without numbered history.

        The whole summary takes at most half of what the request has free below the
        compaction point besides the system message and the tool schemas, so the kept
        words get what the model's sections leave of that half: kept words that filled
        the request to that point would have the next message ask for the next
        compaction at once (or, past the window, cut the summary itself out of the
        request).
        """
        from ..context.history import is_person_message
        from ..context.kept_words import FRAME_TOKENS, keep_words
        from ..context.summary import render_summary
        from ..context.tokens import estimate_tokens

        entries_of = getattr(self.memory, "entries", None)
        if entries_of is None:
            return None
        entries = entries_of()
        usage = self._token_usage() if self._token_usage else {}
        # the turn's budget when a server refused a request for length (smaller than the
        # window the runtime believed): the summary must fit what the server takes
        window = int(usage.get("budget") or usage.get("window") or 0) or 128_000
        # the working stretch: what this compaction takes out of the model's view
        working = [e for e in entries if not e.compacted and not e.rewound]
        # the request being worked on, wherever it is (the stretch may hold none of the
        # person's messages: a tool loop compacted twice)
        request = next((e for e in reversed(entries)
                        if not e.rewound and is_person_message(e.message)), None)
        count = self._count_text or estimate_tokens
        room = None
        if usage.get("fixed"):
            limit = min(window, int(usage.get("compacts_at") or window))
            # half of what is free below the point: the other half is the conversation's,
            # or the next message would ask for the next compaction at once
            room = ((limit - int(usage["fixed"])) // 2 - count(render_summary(summary))
                    - FRAME_TOKENS)
        return keep_words(working, window=window, count=count, room=room, request=request,
                          # a pinned message a rewind took away is out of the model's view
                          pinned=[e for e in entries if e.pinned and not e.rewound],
                          last=getattr(self.memory, "last_number", 0))

    def inspect(self) -> dict[str, Any]:
        """What the model would learn about its own context right now."""
        system = self._simulated_system()
        return {
            "active_key": self.key,
            "experiences": experiences_of(system),
            "summary": self.memory.summary,
            "message_count": len(self.memory.messages),
            "token_usage": self._token_usage() if self._token_usage else {},
            "has_pending_compaction": self._compaction is not None,
        }

    @property
    def has_pending(self) -> bool:
        return bool(self._experience_queue) or self._compaction is not None

    @property
    def has_pending_compaction(self) -> bool:
        return self._compaction is not None

    # ------------------------------------------------------------- lifecycle

    def peek_context_mutations(self) -> list[ContextMutation]:
        """The queued patches without taking them (for previews)."""
        queued: list[ContextMutation] = list(self._experience_queue)
        if self._compaction is not None:
            queued.append(self._compaction)
        return queued

    def collect_context_mutations(self) -> list[ContextMutation]:
        """Hand the queued patches to the compile boundary, in fold order."""
        queued = self.peek_context_mutations()
        self._experience_queue = []
        self._compaction = None
        return queued

    def commit(
        self, mutations: Sequence[ContextMutation] = (), records: Sequence[dict] = ()
    ) -> CommitReport:
        """Persist ``mutations`` and ``records`` as one append; report what changed."""
        report = CommitReport(messages_before=len(self.memory.messages))
        if not mutations and not records:
            return report
        watch = any(isinstance(m, _WATCHED) for m in mutations)
        before = {e["id"]: e["text"] for e in self.memory.experiences} if watch else {}
        self.memory.commit(list(mutations), records=list(records))
        if not watch:
            return report
        after = {e["id"]: e["text"] for e in self.memory.experiences}
        report.forgotten = [exp_id for exp_id in before if exp_id not in after]
        report.remembered = [(i, t) for i, t in after.items() if i not in before]
        report.edited = [(i, t) for i, t in after.items() if i in before and before[i] != t]
        report.compactions = [
            dict(m.summary_message.get("compaction") or {})
            for m in mutations
            if isinstance(m, ContextSummaryMutation)
        ]
        if report.compactions:
            # What the person reads on the divider, live and after a reload alike.
            report.messages_before = getattr(self.memory, "last_compacted", report.messages_before)
        return report

    def finalize(self) -> CommitReport:
        """Persist whatever is still queued when the turn ends (abort included)."""
        return self.commit(self.collect_context_mutations())

    # -------------------------------------------------------------- helpers

    def _base_system(self) -> dict[str, Any]:
        messages = self.memory.messages
        if messages and messages[0].get("role") == "system":
            return messages[0]
        return {"role": "system", "content": ""}

    def _simulated_system(self) -> dict[str, Any]:
        return fold_experiences(self._base_system(), self._experience_queue)


def now_iso() -> str:
    """When an experience was made or edited: UTC, to the second (as people read it)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list | tuple):
        return [str(v) for v in value if str(v).strip()]
    return [str(value)]

