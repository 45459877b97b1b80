"""The typed chunks a stream yields, and how a batch of parsed events becomes them.

Pure: no network, no ``openai``. The turn loop reads these types (they are the
provider's vocabulary); ``delta_scan`` learns its templates from :func:`_classify`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str



@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """``reasoning_content`` deltas: shown apart, never sent back to the model."""

    text: str



@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """One tool-call delta: ``id`` and ``name`` on its first delta, ``arguments`` in pieces."""

    index: int
    id: str | None
    name: str | None
    arguments: str



@dataclass(frozen=True, slots=True)
class UsageChunk:
    usage: dict[str, int]



@dataclass(frozen=True, slots=True)
class FinishChunk:
    reason: str | None



Chunk = TextChunk | ReasoningChunk | ToolCallChunk | UsageChunk | FinishChunk



class _MalformedChunk(ValueError):
    """Valid JSON of the wrong shape for a chat completion chunk."""



def _field(obj: dict, name: str, kind: type) -> Any:
    """``obj[name]`` when it has type ``kind``; None when absent or null; else malformed."""
    value = obj.get(name)
    if value is None or type(value) is kind:
        return value
    raise _MalformedChunk(f"{name!r} is {type(value).__name__}, not {kind.__name__}")



def _choice_chunks(choice: Any) -> list[Chunk]:
    """The typed chunks of one streamed choice, read off the parsed JSON."""
    if type(choice) is not dict:
        raise _MalformedChunk("a choice is not an object")
    out: list[Chunk] = []
    delta = _field(choice, "delta", dict)
    if delta:
        # llama.cpp / vLLM / DeepSeek put thinking in reasoning_content (or reasoning).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningChunk(reasoning))
        content = _field(delta, "content", str)
        if content:
            out.append(TextChunk(content))
        for call in _field(delta, "tool_calls", list) or ():
            if type(call) is not dict:
                raise _MalformedChunk("a tool call is not an object")
            index = _field(call, "index", int)
            fn = _field(call, "function", dict) or {}
            out.append(ToolCallChunk(
                index=index if index is not None else 0,
                id=_field(call, "id", str) or None,
                name=_field(fn, "name", str) or None,
                arguments=_field(fn, "arguments", str) or "",
            ))
    finish = _field(choice, "finish_reason", str)
    if finish:
        out.append(FinishChunk(finish))
    return out



def _batch_chunks(batch: list[Any]) -> tuple[list[Chunk], _MalformedChunk | None]:
    """The typed chunks of a batch of events, neighbours of one kind joined.

    A backlog of 400 one-token events becomes one ``TextChunk`` (and a call's
    argument pieces one ``ToolCallChunk``): everything after the provider (the
    loop, the ref parser, the events, the transcript) then pays per batch, not
    per token. What a malformed event is preceded by is returned with its
    error, so the part that arrived is kept.
    """
    out: list[Chunk] = []
    parts: list[str] = []  # the texts of the run out[-1] heads, joined once at its end
    run: Any = None  # what a chunk must be to join the run: a type, or ("call", index)

    def close_run() -> None:
        if len(parts) > 1:
            head = out[-1]
            if type(head) is ToolCallChunk:
                out[-1] = ToolCallChunk(head.index, head.id, head.name, "".join(parts))
            else:
                out[-1] = type(head)("".join(parts))  # type: ignore[call-arg]
        parts.clear()

    try:
        for event in batch:
            if type(event) is not dict:
                if type(event) in _SCANNED:  # a run of events delta_scan read
                    chunks: Any = ((event,),)
                else:
                    raise _MalformedChunk(f"a chunk is {type(event).__name__}, not an object")
            else:
                chunks = map(_choice_chunks, _field(event, "choices", list) or ())
            for produced in chunks:
                for chunk in produced:
                    kind = type(chunk)
                    if kind is ToolCallChunk:
                        joins = (run == ("call", chunk.index)  # type: ignore[union-attr]
                                 and chunk.id is None and chunk.name is None)  # type: ignore[union-attr]
                        key: Any = ("call", chunk.index)  # type: ignore[union-attr]
                        text = chunk.arguments  # type: ignore[union-attr]
                    else:
                        joins = kind is run
                        key = kind if kind is TextChunk or kind is ReasoningChunk else None
                        text = getattr(chunk, "text", "")
                    if joins:
                        parts.append(text)
                        continue
                    close_run()
                    out.append(chunk)
                    run = key
                    if key is not None:
                        parts.append(text)
            usage = event.get("usage") if type(event) is dict else None
            if type(usage) is dict:
                close_run()
                run = None
                out.append(UsageChunk(_usage_dict(usage)))
    except _MalformedChunk as exc:
        close_run()
        return out, exc
    close_run()
    return out, None



#: the chunks ``delta_scan`` makes: text that neighbours join
_SCANNED = (TextChunk, ReasoningChunk, ToolCallChunk)



def _classify(event: Any) -> tuple[Callable[[str], Chunk], str] | None:
    """One event read as one chunk of text that joins its neighbours: its maker and text.

    ``delta_scan`` learns its templates from this (None: not such an event). An
    ``{"error": …}`` event is never one: the stream raises it.
    """
    if type(event) is not dict or event.get("error"):
        return None
    chunks, failure = _batch_chunks([event])
    if failure is not None or len(chunks) != 1:
        return None
    chunk = chunks[0]
    if type(chunk) is ToolCallChunk:
        if chunk.id is not None or chunk.name is not None or not chunk.arguments:
            return None
        return functools.partial(ToolCallChunk, chunk.index, None, None), chunk.arguments
    if (type(chunk) is TextChunk or type(chunk) is ReasoningChunk) and chunk.text:
        return type(chunk), chunk.text
    return None



def _usage_dict(usage: dict) -> dict[str, int]:
    return {k: v for k, v in usage.items() if type(v) is int}



def _split_think(pieces: list[tuple[str, str]]) -> list[Chunk]:
    return [ReasoningChunk(text) if kind == "reasoning" else TextChunk(text)
            for kind, text in pieces]
