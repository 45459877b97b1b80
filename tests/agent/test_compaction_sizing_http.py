"""Compactions and window decisions made while the tokenizer is still loading (over HTTP).

Until tiktoken's encoding has loaded, the runtime counts four characters per token; on
digests, code or Chinese that is two to four times too few. The server here counts as
OpenAI does, exactly (the encoding the app loads, the app's own framing), answers with
that figure as its usage, and refuses a request over its window the way OpenAI does.
The tokenizer's loading is held by a :class:`LoadingTokenizer` in the agent's encoder
seam: it loads when the runtime waits for it, or when the test lets it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from selfref_tui.agent import events as ev
from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.context.tokens import TokenCounter
from selfref_tui.demo.script import Overflow, Reply, Step, ToolCall

ASKS = "call the `compact` tool now"
SUMMARY = {
    "goal": "Audit the release logs", "instruction": "Be brief", "discoveries": ["d1"],
    "completed": ["c1"], "current_status": "summarised", "likely_next_work": "continue",
    "relevant_files_directories": [],
}
#: log lines of digests: about 0.9 tokens per character, where the estimate says 0.25
DIGESTS = "a3f9c2e1b7d40f6e9a8c 5be01d7c "
#: 1.6 tokens per character: past what a guess of four characters a token can fall short
EMOJI = "😀🎉🚀🌍🔥"
#: three tokens per character, three bytes each
RUNES = "ᚠᚢᚦᚨᚱᚲ"


class LoadingTokenizer(asyncio.Future):
    """The encoder's loading, held until the runtime waits for it or :meth:`load` is called.

    Set as the agent's ``_encoder_task``; waiting on it (``await``, ``asyncio.wait``)
    adds a done callback, and that is the moment it loads.
    """

    def __init__(self, agent: Any, encode: Callable[[str], list[int]]) -> None:
        super().__init__()
        self.agent = agent
        self.encode = encode
        self.waited = False

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        super().add_done_callback(fn, context=context)
        self.waited = True
        self.load()

    def load(self) -> None:
        if not self.done():
            self.agent.tokens.set_encoder(self.encode)
            self.set_result(None)


class ExactServer:
    """A script that counts each request as OpenAI would and refuses one over ``window``."""

    def __init__(self, encode: Callable[[str], list[int]], window: int,
                 steps: list[Step], *, usage: bool = True) -> None:
        self.counter = TokenCounter(encode)
        #: False: the answers carry no prompt_tokens (nothing calibrates the counts)
        self.usage = usage
        self.window = window
        self.steps = list(steps)
        #: the exact size of every request, and how many were refused for length
        self.sizes: list[int] = []
        self.refused = 0
        self.on_request: Callable[[int], None] | None = None

    def __call__(self, body: dict, index: int) -> Step:
        tokens = self.counter.count_request(body["messages"], body.get("tools") or ())
        self.sizes.append(tokens)
        if self.on_request is not None:
            self.on_request(len(self.sizes) - 1)
        if tokens > self.window:
            self.refused += 1
            return Overflow(window=self.window, tokens=tokens, style="openai")
        step = self.steps.pop(0)
        if isinstance(step, Reply):
            usage = {"prompt_tokens": tokens, "completion_tokens": 1,
                     "total_tokens": tokens + 1} if self.usage else {}
            step = Reply(text=step.text, tool_calls=step.tool_calls, usage=usage)
        return step


def _seed(h: Any, pastes: int, text: str) -> None:
    """``pastes`` of the person's messages of ``text`` and a short answer to each."""
    memory = h.selfref.open("main")
    batch: list = []
    for i in range(pastes):
        batch.append(UserMessageMutation({"role": "user", "content": f"log {i}:\n{text}"}))
        batch.append(AssistantMessageMutation(content=f"Read log {i}."))
    memory.commit(batch)


def _asked(request: dict) -> int:
    return sum(str(m.get("content")).lower().count(ASKS) for m in request["messages"])


def _encoder() -> Callable[[str], list[int]]:
    from selfref_tui.selfref.encodings import load_encoder

    return load_encoder("selfref-demo")


def _compacting(encode: Callable[[str], list[int]], window: int, *more: Step,
                usage: bool = True) -> ExactServer:
    """A server of ``window`` whose model compacts, says so, then answers ``more``."""
    return ExactServer(encode, window, [
        Reply(text="Compacting.", tool_calls=[ToolCall("compact", SUMMARY, id="k1")]),
        Reply(text="Compacted."), *more], usage=usage)


def _loading(h: Any, server: ExactServer, encode: Callable[[str], list[int]]
             ) -> LoadingTokenizer:
    """The agent's encoder, loaded when the runtime waits for it or, at the latest, as the
    server takes the second request (the model answering after the first)."""
    tokenizer = LoadingTokenizer(h.agent, encode)
    h.agent._encoder_task = tokenizer
    server.on_request = lambda index: tokenizer.load() if index >= 1 else None
    return tokenizer


@pytest.mark.parametrize(("usage", "window", "ratio", "pastes", "text"), [
    (True, 16_000, 0.6, 44, DIGESTS * 10), (False, 16_000, 0.6, 44, DIGESTS * 10),
    (True, 64_000, 0.8, 100, EMOJI * 68)], ids=["usage", "no-usage", "emoji"])
async def test_a_compaction_sized_before_the_tokenizer_loaded_is_enough(
        harness, usage, window, ratio, pastes, text):
    """``selfref-tui compact`` on a key of digests: the summary's kept words are sized
    exactly, so the context is under the compaction point after it and the next
    message is not asked to compact again (nor told the context is still full).

    Sized with estimates, the kept words took three times their share: with the
    server's usage to calibrate, the person was told the context was still full
    after compaction; without it, the next message asked for another compaction.
    Emoji: the estimate is near their real count, and the compaction itself waits."""
    encode = _encoder()
    server = _compacting(encode, window, Reply(text="Next answer."), usage=usage)
    async with harness(server, context_window=window) as h:
        # unless the runtime waits, it loads while the model answers after the compaction
        tokenizer = _loading(h, server, encode)
        h.agent.compaction.ratio = ratio
        _seed(h, pastes, text)
        h.agent.request_compaction("main")
        assert await h.agent.run_turn("main", None) == "done"
        assert await h.agent.run_turn("main", "what next?") == "done"
        point = h.agent.compaction.threshold(window)
        assert server.sizes[0] > point  # the key was past the point before the compaction
        assert not _asked(h.server.requests[-1])
        assert not [n for n in h.of(ev.Notice) if "still" in n.message]
        assert server.sizes[1] < point and server.sizes[2] < point, (server.sizes, point)
        assert len(h.of(ev.CompactionApplied)) == 1 and not h.of(ev.CompactionFailed)
        assert server.refused == 0 and tokenizer.waited


async def test_a_key_over_the_window_by_the_real_count_is_compacted_before_it_is_sent(
        harness):
    """The estimate says a key of digests fills half the window; counted exactly it is
    over it. No request over the window is sent: the first is fitted (the oldest
    messages left out of it) and asks for the compaction.

    Counted with the estimate, it went whole (21,366 tokens), the server refused it
    for length, and the person read "8,420 of 16,000 tokens no longer fits": the
    retry was sized from the estimate the server had just refused."""
    encode = _encoder()
    window = 16_000
    server = _compacting(encode, window)
    async with harness(server, context_window=window) as h:
        _loading(h, server, encode)
        _seed(h, 70, DIGESTS * 10)
        assert await h.agent.run_turn("main", "what did the logs say?") == "done"
        assert server.refused == 0, server.sizes
        assert all(size <= window for size in server.sizes)
        first = h.server.requests[0]
        assert _asked(first) and "no longer fits your context window" in str(first["messages"])
        assert len(h.of(ev.CompactionApplied)) == 1
        assert server.sizes[-1] < h.agent.compaction.threshold(window), server.sizes


async def test_a_refusal_for_length_names_the_real_count_and_the_retry_fills_the_window(
        harness):
    """The server's window is smaller than the one configured: the first request, sent on
    its estimate, is refused. The person reads what it really held, and the retry is
    fitted to the window the server named, not to the estimate it refused (a quarter of
    it here)."""
    encode = _encoder()
    window, served = 64_000, 16_000
    server = _compacting(encode, served)
    async with harness(server, context_window=window) as h:
        _loading(h, server, encode)
        h.agent.compaction.ratio = 0.95  # the point at 60,800: the estimate under a quarter
        _seed(h, 50, DIGESTS * 20)
        assert await h.agent.run_turn("main", "what do these say?") == "done"
        assert server.refused == 1 and server.sizes[0] > served
        (refusal,) = [n for n in h.of(ev.Notice) if "retrying once" in n.message]
        assert f"({server.sizes[0]:,} of {served:,} tokens)" in refusal.message
        assert served // 2 < server.sizes[1] <= served, server.sizes
        assert len(h.of(ev.CompactionApplied)) == 1


@pytest.mark.parametrize(("pastes", "text"), [(44, EMOJI * 200), (30, RUNES * 200)],
                         ids=["emoji", "runes"])
async def test_text_of_more_tokens_than_characters_is_counted_before_it_is_sent(
        harness, pastes, text):
    """Emoji and runic letters are a token or three a character: counted four characters
    a token they looked under a quarter of the window, went whole and were refused for
    length. The estimate counts bytes, so the runtime waits for the exact count, fits
    the first request to the window and asks it to compact."""
    encode = _encoder()
    window = 64_000
    server = _compacting(encode, window)
    async with harness(server, context_window=window) as h:
        tokenizer = _loading(h, server, encode)
        h.agent.compaction.ratio = 0.95
        _seed(h, pastes, text)
        assert await h.agent.run_turn("main", "what do these say?") == "done"
        assert tokenizer.waited and server.refused == 0, server.sizes
        assert all(size <= window for size in server.sizes)
        assert _asked(h.server.requests[0])
        assert len(h.of(ev.CompactionApplied)) == 1
