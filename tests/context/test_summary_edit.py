"""The summary a person edits reads back into the summary they meant, never losing words."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.context.summary import Summary
from selfref_tui.context.summary_edit import editable_text, summary_from_text

SUMMARY = Summary(
    goal="Ship the parser", instruction="small steps, tests first",
    discoveries=["the lexer is fine", "errors lose their line"], completed=["lexer"],
    current_status="half done", likely_next_work="error messages",
    relevant_files_directories=["src/parse.py"], errors_and_fixes=["off by one: fixed"],
    constraints_and_preferences=["no new dependencies"], pending_tasks=["docs"],
    remember=["The person wants tests first."])


def test_an_unchanged_text_reads_back_as_the_same_summary():
    text = editable_text(SUMMARY)
    assert text.startswith("## Goal\nShip the parser\n\n## Instruction\n")
    assert "## Remember\n- The person wants tests first." in text
    assert summary_from_text(text) == SUMMARY


def test_empty_sections_say_none_and_read_back_empty():
    empty = Summary("g", "", [], [], "", "", [])
    text = editable_text(empty)
    assert "## Discoveries\n(none)" in text
    assert summary_from_text(text) == empty


def test_a_person_s_edits_are_read_forgivingly():
    text = editable_text(SUMMARY)
    text = text.replace("Ship the parser", "Ship the parser and its docs")
    text = text.replace("- lexer", "- lexer\n* parser skeleton\n  (without errors)\nplain line")
    text = text.replace("## Pending tasks", "###   pending   TASKS")
    text = text.replace("## Remember\n- The person wants tests first.", "## Remember\n(none)")
    edited = summary_from_text(text)
    assert edited.goal == "Ship the parser and its docs"
    assert edited.completed == ["lexer", "parser skeleton (without errors)", "plain line"]
    assert edited.pending_tasks == ["docs"]
    assert edited.remember == []


def test_words_outside_any_known_title_are_kept():
    edited = summary_from_text("A note before any title\n## Goal\nthe goal\n## Mine\nmy words\n"
                               "## Current status\nfine")
    assert edited.goal == "A note before any title\nthe goal\n## Mine\nmy words"
    assert edited.current_status == "fine"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
                max_size=4))
def test_list_items_round_trip(items):
    clean = [" ".join(i.split()) for i in items]
    clean = [c for c in clean if c]
    summary = Summary("g", "i", clean, [], "s", "n", [])
    assert summary_from_text(editable_text(summary)).discoveries == clean
