"""The compile boundary: stored transcript + pending patches -> provider messages.

Everything the model sees is ``render(config, apply_mutations(base, pending))``.
The stored transcript carries our own metadata (experiences, truncation flags,
multimodal marks, the structured compaction summary, …); providers reject
unknown keys, so rendering rebuilds every message from a whitelist instead of
deleting the keys we happen to know about today.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .apply import NO_RESULT_TEXT, apply_mutations
from .experiences import experiences_of, render_system_prompt_with_experiences
from .images import text_of, wire_parts
from .mutations import ContextMutation
from .summary import COMPACTION_KEY

PROVIDER_ROLES = frozenset({"system", "user", "assistant", "tool"})

REF_INSTRUCTIONS = """\
## Reference ids
When part of your answer is worth reusing — code, a config file, a command \
sequence, a plan — wrap it in <ref id="ID">…</ref>. The person sees the text as \
usual; it is also stored as ref:ID, so you or the person can read it again or \
write it to a file later without you repeating it.
- Pick a short, descriptive snake_case id that says what the content is, e.g. \
fib_iterative or auth_migration_plan. Allowed: letters, digits, _ . - ; at most \
64 characters. Anything else is not a ref.
- Writing a ref with an id you used before supersedes the earlier one: the new \
content becomes current. Use a new id for new content.
- The content is kept verbatim. A ref may wrap exactly one fenced code block; \
exporting it then writes the code without the fence.
- Tags inside fenced code blocks are literal text, not refs.
Tools that work with refs: list_refs() lists your refs and fds; get_ref(ref_id) \
returns one ref's content; read_fd(fd="ref:ID", ...) pages through it; \
fd_to_file(fd="ref:ID", file_path=...) writes it to a file. Large tool outputs \
arrive as fd:N and work with read_fd and fd_to_file the same way."""


@dataclass(frozen=True)
class DataFromSelfRef:
    """What a memory key contributes to one compile, read off its transcript.

    ``working_messages`` is the post-compaction transcript without the system
    message (the system prompt is rebuilt from ``base_system_prompt`` and
    ``experiences``); it starts with ``summary_message`` when a compaction
    happened.
    """

    base_system_prompt: str
    experiences: list[dict]
    summary: dict | None
    summary_message: dict | None
    working_messages: list[dict]


@dataclass(frozen=True)
class InvocationConfig:
    """How this call renders: the base prompt, whether refs are explained, and the
    conversation's own instructions (the person's, kept beside the key, never a patch)."""

    base_system_prompt: str
    refs_enabled: bool = True
    instructions: str = ""


INSTRUCTIONS_HEADING = "## Instructions for this conversation"


def snapshot_of(messages: list[dict], base_system_prompt: str) -> DataFromSelfRef:
    has_system = bool(messages) and messages[0].get("role") == "system"
    system = messages[0] if has_system else None
    working = list(messages[1:] if has_system else messages)
    summary_msg = next((m for m in working if COMPACTION_KEY in m), None)
    summary = summary_msg.get(COMPACTION_KEY) if summary_msg is not None else None
    return DataFromSelfRef(
        base_system_prompt=base_system_prompt,
        experiences=experiences_of(system),
        summary=dict(summary) if isinstance(summary, dict) else None,
        summary_message=summary_msg,
        working_messages=working,
    )


def system_prompt_text(config: InvocationConfig, system: dict[str, Any] | None) -> str:
    """The system prompt for this call: base prompt, the conversation's instructions,
    ref instructions, experiences.

    The stored system message normally has empty ``content`` (the base prompt
    belongs to the invocation, so changing it needs no migration); text a
    replace put there (a fork's brief, say) is kept after the base prompt. The
    person's instructions for the conversation are invocation configuration
    too: changing them changes the next request, and nothing in the log.
    """
    parts = [config.base_system_prompt.strip()]
    stored = system.get("content") if system else None
    if isinstance(stored, str) and stored.strip() and stored.strip() != parts[0]:
        parts.append(stored.strip())
    if config.instructions.strip():
        parts.append(f"{INSTRUCTIONS_HEADING}\n{config.instructions.strip()}")
    if config.refs_enabled:
        parts.append(REF_INSTRUCTIONS)
    base = "\n\n".join(p for p in parts if p)
    return render_system_prompt_with_experiences(base, experiences_of(system))


def truncation_marker(abort_reason: str) -> str:
    reason = " ".join(str(abort_reason or "").split())
    return f"\n\n[answer interrupted: {reason}]" if reason else "\n\n[answer interrupted]"


def render_provider_messages(config: InvocationConfig, messages: list[dict]) -> list[dict]:
    """Provider-ready copies of ``messages``; the inputs are not modified.

    The request is shaped for the strictest servers, while the store keeps the
    messages as they were: llama.cpp's request model refuses ``content: null``
    (so an assistant's content is always a string, ``""`` beside tool calls);
    strict chat templates (Gemma, Mistral, Qwen) refuse two user messages in a
    row and a system message after the start (runs of user messages are merged
    into one, a later system message is sent as user text); every server
    refuses a tool result that answers no call of the assistant before it (an
    orphan is sent as user text, so what it says is not lost).
    """
    has_system = bool(messages) and messages[0].get("role") == "system"
    out: list[dict] = [
        {
            "role": "system",
            "content": system_prompt_text(config, messages[0] if has_system else None),
        }
    ]
    unanswered: list[str] = []  # calls of the last assistant block still without a result
    append = out.append
    # Written for speed (a long history renders on every call): the common
    # shapes are built inline, everything else goes through _render_message.
    for msg in messages[1:] if has_system else messages:
        role = msg.get("role")
        content = msg.get("content")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if type(call_id) is not str:
                call_id = "" if call_id is None else str(call_id)
            text = content if type(content) is str else _text(content)
            if unanswered and call_id in unanswered:
                unanswered.remove(call_id)
                append({"role": "tool", "tool_call_id": call_id, "content": text})
            else:
                _append_user(out, {"role": "user", "content": orphan_result_text(text)})
            continue
        if unanswered:
            _answer(out, unanswered)
        if (
            type(content) is str
            and (role == "user" or role == "assistant")
            and "tool_calls" not in msg
            and "truncated" not in msg
            and "name" not in msg
            and "failed" not in msg
        ):
            if role == "user" and out[-1]["role"] == "user":
                _append_user(out, {"role": "user", "content": content})
            else:
                append({"role": role, "content": content})
            continue
        rendered = _render_message(msg)
        if rendered is None:
            continue
        calls = rendered.get("tool_calls")
        if calls:
            unanswered = [c["id"] for c in calls]
        if rendered["role"] == "user":
            _append_user(out, rendered)
        else:
            append(rendered)
    _answer(out, unanswered)
    return out


def orphan_result_text(text: str) -> str:
    """A tool result that answers no call, as the user text it is sent as."""
    return f"[tool result without its call] {text}"


def mergeable(left: dict, right: dict) -> bool:
    """True when two rendered messages are a user run that must go as one message."""
    return left.get("role") == "user" and right.get("role") == "user"


def merge_user(left: dict, right: dict) -> dict:
    """One user message from two in a row (new dicts; the inputs are not modified).

    Texts are joined with a blank line; when either carries content parts
    (images), the result is a parts list whose touching text parts are joined
    the same way, so merging a run pairwise gives the same message in any
    grouping (the incremental compile merges at its seams).
    """
    a, b = left.get("content"), right.get("content")
    if isinstance(a, str) and isinstance(b, str):
        content: Any = f"{a}\n\n{b}" if a and b else a or b
    else:
        parts = _parts(a) + _parts(b)
        content = []
        for part in parts:
            if (content and part.get("type") == "text" and content[-1].get("type") == "text"):
                content[-1] = {"type": "text", "text": _join(content[-1]["text"], part["text"])}
            else:
                content.append(part)
    out: dict[str, Any] = {"role": "user", "content": content}
    if left.get("name") is not None and left.get("name") == right.get("name"):
        out["name"] = left["name"]
    return out


def _join(a: Any, b: Any) -> str:
    a, b = str(a), str(b)
    return f"{a}\n\n{b}" if a and b else a or b


def _parts(content: Any) -> list[dict]:
    if isinstance(content, list):
        return [p for p in content if isinstance(p, dict)]
    text = _text(content)
    return [{"type": "text", "text": text}] if text else []


def _append_user(out: list[dict], message: dict) -> None:
    if out and out[-1].get("role") == "user":
        out[-1] = merge_user(out[-1], message)
    else:
        out.append(message)


def _answer(out: list[dict], unanswered: list[str]) -> None:
    """Close a tool block the transcript left open, in the request only.

    The stored transcript may end in an open block (results still coming, the
    multimodal messages deferred behind it); a provider call at that moment
    means those calls will never get a result, and providers reject a call
    without one.
    """
    for call_id in unanswered:
        out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT_TEXT})
    unanswered.clear()


def compile_messages(
    config: InvocationConfig, base: list[dict], pending: Sequence[ContextMutation]
) -> list[dict]:
    """The exact messages of the next provider call."""
    return render_provider_messages(config, apply_mutations(base, pending))


def _render_message(msg: dict[str, Any]) -> dict[str, Any] | None:
    role = msg.get("role")
    if role not in PROVIDER_ROLES:
        return None  # our own markers (e.g. archived compaction records) never go out
    if role == "user" and msg.get("failed"):
        return None  # a failed turn's message is kept for the person, not sent again
    content = msg.get("content")
    if role == "system":
        # apply() never leaves a second system message; a hand-built list might.
        role, content = "user", f"[system] {_text(content)}"
    out: dict[str, Any] = {"role": role}
    if role == "assistant":
        calls = msg.get("tool_calls")
        if calls:
            out["content"] = _text(content)  # "" beside calls: never null
            out["tool_calls"] = [_render_call(c, i) for i, c in enumerate(calls)]
        else:
            text = _text(content)
            if msg.get("truncated"):
                text += truncation_marker(msg.get("abort_reason", ""))
            out["content"] = text
    elif role == "tool":
        out["tool_call_id"] = str(msg.get("tool_call_id", ""))
        out["content"] = _text(content)
    else:  # user: text or a list of content parts (images ride here)
        out["content"] = wire_parts(content) if isinstance(content, list) else _text(content)
    name = msg.get("name")
    if isinstance(name, str) and name and role != "tool":
        out["name"] = name
    return out


def _render_call(call: Any, position: int) -> dict[str, Any]:
    call = call if isinstance(call, dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": str(call.get("id") or f"call_missing_{position}"),
        "type": "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }


def _text(content: Any) -> str:
    if content is None or isinstance(content, str | list):
        # content parts on a role that only takes text: keep the text parts
        return text_of(content)
    return json.dumps(content, ensure_ascii=False, default=str)
