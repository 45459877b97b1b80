"""The fold of transcript patches into OpenAI-style message dicts: ``TranscriptBuilder``.

:func:`~selfref_tui.context.apply.apply_mutations` (which runs it) is pure: the
input list and its dicts are never modified; changed messages are replaced by
changed copies. It keeps one
structural promise whatever order the patches come in — the system message
(if any) is first, every assistant tool call gets exactly one tool result
before the next assistant or user message, and no tool result is orphaned —
because a transcript that breaks it is rejected by every provider, and the
patches it would take to break it (an abort, a message typed mid-turn) are
exactly the ones a person produces at awkward moments.

The same :class:`TranscriptBuilder` folds a whole stored log in place when a
memory key is loaded, so loading is linear in the log.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .experiences import provenance, with_all_remembered, with_edited, with_forgotten
from .mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceEditMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    RewindMutation,
    ToolCancelledMutation,
    ToolResultMutation,
    TurnFailedMutation,
    UserMessageMutation,
)
from .tool_errors import message_flag

MULTIMODAL_MARK = "multimodal_for"
NO_RESULT_TEXT = (
    "No result was recorded for this call: the conversation moved on before it finished."
)


UNKNOWN_TOOL = "unknown_tool"
#: how a second system message is kept: as a person's line, marked
SYSTEM_AS_USER = "[system] "


def cancelled_text(tool_name: str, abort_reason: str) -> str:
    reason = abort_reason or "the turn was aborted"
    return (
        f"Tool call '{tool_name}' was cancelled by the person before it finished "
        f"(reason: {reason}). It produced no result; do not assume it ran."
    )


def multimodal_note(tool_name: str, arguments: str) -> str:
    """The assistant's note before a tool's images (their user message follows it)."""
    return f"I called {tool_name}({arguments}); its result is in the next message."


#: the words the fold writes into messages itself, not taken from a patch (around what
#: is: a name, a reason, a person's text). A search that rules a log out because its
#: bytes lack a word must not do so for these (``selfref/conversation_search.py``).
FOLD_TEXTS = (NO_RESULT_TEXT, cancelled_text("", ""), multimodal_note("", ""),
              f"{UNKNOWN_TOOL} {{}}", SYSTEM_AS_USER)


def normalize_tool_call(call: dict[str, Any], position: int) -> dict[str, Any]:
    """An OpenAI tool call dict with an id, a type and string arguments."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments", call.get("arguments", ""))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_missing_{position}"
    return {
        "id": call_id,
        "type": "function",
        "function": {
            "name": str(function.get("name", call.get("name", ""))),
            "arguments": arguments,
        },
    }


def unique_call_ids(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls with ids made unique within the message: a repeat of ``x`` becomes ``x_2``.

    Why: a server that sends two calls with one id in one message would have
    both results answer the first call (and the second look unanswered). The
    runtime stores and runs the calls under these ids, so each result finds
    its own call. Calls are copied only when renamed; the order is kept.
    """
    ids = {c.get("id") for c in calls if isinstance(c, dict)}
    seen: set[Any] = set()
    out = []
    for call in calls:
        cid = call.get("id") if isinstance(call, dict) else None
        if isinstance(cid, str) and cid and cid in seen:
            n = 2
            while f"{cid}_{n}" in ids or f"{cid}_{n}" in seen:
                n += 1
            call = {**call, "id": f"{cid}_{n}"}
            cid = call["id"]
        seen.add(cid)
        out.append(call)
    return out


def _repeats_of(ids: list[Any]) -> dict[str, list[str]]:
    """Which ids of a stored block are renamed repeats (``x_2`` of ``x``).

    Why: a builder that resumes an open block (the store folding patch by
    patch) must pair a second result for ``x`` with ``x_2`` exactly as the
    builder that made the block did; this mirrors :func:`unique_call_ids`.
    """
    seen: set[str] = set()
    repeats: dict[str, list[str]] = {}
    for cid in ids:
        if isinstance(cid, str):
            base, sep, n = cid.rpartition("_")
            # ASCII digits only, as unique_call_ids writes them ("²" is a digit to isdigit)
            if sep and n.isascii() and n.isdigit() and int(n) >= 2 and base in seen:
                repeats.setdefault(base, []).append(cid)
            seen.add(cid)
    return repeats


class TranscriptBuilder:
    """Folds patches into a message list it owns, keeping the transcript valid.

    It remembers the open tool block (the last assistant message with calls that
    still lack results) so each patch is O(1) amortised: results are placed
    right after the block's earlier results, ahead of any multimodal messages
    that were deferred until the block closes.
    """

    def __init__(self, messages: list[dict[str, Any]] | None = None) -> None:
        self.messages: list[dict[str, Any]] = messages if messages is not None else []
        self._pending_experiences: list[ContextMutation] = []
        self._open_idx: int | None = None
        self._unresolved: list[str] = []
        self._answered: set[str] = set()
        #: in the open block: an id the model repeated -> the renamed ids of its repeats
        self._repeats: dict[str, list[str]] = {}
        self._insert_at = 0
        self._find_open_block()

    # ------------------------------------------------------------------ public

    def apply(self, mutation: ContextMutation) -> None:
        if isinstance(mutation, ExperienceRememberMutation | ExperienceForgetMutation
                      | ExperienceEditMutation):
            self._pending_experiences.append(mutation)
            return
        self.flush_experiences()
        if isinstance(mutation, AssistantMessageMutation):
            self._append_assistant(mutation)
        elif isinstance(mutation, ToolResultMutation):
            extra = {} if mutation.duration_s is None else {"duration_s": mutation.duration_s}
            extra |= message_flag(mutation.content, mutation.error)
            self._append_tool_result(mutation.tool_call_id, "", mutation.content, extra)
        elif isinstance(mutation, ToolCancelledMutation):
            self._append_tool_result(
                mutation.tool_call_id,
                mutation.tool_name,
                cancelled_text(mutation.tool_name, mutation.abort_reason),
                {"cancelled": True, "abort_reason": mutation.abort_reason},
            )
        elif isinstance(mutation, MultimodalToolResultMutation):
            self._apply_multimodal(mutation)
        elif isinstance(mutation, UserMessageMutation):
            message = dict(mutation.message)
            message.setdefault("role", "user")
            self.append_message(message)
        elif isinstance(mutation, AssistantTruncatedMutation):
            self._close_block()
            self._push(
                {
                    "role": "assistant",
                    "content": mutation.partial_content,
                    "truncated": True,
                    "abort_reason": mutation.abort_reason,
                }
            )
        elif isinstance(mutation, ContextReplaceMutation):
            self._replace(mutation.messages)
        elif isinstance(mutation, ContextSummaryMutation):
            self._summarise(mutation)
        elif isinstance(mutation, TurnFailedMutation):
            self._mark_failed(mutation.reason)
        elif isinstance(mutation, RewindMutation):
            raise TypeError("a rewind needs the history it goes back in: fold the log from its "
                            "start with context.history.HistoryBuilder")
        else:  # pragma: no cover - the Union is closed
            raise TypeError(f"not a ContextMutation: {mutation!r}")

    def flush_experiences(self) -> None:
        """Commit the batched experience patches: forgets first, then edits, then remembers."""
        if not self._pending_experiences:
            return
        batch, self._pending_experiences = self._pending_experiences, []
        self._set(0, fold_experiences(self._system_for_update(), batch))

    def append_message(self, message: dict[str, Any]) -> None:
        """Append a raw message of any role, repairing structure as needed."""
        role = message.get("role")
        if role == "system":
            if self.messages and self.messages[0].get("role") == "system":
                # Only one system message may lead; a later one is kept as user text.
                self._close_block()
                text = f"{SYSTEM_AS_USER}{message.get('content', '')}"
                self._push({"role": "user", "content": text})
            else:
                self._insert(0, dict(message))
                self._shift(1)
        elif role == "tool":
            self._append_tool_result(
                str(message.get("tool_call_id", "")),
                "",
                message.get("content", ""),
                _extra(message),
            )
        elif role == "assistant" and message.get("tool_calls"):
            self._close_block()
            self._start_block(dict(message))
        else:
            self._close_block()
            self._push(dict(message))

    # -------------------------------------------------------------- primitives
    # Every change to ``messages`` goes through these five, so a subclass can
    # keep a record of each (``context.history.HistoryBuilder`` numbers the
    # messages and can undo the changes: that is how a rewind is folded).

    def _push(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    def _insert(self, index: int, message: dict[str, Any]) -> None:
        self.messages.insert(index, message)

    def _set(self, index: int, message: dict[str, Any]) -> None:
        self.messages[index] = message

    def _delete(self, index: int) -> None:
        del self.messages[index]

    def _reset(self, messages: list[dict[str, Any]]) -> None:
        """The whole list becomes ``messages`` (a compaction or a replace)."""
        self.messages[:] = messages

    # ----------------------------------------------------------------- helpers

    def _system_for_update(self) -> dict[str, Any]:
        if self.messages and self.messages[0].get("role") == "system":
            return self.messages[0]
        self._insert(0, {"role": "system", "content": ""})
        self._shift(1)
        return self.messages[0]

    def _shift(self, by: int) -> None:
        if self._open_idx is not None:
            self._open_idx += by
            self._insert_at += by

    def _find_open_block(self) -> None:
        msgs = self.messages
        i = len(msgs) - 1
        while i >= 0 and (msgs[i].get("role") == "tool" or MULTIMODAL_MARK in msgs[i]):
            i -= 1
        if i < 0 or msgs[i].get("role") != "assistant" or not msgs[i].get("tool_calls"):
            return
        ids = [c.get("id") for c in msgs[i]["tool_calls"]]
        answered = set()
        j = i + 1
        while j < len(msgs) and msgs[j].get("role") == "tool":
            answered.add(msgs[j].get("tool_call_id"))
            j += 1
        unresolved = [cid for cid in ids if cid not in answered]
        if unresolved:
            self._open_idx, self._unresolved, self._answered, self._insert_at = (
                i,
                unresolved,
                answered,
                j,
            )
            self._repeats = _repeats_of(ids)

    def _start_block(self, message: dict[str, Any]) -> None:
        raw_calls = [
            normalize_tool_call(raw if isinstance(raw, dict) else {}, pos)
            for pos, raw in enumerate(message.get("tool_calls") or [])
        ]
        calls = unique_call_ids(raw_calls)
        self._repeats = {}
        for before, after in zip(raw_calls, calls, strict=True):
            if before["id"] != after["id"]:  # stored before ids were made unique
                self._repeats.setdefault(before["id"], []).append(after["id"])
        message["tool_calls"] = calls
        self._push(message)
        self._open_idx = len(self.messages) - 1
        self._unresolved = [c["id"] for c in calls]
        self._answered = set()
        self._insert_at = len(self.messages)

    def _close_block(self) -> None:
        """Give every unanswered call of the open block a 'no result' reply."""
        if self._open_idx is None:
            return
        for call_id in list(self._unresolved):
            self._insert_result(call_id, NO_RESULT_TEXT, {"cancelled": True})
        self._open_idx = None

    def _insert_result(self, call_id: str, content: Any, extra: dict[str, Any]) -> None:
        self._insert(
            self._insert_at, {"role": "tool", "tool_call_id": call_id, "content": content, **extra}
        )
        self._insert_at += 1
        self._unresolved.remove(call_id)
        self._answered.add(call_id)
        if not self._unresolved:
            self._open_idx = None

    def _append_tool_result(
        self, call_id: str, tool_name: str, content: Any, extra: dict[str, Any]
    ) -> None:
        if self._open_idx is not None and call_id in self._answered:
            # a repeated id (a log from before ids were made unique): the next repeat
            repeats = [c for c in self._repeats.get(call_id, ()) if c in self._unresolved]
            if repeats:
                call_id = repeats[0]
        if self._open_idx is not None and call_id in self._unresolved:
            self._insert_result(call_id, content, extra)
            return
        if self._open_idx is not None and call_id in self._answered:
            return  # a second result for the same call: the first one stands
        # No call to answer: add one so the result is not orphaned.
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": tool_name or UNKNOWN_TOOL, "arguments": "{}"},
        }
        if self._open_idx is not None:
            owner = dict(self.messages[self._open_idx])
            owner["tool_calls"] = [*owner["tool_calls"], call]
            self._set(self._open_idx, owner)
            self._unresolved.append(call_id)
        else:
            self._start_block({"role": "assistant", "content": None, "tool_calls": [call]})
        self._insert_result(call_id, content, extra)

    def _append_assistant(self, m: AssistantMessageMutation) -> None:
        self._close_block()
        message: dict[str, Any] = {
            "role": "assistant",
            "content": m.content if m.content is not None else "",
        }
        if m.reasoning_details:
            message["reasoning_details"] = list(m.reasoning_details)
        if m.tool_calls:
            message["content"] = m.content
            message["tool_calls"] = list(m.tool_calls)
            self._start_block(message)
        else:
            self._push(message)

    def _apply_multimodal(self, m: MultimodalToolResultMutation) -> None:
        note = {
            "role": "assistant",
            "content": multimodal_note(m.tool_name, m.arguments),
            MULTIMODAL_MARK: m.tool_call_id,
        }
        users = [
            {**dict(u), "role": "user", MULTIMODAL_MARK: m.tool_call_id} for u in m.user_messages
        ]
        if self._open_idx is not None and m.tool_call_id in self._unresolved:
            owner = dict(self.messages[self._open_idx])
            owner["tool_calls"] = [c for c in owner["tool_calls"] if c["id"] != m.tool_call_id]
            self._unresolved.remove(m.tool_call_id)
            if owner["tool_calls"]:
                self._set(self._open_idx, owner)
            else:
                owner.pop("tool_calls")
                if owner.get("content"):
                    self._set(self._open_idx, owner)
                else:
                    self._delete(self._open_idx)
                    self._insert_at -= 1
            if not self._unresolved:
                self._open_idx = None
            for message in (note, *users):
                self._push(message)
            return
        if self._open_idx is not None and m.tool_call_id in self._answered:
            return
        self._close_block()
        for message in (note, *users):
            self._push(message)

    def _replace(self, messages: list[dict[str, Any]]) -> None:
        self._reset([])
        self._open_idx = None
        for message in messages:
            if isinstance(message, dict):
                self.append_message(message)

    def _summarise(self, m: ContextSummaryMutation) -> None:
        system = (
            self.messages[0] if self.messages and self.messages[0].get("role") == "system" else None
        )
        self._reset([system] if system is not None else [])
        self._open_idx = None
        summary = dict(m.summary_message)
        summary.setdefault("role", "user")
        self.append_message(summary)
        items = [item if isinstance(item, dict) else {"text": str(item)} for item in m.remember]
        if any(str(item.get("text", "")).strip() for item in items):
            self._set(0, with_all_remembered(self._system_for_update(), [
                (str(item.get("text", "")), provenance(
                    source=_str(item.get("source")), message=_int(item.get("message")),
                    created=_str(item.get("created"))))
                for item in items]))

    def _mark_failed(self, reason: str) -> None:
        """Mark (or, for "", unmark) the user messages at the end of the transcript.

        Only the trailing run is touched: the person's message and any runtime
        note or queued message that went out with it and got no answer. A
        compaction summary is never marked (it is the model's context, not a
        message of the failed turn).
        """
        index = len(self.messages) - 1
        while index >= 0:
            message = self.messages[index]
            if message.get("role") != "user" or "compaction" in message:
                break
            if MULTIMODAL_MARK in message:  # a tool's result, not the person's message
                break
            if reason and message.get("failed"):
                # an earlier failed turn's message: it keeps its own reason (read back
                # from the store, both said the newer one)
                break
            # A new dict, not an edit in place: compile caches compare stored copies.
            updated = {k: v for k, v in message.items() if k != "failed"}
            if reason:
                updated["failed"] = reason
            self._set(index, updated)
            index -= 1


def fold_experiences(system: dict[str, Any], batch: Iterable[ContextMutation]) -> dict[str, Any]:
    """``system`` after one batch of experience patches: forgets, then edits, then remembers.

    The order makes a batch mean the same however its patches were queued (a
    forget and a remember of the same text in one step keep the text); the
    session simulates the queue with this same function, so the id a tool
    returns is the id the fold gives.
    """
    batch = list(batch)
    for m in batch:
        if isinstance(m, ExperienceForgetMutation):
            system, _ = with_forgotten(system, m.experience_id)
    for m in batch:
        if isinstance(m, ExperienceEditMutation):
            system, _ = with_edited(system, m.experience_id, m.text, m.edited)
    return with_all_remembered(system, [
        (m.text, provenance(m.source, m.from_message, m.created))
        for m in batch if isinstance(m, ExperienceRememberMutation)])


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _extra(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in ("role", "tool_call_id", "content")}
