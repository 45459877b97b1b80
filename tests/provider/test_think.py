"""<think>…</think> at the start of content is reasoning, however the chunks split it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from selfref_tui.agent.provider.think import ThinkSplitter


def split(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    out = [p for piece in pieces for p in splitter.feed(piece)] + splitter.flush()
    reasoning = "".join(t for k, t in out if k == "reasoning")
    text = "".join(t for k, t in out if k == "text")
    return reasoning, text


def test_whole_and_split_tags():
    assert split(["<think>plan it</think>\n\nThe answer."]) == ("plan it", "The answer.")
    assert split(["<thi", "nk>pla", "n it</th", "ink>", "The answer."]) == ("plan it",
                                                                             "The answer.")
    assert split(["\n<think>x</think>y"]) == ("x", "y")
    assert split(["<think>x</think>\n", "\n", "The", " end"]) == ("x", "The end")


def test_no_think_is_plain_text_and_late_tags_stay_text():
    assert split(["Hello ", "world"]) == ("", "Hello world")
    assert split(["<", "b>bold</b>"]) == ("", "<b>bold</b>")
    assert split(["Use <think>tags</think> like this"]) == ("", "Use <think>tags</think> like this")


def test_unclosed_think_and_a_lone_lt_at_the_end():
    assert split(["<think>still thinking when cut off </th"]) == (
        "still thinking when cut off </th", "")
    assert split(["<"]) == ("", "<")


def test_passthrough_after_the_answer_starts():
    splitter = ThinkSplitter()
    splitter.feed("<think>a</think>b")
    assert splitter.passthrough and splitter.feed("c") == [("text", "c")]


@given(st.text(max_size=30), st.text(max_size=30).filter(lambda t: "</think>" not in t),
       st.lists(st.integers(min_value=1, max_value=12), max_size=20))
def test_any_chunking_gives_the_same_split(answer, thought, cuts):
    whole = f"<think>{thought}</think>{answer}"
    pieces, i = [], 0
    for cut in cuts:
        pieces.append(whole[i:i + cut])
        i += cut
    pieces.append(whole[i:])
    assert split(pieces) == split([whole]) == (thought, answer.lstrip())
