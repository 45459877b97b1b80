"""A backlog read in one go (many tokens per delta) keeps answers, refs and fences exact."""

from __future__ import annotations

import time

from selfref_tui.agent import events as ev
from selfref_tui.agent.provider.client import Provider
from selfref_tui.agent.turn.loop import Agent
from selfref_tui.config import AgentSettings, ProviderConfig
from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.refs.parser import parse_refs
from selfref_tui.selfref import SelfReference
from selfref_tui.ui.transcript.reducer import TranscriptModel
from tests.agent.helpers import STALL_PATIENCE_S

TEXT = (
    "Intro line.\n\n"
    + "".join(
        f'Step {i}:\n<ref id="r{i}">\n```python\nvalue_{i} = {i} * 2\n```\n</ref>\n\n'
        for i in range(40)
    )
    + '<ref id="a">first</ref><ref id="b">second, right after</ref>\n\n'
    + '<ref id="outer">outer <ref id="inner">inner text</ref> outer again</ref>\n\n'
    + "```bash\necho fenced outside a ref\n```\n\nThe end."
)


def shown(model: TranscriptModel) -> tuple:
    (answer,) = model.of_kind("answer")
    blocks = [(b.kind, b.text, b.fence.code if b.fence else None) for b in answer.blocks]
    refs = [(r.ref_id, r.content, r.depth) for r in answer.refs]
    return answer.text, blocks, refs


async def test_a_backlog_of_one_character_events_keeps_refs_and_fences_exact(tmp_path):
    # One character per event, so every tag and fence is split across events;
    # the server runs in its own thread and the app's loop stalls once, so the
    # rest arrives as a backlog and is read in a few large deltas.
    server = DemoServer([Reply(text=TEXT, chunk_chars=1)])
    url = server.start_in_thread()
    events: list = []

    def sink(event) -> None:
        if isinstance(event, ev.TextDelta) and not any(
            isinstance(e, ev.TextDelta) for e in events
        ):
            time.sleep(0.3)  # a busy UI loop: the server keeps writing meanwhile
        events.append(event)

    provider = Provider(ProviderConfig(base_url=url, model="m", max_retries=0,
                                       timeout_s=STALL_PATIENCE_S))
    selfref = SelfReference(tmp_path / "data")
    agent = Agent(selfref, provider, AgentSettings(), sink, model="m", context_window=128_000)
    try:
        assert await agent.run_turn("main", "go") == "done"
    finally:
        await agent.aclose()
        selfref.close()
        server.stop_thread()

    deltas = [e.text for e in events if isinstance(e, ev.TextDelta)]
    assert "".join(deltas) == TEXT
    assert len(deltas) < len(TEXT) / 4  # read in backlogs, not one event at a time
    expected = [(r.id, r.content) for r in parse_refs(TEXT)]
    assert [(e.ref_id, e.content) for e in events if isinstance(e, ev.RefClosed)] == expected
    stored = SelfReference(tmp_path / "data").open("main", write=False)
    assert stored.history[-1]["content"] == TEXT
    assert {ref_id: occ[-1]["content"] for ref_id, occ in stored.refs.items()} == dict(expected)

    # The transcript shows the same blocks, fences and refs as when fed a character at a time.
    batched, single = TranscriptModel(), TranscriptModel()
    for event in events:
        batched.apply(event)
    single.apply(ev.TurnStarted(key="main", turn_id=1, user_text="go"))
    for char in TEXT:
        single.apply(ev.TextDelta(key="main", text=char))
    single.apply(ev.TurnEnded(key="main", turn_id=1, outcome="done"))
    assert shown(batched) == shown(single)
    assert len(shown(batched)[2]) == len(expected)
