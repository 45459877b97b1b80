"""A failed turn's messages are kept, marked, and left out of the request."""

from __future__ import annotations

from selfref_tui.context.apply import apply_mutations
from selfref_tui.context.compile import InvocationConfig, render_provider_messages
from selfref_tui.context.mutations import TurnFailedMutation, UserMessageMutation
from selfref_tui.context.summary import Summary, summary_message

CONFIG = InvocationConfig(base_system_prompt="sys", refs_enabled=False)


def _user(text: str, **extra) -> UserMessageMutation:
    return UserMessageMutation({"role": "user", "content": text, **extra})


def test_only_the_trailing_user_run_is_marked_and_a_retry_clears_it():
    base = apply_mutations([], [_user("q1"), UserMessageMutation({"role": "assistant",
                                                                   "content": "a1"})])
    failed = apply_mutations(base, [_user("q2"), _user("note", runtime_note=True),
                                    TurnFailedMutation("server said no")])
    body = [m for m in failed if m["role"] != "system"]
    assert [m.get("failed") for m in body] == [None, None, "server said no", "server said no"]
    sent = render_provider_messages(CONFIG, failed)
    assert [(m["role"], m["content"]) for m in sent[1:]] == [("user", "q1"), ("assistant", "a1")]
    retried = apply_mutations(failed, [TurnFailedMutation("")])
    assert not any("failed" in m for m in retried)
    # sent again, as one user message (the request never carries a user run)
    assert render_provider_messages(CONFIG, retried)[-1] == {"role": "user",
                                                              "content": "q2\n\nnote"}


def test_a_summary_is_never_marked():
    summary = UserMessageMutation(summary_message(Summary("g", "i", [], [], "s", "n", [])))
    out = apply_mutations([], [summary, TurnFailedMutation("x")])
    assert "failed" not in out[-1]
    assert apply_mutations([], [TurnFailedMutation("x")]) == []  # nothing to mark


def test_a_second_failed_turn_keeps_the_first_ones_reason():
    """Two failures in a row ("model not found", then "cannot reach"): read back from the
    store, both messages said the second reason, the first one's own lost."""
    failed = apply_mutations([], [_user("hello other model"),
                                  TurnFailedMutation("model 'other-model' not found"),
                                  _user("hello profile"),
                                  TurnFailedMutation("cannot reach http://127.0.0.1:9/v1")])
    assert [m.get("failed") for m in failed if m["role"] == "user"] == [
        "model 'other-model' not found", "cannot reach http://127.0.0.1:9/v1"]
    retried = apply_mutations(failed, [TurnFailedMutation("")])  # a retry sends both again
    assert not any("failed" in m for m in retried)
