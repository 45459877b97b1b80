"""The structural promise of a transcript, as a checker shared by the context tests."""

from __future__ import annotations

from typing import Any

from selfref_tui.context.apply import MULTIMODAL_MARK


def transcript_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every way ``messages`` breaks the transcript invariant (empty when valid).

    - the system message, if any, is first and unique;
    - every assistant tool call has exactly one tool result before the next
      assistant or user message; only the trailing open block (the last
      assistant with calls, followed by nothing but its results and the
      multimodal messages deferred until it closes) may lack results, and it
      never has duplicates;
    - no tool result is orphaned (each follows the assistant whose call it answers).
    """
    problems: list[str] = []
    roles = [m.get("role") for m in messages]
    systems = [i for i, r in enumerate(roles) if r == "system"]
    if systems and systems != [0]:
        problems.append(f"system messages at {systems}, expected only at 0")

    i = 0
    n = len(messages)
    while i < n:
        msg = messages[i]
        role = msg.get("role")
        if role == "tool":
            problems.append(f"orphan tool result at {i} ({msg.get('tool_call_id')!r})")
            i += 1
            continue
        if "tool_calls" in msg and not msg["tool_calls"]:
            problems.append(f"empty tool_calls key on message {i}")
        if role == "assistant" and msg.get("tool_calls"):
            ids = [c.get("id") for c in msg["tool_calls"]]
            if len(set(ids)) != len(ids):
                problems.append(f"duplicate call ids in assistant at {i}: {ids}")
            answered: list[str] = []
            j = i + 1
            while j < n and messages[j].get("role") == "tool":
                call_id = messages[j].get("tool_call_id")
                if call_id not in ids:
                    problems.append(f"tool result at {j} answers {call_id!r}, not a call of {i}")
                elif call_id in answered:
                    problems.append(f"second result for {call_id!r} at {j}")
                answered.append(call_id)
                j += 1
            trailing = all(MULTIMODAL_MARK in m for m in messages[j:])
            missing = [c for c in ids if c not in answered]
            if missing and not trailing:
                problems.append(f"calls {missing} of assistant at {i} have no result")
            i = j
            continue
        i += 1
    return problems


def assert_valid(messages: list[dict[str, Any]]) -> None:
    problems = transcript_problems(messages)
    assert not problems, f"{problems}\n{messages}"
