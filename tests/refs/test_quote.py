"""Ref blocks of recalled history are quotations: repeating one defines nothing (pure).

The recall tools and the summary show stored messages with their ref tags
written ``<quoted_ref …>`` (``quote_refs``); a ref written again with the
content it has already adds no version (``FdTable.add_ref``).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.experiences import escape
from selfref_tui.context.history import HistoryEntry
from selfref_tui.context.kept_words import KeptWords, Said, tagged
from selfref_tui.context.recall import read_history, render_search
from selfref_tui.context.recall_index import HistoryIndex
from selfref_tui.context.summary import Summary, summary_message
from selfref_tui.refs.fds import FdTable
from selfref_tui.refs.parser import QUOTED_TAG, parse_refs, quote_refs, quoted_ids

TIME = "2025-05-01T10:00:00.000+00:00"
CODE = "```python\nprint('<ref id=\"x\">')\n```"
ANSWER = ('Two refs:\n<ref id="plan">\nstep one\nstep two\n</ref>\n'
          f"<ref id='code' lang=\"py\">\n{CODE}\n</ref >\n"
          '<ref id="outer">a<ref id="inner">b</ref>c</ref>')


def test_the_answer_holds_refs_and_its_quotation_none():
    assert [r.id for r in parse_refs(ANSWER)] == ["plan", "code", "inner", "outer"]
    quoted = quote_refs(ANSWER)
    assert parse_refs(quoted) == []
    # the ids, the attributes and the content stay as they were
    assert '<quoted_ref id="plan">\nstep one\nstep two\n</quoted_ref>' in quoted
    assert "<quoted_ref id='code' lang=\"py\">\n" in quoted and "</quoted_ref >" in quoted
    assert quoted.replace(f"<{QUOTED_TAG}", "<ref").replace(f"</{QUOTED_TAG}", "</ref") == ANSWER


def test_text_without_ref_tags_is_left_as_it_is():
    for text in ("", "a < b", "<reference>", "<REF id=\"x\">", "</references>", "&lt;ref"):
        assert quote_refs(text) == text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(['<ref id="a">', "</ref>", "<ref ", "</ref ", ">", "\n",
                                 "```", "x", '"', "<", "/", "ref", " id=", "'b'"]),
                max_size=30).map("".join))
def test_no_quotation_defines_a_ref_and_quoting_twice_changes_nothing(text):
    quoted = quote_refs(text)
    assert parse_refs(quoted) == []
    assert quote_refs(quoted) == quoted


def test_a_tagged_message_quotes_its_refs():
    block = tagged(Said(4, "assistant", ANSWER, TIME), compacted="true")
    assert parse_refs(block) == []
    assert '<quoted_ref id="plan">\nstep one\nstep two\n</quoted_ref>' in block


def entries() -> list[HistoryEntry]:
    return [HistoryEntry(1, "user", {"role": "user", "content": "Plan it"}, TIME),
            HistoryEntry(2, "assistant", {"role": "assistant", "content": ANSWER}, TIME,
                         compacted=True)]


def test_read_history_and_search_show_refs_quoted():
    read = read_history(entries(), 1, 2)
    assert parse_refs(read) == [] and '<quoted_ref id="plan">' in read
    found = render_search(HistoryIndex().search(entries(), "step two"), "step two")
    assert parse_refs(found) == [] and '<quoted_ref id="plan"> step one step two' in found


def test_a_summary_keeps_the_last_words_with_their_refs_quoted():
    kept = KeptWords(exchange=(Said(1, "user", "Plan it", TIME),
                               Said(2, "assistant", ANSWER, TIME)), last=2, first=1)
    summary = Summary(goal="migrate", instruction="go on", discoveries=[], completed=[],
                      current_status="planned", likely_next_work="migrate",
                      relevant_files_directories=[])
    text = summary_message(summary, kept)["content"]
    assert parse_refs(text) == [] and "<quoted_ref id='code'" in text
    # and the summary's note on the searchable history says what the form means
    assert 'read <quoted_ref id="ID">…</quoted_ref>: quotations that define nothing' in text


def test_the_same_content_again_adds_no_version():
    table = FdTable(clock=lambda: TIME)
    first = table.add_ref("plan", "step one", message_index=2)
    assert first == {"t": "ref", "id": "plan", "content": "step one", "created": TIME,
                     "message_index": 2}
    assert table.add_ref("plan", "step one", message_index=6) is None
    assert table.add_refs(parse_refs('<ref id="plan">step one</ref>'), message_index=8) == []
    assert table.list_refs().count("<ref ") == 1 and "versions" not in table.list_refs()
    changed = table.add_ref("plan", "step one, then two", message_index=10)
    assert changed is not None and 'versions="2"' in table.list_refs()
    # an earlier version is content too: going back to it is a change
    assert table.add_ref("plan", "step one") is not None
    assert 'versions="3"' in table.list_refs() and table.resolve("ref:plan") == "step one"


def test_the_ids_a_text_quotes_also_when_escaped():
    quoted = quote_refs(ANSWER + '<ref id="bad id">x</ref>')
    # "x" is the tag the code block prints: quoted too, as every ref tag is
    ids = {"plan", "code", "outer", "inner", "x"}
    assert quoted_ids(quoted) == ids and quoted_ids(escape(quoted)) == ids
    assert quoted_ids(ANSWER) == set() and quoted_ids("a quoted_ref without a tag") == set()
