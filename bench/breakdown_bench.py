"""What the token breakdown adds to a compile: prints figures, asserts nothing.

    python bench/breakdown_bench.py [--messages N] [--runs R]

A key of N messages (default 10,000: a summary, experiences, user/assistant
turns, tool calls and results, a picture) is compiled as the loop does it per
call (``Agent._plan``: incremental compile, token count, fit), one new
message per run, with and without ``breakdown=True`` (what ``/context`` and
``context show`` ask for). Goal: the breakdown adds at most 5 ms at 10,000
messages. Real token counts (the shipped tiktoken data) when available.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfref_tui.agent.tools.schemas import tool_schemas
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings
from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ExperienceRememberMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.context.summary import Summary, summary_mutation

FILLER = "Some ordinary chat text about the work at hand, long enough to be realistic. " * 3
PNG = "data:image/png;base64,iVBORw0KGgo="


class _Provider:
    """``_plan`` asks the provider only whether it takes images."""

    images_ok = True


class _Store:
    """``_plan`` asks the store only for a key's own settings (none here)."""

    class _Memory:
        settings = None

    def open(self, key: str) -> _Memory:
        return self._Memory()


def transcript(messages: int) -> list[dict]:
    summary = Summary("Bench the breakdown", "measure it", ["d"], ["c"], "running", "more",
                      ["bench/"])
    patches: list = [ExperienceRememberMutation(f"fact {i}: {FILLER[:60]}") for i in range(12)]
    patches.append(summary_mutation(summary))
    patches.append(UserMessageMutation({"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": PNG}}]}))
    i = 0
    while len(patches) < messages + 12:
        call = {"id": f"c{i}", "type": "function",
                "function": {"name": "read_fd", "arguments": '{"fd": "fd:1"}'}}
        patches += [
            UserMessageMutation({"role": "user", "content": f"question {i}: {FILLER}"}),
            AssistantMessageMutation(None, [call]),
            ToolResultMutation(f"c{i}", f"result {i}: {FILLER}"),
            AssistantMessageMutation(f"answer {i}: {FILLER}"),
        ]
        i += 1
    return apply_mutations([], patches)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    agent = Agent(_Store(), _Provider(), AgentSettings(),  # type: ignore[arg-type]
                  model="gpt-4o", context_window=10_000_000)
    try:
        from selfref_tui.selfref.encodings import load_encoder

        agent.tokens.set_encoder(load_encoder("gpt-4o"))
        counting = "tiktoken o200k_base"
    except Exception as exc:  # no shipped data: estimates, as the app before it loads
        counting = f"estimates ({exc})"
    base = transcript(args.messages)
    tools = tool_schemas()
    plain: list[float] = []
    split: list[float] = []
    plan = agent._plan("bench", base, [], tools)  # warm: the first compile renders it all
    for run in range(args.runs):
        for with_breakdown, into in ((False, plain), (True, split)):
            base = [*base, {"role": "user" if run % 2 else "assistant",
                            "content": f"new message {run} {with_breakdown}: {FILLER}"}]
            started = time.perf_counter()
            plan = agent._plan("bench", base, [], tools, breakdown=with_breakdown)
            into.append(time.perf_counter() - started)
    assert plan.breakdown is not None and sum(plan.breakdown.parts.values()) == plan.tokens
    plain_ms, split_ms = statistics.median(plain) * 1e3, statistics.median(split) * 1e3
    print(f"{len(base):,} messages, {plan.tokens:,} tokens, counted with {counting}; "
          f"median of {args.runs} runs, one new message each")
    print(f"  compile (Agent._plan)              {plain_ms:7.2f} ms")
    print(f"  compile with breakdown             {split_ms:7.2f} ms")
    print(f"  the breakdown adds                 {split_ms - plain_ms:7.2f} ms   (goal <= 5 ms)")
    for line in plan.breakdown.lines():
        print(f"    {line}")


if __name__ == "__main__":
    main()
