"""The transcript's reducer and answer blocks, without a screen."""

from __future__ import annotations

from selfref_tui.agent import events as ev
from selfref_tui.ui.transcript.answer import MAX_PART, AnswerItem
from selfref_tui.ui.transcript.reducer import TranscriptModel

K = "main"

ANSWER = (
    "Here are two versions.\n\n"
    '<ref id="fib_recursive">\n```python\ndef fib(n):\n'
    "    return n if n < 2 else fib(n-1) + fib(n-2)\n```\n</ref>\n\n"
    "and\n"
    '<ref id="fib_iterative">\n```python\ndef fib(n):\n    a, b = 0, 1\n'
    "    for _ in range(n):\n        a, b = b, a + b\n    return a\n```\n</ref>\n"
    "Done."
)


def feed(model: TranscriptModel, text: str, size: int = 3) -> None:
    for i in range(0, len(text), size):
        model.apply(ev.TextDelta(key=K, text=text[i : i + size]))


def shape(answer: AnswerItem) -> list[tuple[str, int, str]]:
    return [(b.kind, b.gap, b.text) for b in answer.blocks]


def test_an_answer_is_cut_into_blocks_whatever_the_chunk_size():
    for size in (1, 3, 7, 1000):
        model = TranscriptModel()
        feed(model, ANSWER, size)
        model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
        (answer,) = model.of_kind("answer")
        assert shape(answer) == [
            ("md", 0, "Here are two versions.\n"),
            ("ref_top", 1, ""),
            ("code", 0, "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n"),
            ("ref_bottom", 0, ""),
            ("md", 1, "and\n"),
            ("ref_top", 1, ""),
            (
                "code",
                0,
                "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
                "        a, b = b, a + b\n    return a\n",
            ),
            ("ref_bottom", 0, ""),
            ("md", 1, "Done.\n"),
        ], size
        assert answer.text == ANSWER
        assert [f.lang for f in answer.fences()] == ["python", "python"]
        assert not any(b.open for b in answer.blocks)


def test_a_ref_has_its_block_as_soon_as_its_tag_is_complete_and_closes_with_content():
    model = TranscriptModel()
    cut = ANSWER.index('<ref id="fib_recursive">') + len('<ref id="fib_recursive">')
    feed(model, ANSWER[:cut])
    (ref,) = model.ref_blocks()
    assert ref.ref_id == "fib_recursive" and not ref.closed and ref.subtitle == "streaming…"
    assert ref.title == "ref:fib_recursive"
    feed(model, ANSWER[cut:])
    first, second = model.ref_blocks()
    assert first.closed and first.content.startswith("```python\ndef fib")
    assert first.subtitle == f"4 ln · {len(first.content)} ch"
    assert second.closed
    (answer,) = model.of_kind("answer")
    assert len(answer._parser.refs) == 2
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
    # Finished: the parser lets its copies go (objects the collector walks); the refs keep theirs.
    assert answer.finished and answer._parser.refs == []
    assert first.content.startswith("```python\ndef fib")
    assert second.content.endswith("return a\n```")


def test_the_streaming_tail_is_the_only_open_block():
    model = TranscriptModel()
    feed(model, "para one\n\npara two is still arr")
    (answer,) = model.of_kind("answer")
    assert [(b.text, b.open) for b in answer.blocks] == [
        ("para one\n", False),
        ("para two is still arr", True),
    ]
    version = answer.blocks[0].version
    feed(model, "iving")
    assert answer.blocks[0].version == version  # a finished block is never touched again
    assert answer.blocks[-1].text == "para two is still arriving"


def test_a_huge_line_is_cut_into_parts_that_join_without_gaps():
    answer = AnswerItem()
    word = "word "
    total = 300_000
    for _ in range(total // 1000):
        answer.feed(word * 200)
    answer.finish()
    assert len(answer.blocks) >= total // MAX_PART
    assert all(len(b.text) <= MAX_PART + 1 for b in answer.blocks)  # + the final newline
    assert all(b.gap == 0 for b in answer.blocks)
    assert "".join(b.text for b in answer.blocks) == word * (total // 5) + "\n"


def test_a_huge_fence_is_cut_into_parts_of_one_code_block():
    code = "".join(f"line_{i} = {i}\n" for i in range(2000))
    answer = AnswerItem()
    answer.feed(f"```py\n{code}```\nafter")
    answer.finish()
    parts = [b for b in answer.blocks if b.kind == "code"]
    assert len(parts) > 5 and len({id(b.fence) for b in parts}) == 1
    assert parts[0].gap == 0 and all(b.gap == 0 for b in parts[1:])
    assert answer.fences()[0].code == code.removesuffix("\n")
    assert answer.blocks[-1].text == "after\n"


def test_nested_refs_frame_their_blocks_and_unclosed_refs_are_unfinished():
    answer = AnswerItem()
    answer.feed('<ref id="outer">\nbefore\n<ref id="inner">\ninside\n</ref>\nafter\n</ref>\n')
    answer.feed('<ref id="open">\nnever closed')
    answer.finish()
    frames = [(b.kind, [r.ref_id for r in b.frames], b.text) for b in answer.blocks]
    assert frames == [
        ("ref_top", [], ""),
        ("md", ["outer"], "before\n"),
        ("ref_top", ["outer"], ""),
        ("md", ["outer", "inner"], "inside\n"),
        ("ref_bottom", ["outer"], ""),
        ("md", ["outer"], "after\n"),
        ("ref_bottom", [], ""),
        ("ref_top", [], ""),
        ("md", ["open"], "never closed\n"),
        ("ref_bottom", [], ""),
    ]
    outer, inner, still_open = answer.refs
    assert outer.content == "before\ninside\nafter" and inner.content == "inside"
    assert still_open.unfinished and not still_open.closed
    assert still_open.subtitle == "unfinished" and still_open.text_so_far == "never closed"


def test_superseded_refs_abort_queue_and_tools():
    model = TranscriptModel()
    feed(model, '<ref id="a">\nold\n</ref>\n')
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
    model.add_user("first")
    model.apply(ev.TurnStarted(key=K, turn_id=1, user_text="first"))
    feed(model, '<ref id="a">\nnew\n</ref>\nworking')
    queued = model.add_user("also this", queued=True)
    assert model.queued_messages() == [queued]
    model.apply(ev.QueuedMessageDelivered(key=K, text="also this"))
    assert not queued.queued and model.items[-1] is queued
    model.apply(ev.ToolCallStarted(key=K, call_id="c1", name="remember"))
    model.apply(ev.ToolCallArgumentsDelta(key=K, call_id="c1", delta='{"text": "tea"}'))
    model.apply(ev.Aborted(key=K, reason="user pressed Esc", stage="tools"))
    old, new = model.ref_blocks()
    assert old.superseded and not new.superseded and "superseded" in old.subtitle
    (card,) = model.of_kind("tool")
    assert card.status == "cancelled" and card.arguments == '{"text": "tea"}'
    assert [m.text for m in model.of_kind("user")] == ["first", "also this"]


def test_finish_reasons_compaction_and_errors():
    model = TranscriptModel()
    feed(model, "a long answ")
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="length"))
    model.apply(ev.CompactionApplied(key=K, summary={"goal": "g"}, messages_before=3))
    model.apply(ev.ErrorEvent(key=K, message="down; start it.", kind="connection"))
    answer, divider, error = model.items
    assert answer.finished and not answer.interrupted and "cut off" in answer.marker
    assert answer.archived and not divider.archived
    assert divider.collapsed and "3 messages" in divider.title and "Goal: g" in divider.copy_text
    model.apply(ev.CompactionApplied(key=K, summary={"goal": "g"}, messages_before=1))
    assert model.items[-1].title.startswith("Compacted 1 message · ")  # not "1 messages"
    assert error.error_kind == "connection"


def test_a_failed_stream_ended_without_its_error_is_not_marked_by_a_later_turns_error():
    """The answer waiting for its ErrorEvent stops waiting when its turn ends: a later
    turn's error (here, refused before any text) marks no old answer."""
    model = TranscriptModel()
    model.apply(ev.TurnStarted(key=K, turn_id=1, user_text="first"))
    feed(model, "half an answ")
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="error"))
    model.apply(ev.TurnEnded(key=K, turn_id=1, outcome="error"))  # no ErrorEvent came
    model.apply(ev.TurnStarted(key=K, turn_id=2, user_text="second"))
    model.apply(ev.ErrorEvent(key=K, message="down; start it.", kind="connection"))
    model.apply(ev.TurnEnded(key=K, turn_id=2, outcome="error"))
    (old,) = model.of_kind("answer")
    assert old.text == "half an answ"
    assert not old.interrupted and "connection lost" not in old.marker
    assert model.of_kind("error")[-1].error_kind == "connection"
    # the usual order still marks the failing answer with its own error
    feed(model, "another answ")
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="error"))
    model.apply(ev.ErrorEvent(key=K, message="down; start it.", kind="connection"))
    model.apply(ev.TurnEnded(key=K, turn_id=3, outcome="error"))
    assert model.of_kind("answer")[-1].marker == "■ interrupted — connection lost"


def test_stored_history_builds_the_same_items_and_older_batches_prepend():
    history = [
        {"role": "system", "content": ""},
        {"role": "user", "content": "old question", "archived": True},
        {"role": "assistant", "content": 'old <ref id="x">\nv1\n</ref>', "archived": True},
        {"role": "compaction", "summary": {"goal": "g"}},
        {"role": "user", "content": "summary", "compaction": {"goal": "g"}},
        {"role": "user", "content": "new question"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "t1", "function": {"name": "remember", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "exp_001"},
        {"role": "assistant", "content": 'new <ref id="x">\nv2\n</ref>', "truncated": True},
    ]
    model = TranscriptModel()
    model.load_history(history)
    kinds = [item.kind for item in model.items]
    assert kinds == ["user", "answer", "divider", "user", "answer", "tool", "answer"]
    old, new = model.ref_blocks()
    assert old.superseded and new.content == "v2" and new.subtitle.endswith("ch")
    assert model.items[0].archived and model.of_kind("tool")[0].result == "exp_001"
    assert model.items[-1].interrupted

    long = [{"role": "system", "content": ""}]
    for i in range(130):
        long += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    model = TranscriptModel()
    model.load_history(long, tail=50)
    assert len(model.items) == 50 and len(model.older) == 210
    assert model.items[0].text == "q105"
    assert model.load_older(100) == 100
    assert model.items[0].text == "q55" and len(model.older) == 110


def test_highlight_targets_are_items_refs_and_fences_in_reading_order():
    model = TranscriptModel()
    model.add_user("fib please")
    feed(model, ANSWER + "\n\n```sh\nmake test\n```\n")
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
    targets = model.targets()
    names = [type(t).__name__ for t in targets]
    # A fence inside a ref is copied with its ref; one outside is a target of its own.
    assert names == ["UserItem", "AnswerItem", "RefInfo", "RefInfo", "Fence"]
    assert targets[2].copy_text.startswith("```python")
    assert targets[4].copy_text == "make test"
    assert targets[0].copy_text == "fib please"


def test_reasoning_words_are_counted_as_they_arrive():
    answer = AnswerItem()
    for chunk in ("thin", "king ab", "out it ", "", "now"):
        answer.feed_reasoning(chunk)
    assert answer.reasoning == "thinking about it now"
    assert answer.reasoning_words == 4
    assert answer.reasoning_title == "Reasoning · 4 words"


def test_the_divider_says_which_of_your_messages_the_summary_kept_word_for_word():
    from selfref_tui.context.summary_text import summary_text

    text = summary_text({"goal": "Ship it", "verbatim": {
        "person": [9, 5, 3], "left_out": [1, 2], "exchange": [10, 11], "pinned": [4]}})
    assert text.splitlines() == [
        "Goal: Ship it",
        "Kept word for word: messages 3–5, 9–11",
        "Left out (the model can read them back): messages 1–2",
    ]
    assert summary_text({"goal": "g"}) == "Goal: g"


def test_a_stop_marks_only_the_stopped_turns_answer():
    """Esc before the first word marks nothing (it marked the previous turn's answer
    "interrupted"); an answer drawn from the store is never the stopped turn's."""
    model = TranscriptModel()
    model.add_user("q1")
    model.apply(ev.TurnStarted(key=K, turn_id=1, user_text="q1"))
    feed(model, "answer one")
    model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
    model.apply(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
    model.add_user("q2")
    model.apply(ev.TurnStarted(key=K, turn_id=2, user_text="q2"))
    model.apply(ev.Aborted(key=K, reason="user pressed Esc", stage="stream"))
    first = model.last_answer()
    assert first is not None and first.text == "answer one" and not first.marker

    model.apply(ev.TurnStarted(key=K, turn_id=3, user_text=""))
    feed(model, "half an ans")
    model.apply(ev.Aborted(key=K, reason="user pressed Esc", stage="stream"))
    stopped = model.last_answer()
    assert stopped is not first and stopped.marker == "■ interrupted — user pressed Esc"

    model.reset()
    model.load_history([{"role": "user", "content": "q"},
                        {"role": "assistant", "content": "stored answer"}])
    model.apply(ev.Aborted(key=K, reason="the person rewound the conversation",
                           stage="stream"))
    assert not model.last_answer().marker


def test_a_ref_written_again_unchanged_leaves_its_first_block_current():
    """The store adds no version for a ref written again with its current content (the
    block that defined it stays the definition); the transcript shows none of the
    copies as replaced, live or reloaded. A change later replaces every one of them."""
    answers = ['<ref id="a">\nsame\n</ref>\n', 'again <ref id="a">\nsame\n</ref>\n',
               '<ref id="a">\nchanged\n</ref>\n']

    def live(count: int) -> TranscriptModel:
        model = TranscriptModel()
        for text in answers[:count]:
            model.add_user("go")
            feed(model, text)
            model.apply(ev.LLMCallEnded(key=K, step=1, duration_s=0.1, finish_reason="stop"))
            model.apply(ev.TurnEnded(key=K, turn_id=1, outcome="done"))
        return model

    def reloaded(count: int) -> TranscriptModel:
        model = TranscriptModel()
        history: list[dict] = []
        for text in answers[:count]:
            history += [{"role": "user", "content": "go"}, {"role": "assistant", "content": text}]
        model.load_history(history)
        return model

    for build in (live, reloaded):
        first, again = build(2).ref_blocks()
        assert not first.superseded and not again.superseded, build.__name__
        assert "superseded" not in first.subtitle
        *copies, changed = build(3).ref_blocks()
        assert [ref.superseded for ref in copies] == [True, True], build.__name__
        assert not changed.superseded and changed.content == "changed"


def test_a_failed_tool_call_reads_back_as_failed():
    """A failed call's result reads "Error: …" (as the model read it); a message without
    the runtime's flag (stored before it existed) is read by that prefix: read back (a
    restart, a branch, a rewind) the card said "✓ done" where it had said "✖ error"."""
    history = [
        {"role": "user", "content": "remember tea"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "remember", "arguments": '{"text": "tea"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "list_refs", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: the person declined it",
         "duration_s": 1.5},
        {"role": "tool", "tool_call_id": "c2", "content": "no refs"},
    ]
    model = TranscriptModel()
    model.load_history(history)
    failed, fine = model.of_kind("tool")
    assert (failed.status, failed.result) == ("error", "the person declined it")
    assert (fine.status, fine.result) == ("done", "no refs")


def test_the_runtimes_flag_decides_a_reloaded_cards_status_not_the_text():
    """A tool whose output starts with "Error: " (a grep of a log) showed "✓ done" live and
    "✖ error" once read back; a failure the runtime flagged stays one whatever it says."""
    history = [
        {"role": "user", "content": "grep the log"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            for i in (1, 2)]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: 3 lines matched",
         "error": False, "duration_s": 0.1},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: no such file",
         "error": True, "duration_s": 0.1},
    ]
    model = TranscriptModel()
    model.load_history(history)
    found, failed = model.of_kind("tool")
    assert (found.status, found.result) == ("done", "Error: 3 lines matched")
    assert (failed.status, failed.result) == ("error", "no such file")


def test_unqueue_takes_the_last_queued_messages_and_their_images_only():
    model = TranscriptModel()
    model.add_user("running")
    model.add_user("taken in already", queued=True)
    model.add_user("with a picture", queued=True, images=[("data:image/png;base64,AA", "a.png")])
    model.add_user("last", queued=True)
    before = model.structure
    gone = model.unqueue(2)
    assert [m.text for m in gone] == ["with a picture", "last"]
    assert [(i.kind, getattr(i, "text", "")) for i in model.items] == [
        ("user", "running"), ("user", "taken in already")]
    assert model.structure > before
    assert model.unqueue(0) == []
