"""Compaction summary: clear sections in a user message, structured copy alongside."""

from __future__ import annotations

from dataclasses import asdict

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.mutations import (
    ContextSummaryMutation,
    ExperienceRememberMutation,
    mutation_from_dict,
    mutation_to_dict,
)
from selfref_tui.context.summary import Summary, render_summary, summary_message, summary_mutation

AUTH = Summary(
    goal="Build the authentication module",
    instruction="Continue implementing OAuth flow",
    discoveries=["API requires PKCE", "Token refresh interval is 1h"],
    completed=["Set up project structure"],
    current_status="Implementing token exchange endpoint",
    likely_next_work="Add refresh token logic, then write tests",
    relevant_files_directories=["src/auth/", "tests/test_auth.py"],
    remember=["OAuth endpoint requires PKCE challenge"],
)


def test_message_is_user_role_with_structured_copy():
    msg = summary_message(AUTH)
    assert msg["role"] == "user"
    assert msg["compaction"] == asdict(AUTH)
    assert Summary.from_dict(msg["compaction"]) == AUTH


def test_sections_in_order_with_their_content():
    text = summary_message(AUTH)["content"]
    titles = [
        "## Goal",
        "## Instruction",
        "## Discoveries",
        "## Completed",
        "## Current status",
        "## Likely next work",
        "## Relevant files/directories",
    ]
    positions = [text.index(t) for t in titles]
    assert positions == sorted(positions)
    assert "## Goal\nBuild the authentication module" in text
    assert "## Discoveries\n- API requires PKCE\n- Token refresh interval is 1h" in text
    assert "## Relevant files/directories\n- src/auth/\n- tests/test_auth.py" in text
    assert text.startswith("[Context summary]")


def test_empty_sections_say_none():
    empty = Summary("g", "", [], [], "", "", [])
    text = render_summary(empty)
    assert "## Instruction\n(none)" in text
    assert "## Completed\n(none)" in text
    assert "## Relevant files/directories\n(none)" in text


def test_list_items_are_one_line_each():
    s = Summary("g", "i", ["two\nlines"], [], "", "", [])
    assert "- two lines" in render_summary(s)


def test_mutation_carries_remember_as_experience_dicts_and_round_trips():
    m = summary_mutation(AUTH)
    assert isinstance(m, ContextSummaryMutation)
    assert m.remember == [{"text": "OAuth endpoint requires PKCE challenge"}]
    assert mutation_from_dict(mutation_to_dict(m)) == m


def test_applied_summary_keeps_system_and_adds_experiences():
    base = apply_mutations([{"role": "user", "content": "long"}], [ExperienceRememberMutation("a")])
    out = apply_mutations(base, [summary_mutation(AUTH)])
    assert [m["role"] for m in out] == ["system", "user"]
    assert out[1]["compaction"]["goal"] == AUTH.goal
    assert [e["text"] for e in out[0]["experiences"]] == [
        "a",
        "OAuth endpoint requires PKCE challenge",
    ]


def test_from_dict_tolerates_bad_input():
    s = Summary.from_dict({"goal": 3, "discoveries": "one", "completed": None})
    assert s.goal == "3" and s.discoveries == ["one"] and s.completed == [] and s.instruction == ""
    assert Summary.from_dict(None) == Summary("", "", [], [], "", "", [])
