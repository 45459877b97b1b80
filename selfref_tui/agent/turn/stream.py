"""Assembling one streamed LLM call: text, reasoning and typed tool-call records.

Servers send a tool call in pieces: its id and name on the first delta (some
never send an id), the JSON arguments in fragments, and several calls
interleaved by ``index``. :class:`StreamAssembler` folds those pieces into
:class:`ToolCallRecord` values and announces each call once, as soon as its
name is known, so a front end can show the call while its arguments stream.
Everything here survives an abort: what arrived is kept, marked, by the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import EventSink, ToolCallArgumentsDelta, ToolCallStarted


@dataclass
class ToolCallRecord:
    """One tool call as it streams in (``index`` is the server's slot number)."""

    index: int
    id: str = ""
    name: str = ""
    argument_parts: list[str] = field(default_factory=list)
    #: ToolCallStarted was emitted (the name is known)
    started: bool = False

    @property
    def arguments(self) -> str:
        return "".join(self.argument_parts)

    def to_message(self) -> dict[str, Any]:
        """The OpenAI ``tool_calls`` entry stored with the assistant message."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass
class StreamAssembler:
    """What one streamed call produced so far (kept as it stands when cut off)."""

    key: str
    step: int
    emit: EventSink
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, ToolCallRecord] = field(default_factory=dict)
    usage: dict[str, int] | None = None
    finish: str | None = None
    #: ref records (``{"t": "ref", ...}``) to persist with the answer
    ref_records: list[dict] = field(default_factory=list)
    refs_seen: int = 0

    @property
    def content(self) -> str:
        return "".join(self.text)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning)

    def tool_calls(self) -> list[dict[str, Any]]:
        """The calls in the server's index order, as stored message entries."""
        return [record.to_message() for _, record in sorted(self.calls.items())]

    def tool_delta(self, index: int, call_id: str | None, name: str | None,
                   arguments: str) -> None:
        """Fold one tool-call delta; emit ``ToolCallStarted`` once, then argument deltas.

        A call whose server sent no id gets ``call_<step>_<index>``, so its
        result can still be paired with it.
        """
        record = self.calls.get(index)
        if record is None:
            record = self.calls[index] = ToolCallRecord(index)
        if call_id and not record.id:
            record.id = call_id
        if name and not record.name:
            record.name = name
        if arguments:
            record.argument_parts.append(arguments)
        if not record.id:
            record.id = f"call_{self.step}_{index}"
        if not record.started and record.name:
            record.started = True
            self.emit(ToolCallStarted(key=self.key, call_id=record.id, name=record.name))
            if record.argument_parts:
                # Arguments that arrived before the name are announced in one piece.
                self.emit(ToolCallArgumentsDelta(key=self.key, call_id=record.id,
                                                 delta=record.arguments))
        elif record.started and arguments:
            self.emit(ToolCallArgumentsDelta(key=self.key, call_id=record.id, delta=arguments))
