"""Find over the transcript's items and the older messages, without a screen."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.casefold import fold, spans
from selfref_tui.ui.transcript import find
from selfref_tui.ui.transcript.find import find_hits, line_marks, message_text, pattern
from selfref_tui.ui.transcript.reducer import TranscriptModel


def _history() -> list[dict]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "Needle"}'}}
    return [
        {"role": "user", "content": "needle one"},
        {"role": "assistant", "content": "", "reasoning_content": "a needle in thought",
         "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "needle needle"},
        {"role": "user", "content": "summary", "compaction": {"goal": "needle"}},
        {"role": "compaction", "summary": {"goal": "find the needle"}, "messages_before": 3},
        {"role": "assistant", "content": "Done: NEEDLE."},
    ]


def test_hidden_parts_are_found_and_said_hidden_and_case_does_not_matter():
    model = TranscriptModel()
    model.load_history(_history(), tail=50)
    hits = find_hits(model.items, model.older, pattern("needle"))
    kinds = [(hit.item.kind, hit.hidden) for hit in hits]
    assert kinds == [
        ("user", False),
        ("answer", True),  # reasoning, collapsed
        ("tool", True), ("tool", True), ("tool", True),  # arguments, then the result twice
        ("divider", True),  # the summary (its user message is never shown)
        ("answer", False),
    ]
    assert [hit.occurrence for hit in hits if hit.item.kind == "tool"] == [0, 1, 2]


def test_older_messages_count_as_their_items_will():
    history = _history()
    shown = TranscriptModel()
    shown.load_history(history, tail=50)
    behind = TranscriptModel()
    behind.load_history(history, tail=1)
    assert behind.older  # all but the last wait behind the banner
    found = pattern("needle")
    assert len(find_hits(behind.items, behind.older, found)) == len(
        find_hits(shown.items, shown.older, found))
    assert all(hit.item is None for hit in find_hits(behind.items, behind.older, found)[:-1])


def test_an_empty_query_finds_nothing_and_text_is_literal():
    assert pattern("") is None
    assert message_text({"role": "user", "content": "a.b"}) == "a.b"
    assert not pattern("a.b").search("axb")  # not a regular expression


def test_an_occurrence_split_by_wrapping_is_marked_on_both_lines():
    found = pattern("alpha  omega")
    # a prose wrap (the space became the line break), then a code line folded mid-word
    lines = [("one alpha", False), ("omega two alph", False), ("a omega", True)]
    assert line_marks(lines, found) == [[(4, 9, 0)], [(0, 5, 0), (10, 14, 1)], [(0, 7, 1)]]
    # a line break inside a word of a drawn (not stored) text: still the one occurrence
    assert line_marks([("xx al", False), ("pha omega", False)], found) == [
        [(3, 5, 0)], [(0, 9, 0)]]
    assert line_marks([("alpha", False), ("", False), ("beta", False)], found) == [[], [], []]
    assert pattern("   ") is None


def test_a_rewound_section_not_opened_is_searched_as_stored():
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "a needle", "rewound": True},
        {"role": "assistant", "content": "needle, needle", "rewound": True},
        {"role": "user", "content": "after"},
    ]
    model = TranscriptModel()
    model.load_history(history, numbers=[1, 2, 3, 4, 5], tail=50)
    (section,) = [item for item in model.items if item.kind == "rewound"]
    hits = find_hits(model.items, model.older, pattern("needle"))
    assert [(hit.item is section, hit.sealed, hit.hidden) for hit in hits] == [
        (True, True, True)] * 3
    model.open_section(section)  # built: the same occurrences, in the messages' items
    section.expanded = False
    hits = find_hits(model.items, model.older, pattern("needle"))
    assert [(hit.item.kind, hit.sealed, hit.hidden) for hit in hits] == [
        ("user", False, True), ("answer", False, True), ("answer", False, True)]


def test_letters_whose_lower_case_changes_length_are_found_and_marked_where_they_are():
    """"ẞ", "ß" and "SS" are one word to a person, and "İ" is a capital "i": each finds
    the others, and the mark covers the characters on the line, not the folded ones."""
    line = "İİ trip to İSTANBUL, via the STRASSE and the Straße"
    marks = line_marks([(line, False)], pattern("istanbul"))
    assert [line[lo:hi] for lo, hi, _ in marks[0]] == ["İSTANBUL"]
    marks = line_marks([(line, False)], pattern("straße"))
    assert [line[lo:hi] for lo, hi, _ in marks[0]] == ["STRASSE", "Straße"]
    assert [line[lo:hi] for lo, hi, _ in line_marks([(line, False)], pattern("STRAẞE"))[0]] \
        == ["STRASSE", "Straße"]
    # an "s" twice inside one "ß" is one occurrence of it, counted as the marks are
    model = TranscriptModel()
    model.load_history([{"role": "user", "content": "Maß"}], tail=50)
    assert len(find_hits(model.items, model.older, pattern("s"))) == 1
    assert line_marks([("Maß", False)], pattern("s")) == [[(2, 3, 0)]]
    # wrapped in the middle of a folded word: marked on both lines
    assert line_marks([("Stra", False), ("ße", True)], pattern("strasse")) == [
        [(0, 4, 0)], [(0, 2, 0)]]


def _one_expression(query: str) -> re.Pattern[str]:
    """The rule as one regular expression (each word's characters with an optional line
    break between them, the words with spaces or line breaks between): what the find
    bar matches, written the slow way."""
    return re.compile("\\s+".join("\n?".join(re.escape(c) for c in word)
                                   for word in fold(query).split()))


@pytest.mark.parametrize("all_at_once", [False, True, "where-glued"],
                         ids=["as-it-comes", "all-at-once", "where-glued"])
@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet="ab A\n\n\r\t\u00a0\u2028\x1cß", max_size=16),
       query=st.text(alphabet="abs \nß", min_size=1, max_size=6))
def test_the_find_text_is_found_where_the_one_expression_finds_it(all_at_once, text, query):
    """The words are matched as plain text over the text with its in-word line breaks taken
    out: the same occurrences, at the same places, as the one expression (which took the
    text's length times the query's). ``all-at-once``: several words matched at every
    place at once, as for long words over a long text, whatever the lengths;
    ``where-glued``: tried where the glued words stand in the text without its spaces."""
    found = pattern(query)
    if found is None:
        assert not query.split()
        return
    with _all_at_once(all_at_once):
        assert list(spans(found, text)) == list(spans(_one_expression(query), text))


@contextmanager
def _all_at_once(on: bool | str = True) -> Iterator[None]:
    """Several words matched at every place at once, whatever the text's length and theirs
    (``"where-glued"``: tried where the glued words stand, however often they do)."""
    saved = find._NEAR_MISSES, find._SHORT, find._FEW
    if on:
        find._NEAR_MISSES, find._SHORT = -1, 0
        # every place at once from the first glued occurrence on (-1 never reached the
        # bound, so every text was tried where the glued words stand instead)
        find._FEW = 1 << 30 if on == "where-glued" else 0
    try:
        yield
    finally:
        find._NEAR_MISSES, find._SHORT, find._FEW = saved


@settings(max_examples=300, deadline=None)
@given(unit=st.text(alphabet="ab \n", min_size=1, max_size=5), times=st.integers(1, 40),
       glued=st.text(alphabet="ab\n", max_size=8), query=st.lists(
           st.text(alphabet="ab", min_size=1, max_size=3), min_size=2, max_size=12))
def test_words_over_a_text_that_repeats_are_found_where_the_one_expression_finds_them(
        unit, times, glued, query):
    """A text that repeats itself (where the words nearly match at many places, and
    occurrences overlap) with something glued on: every occurrence is where the one
    expression finds it, matched at every place at once."""
    text = unit * times + glued + unit * (times // 2)
    for how in (True, "where-glued"):
        with _all_at_once(how):
            found = pattern(" ".join(query))
            assert found is not None
            assert list(spans(found, text)) == list(spans(_one_expression(" ".join(query)),
                                                          text)), how


def test_a_long_near_miss_is_answered_and_a_long_occurrence_found():
    """A pasted query that nearly matches a long run everywhere, and one that matches at
    the end of it, over a line broken every 80 characters."""
    run = "a" * 20_000
    text = "\n".join(run[i:i + 80] for i in range(0, len(run), 80))
    found = pattern("a" * 3_000 + "b")
    assert found is not None and list(spans(found, text)) == []
    assert list(spans(found, text + "b")) == [(len(text) - 3_037, len(text) + 1)]
    words = pattern("a " * 1_500 + "b")
    assert words is not None and list(spans(words, "a " * 5_000)) == []
    assert list(spans(words, "a " * 5_000 + "b")) == [(7_000, 10_001)]


def test_a_long_query_of_many_characters_is_tried_where_its_glued_words_stand(monkeypatch):
    """A pasted paragraph of 2,000 different characters over a long text: matching every
    place at once built a mask of the whole text for each character (9 s of CPU over
    200 KB); every occurrence begins where the glued words stand in the text without
    its spaces, so when they stand there a few times, each is tried there."""
    chars = [chr(0x4E00 + i) for i in range(2_000)]
    query = " ".join("".join(chars[i:i + 5]) for i in range(0, len(chars), 5))
    text = "一 丁 " * 40_000 + query.replace(" ", "\n", 3) + " 丁 " + query.replace(" ", "")

    def every_place(*_args: object) -> None:
        raise AssertionError("matched at every place at once")

    monkeypatch.setattr(find, "_aligned", every_place)
    found = pattern(query)
    assert found is not None
    start = len("一 丁 " * 40_000)
    assert list(spans(found, text)) == [(start, start + len(query))]
