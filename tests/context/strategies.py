"""Hypothesis strategies for transcript patches, shared by the context tests.

Tool-call ids come from a tiny pool so results, cancellations and multimodal
results regularly hit open calls, answered calls, other blocks' calls and
unknown ids alike.
"""

from __future__ import annotations

from hypothesis import strategies as st

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    AssistantTruncatedMutation,
    ContextReplaceMutation,
    ContextSummaryMutation,
    ExperienceForgetMutation,
    ExperienceRememberMutation,
    MultimodalToolResultMutation,
    ToolCancelledMutation,
    ToolResultMutation,
    TurnFailedMutation,
    UserMessageMutation,
)

call_ids = st.sampled_from(["c1", "c2", "c3", "c4"])
texts = st.text(alphabet="ab <>&\n\t", max_size=8)
names = st.sampled_from(["read_fd", "shot", "remember"])
exp_ids = st.sampled_from(["exp_001", "exp_002", "exp_003", "exp_009", "nope"])

tool_calls = st.builds(
    lambda cid, name: {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    },
    call_ids,
    names,
)

roles = st.sampled_from(["system", "user", "assistant", "tool"])


@st.composite
def raw_messages(draw) -> dict:
    """A message of any role, as a replace or a user patch might carry it."""
    role = draw(roles)
    msg: dict = {"role": role, "content": draw(texts)}
    if role == "assistant" and draw(st.booleans()):
        msg["tool_calls"] = draw(st.lists(tool_calls, min_size=1, max_size=3))
    if role == "tool":
        msg["tool_call_id"] = draw(call_ids)
    if role == "system" and draw(st.booleans()):
        msg["experiences"] = [{"id": draw(exp_ids), "text": draw(texts)}]
    return msg


mutations = st.one_of(
    st.builds(
        AssistantMessageMutation,
        content=st.none() | texts,
        tool_calls=st.lists(tool_calls, max_size=3),
        reasoning_details=st.lists(st.fixed_dictionaries({"text": texts}), max_size=1),
    ),
    st.builds(ToolResultMutation, tool_call_id=call_ids, content=texts,
              error=st.sampled_from([None, True, False])),
    st.builds(
        MultimodalToolResultMutation,
        tool_call_id=call_ids,
        tool_name=names,
        arguments=st.just("{}"),
        user_messages=st.lists(st.fixed_dictionaries({"content": texts}), min_size=1, max_size=2),
    ),
    st.builds(UserMessageMutation, message=raw_messages()),
    st.builds(ContextReplaceMutation, messages=st.lists(raw_messages(), max_size=5)),
    st.builds(
        ContextSummaryMutation,
        summary_message=st.fixed_dictionaries({"role": st.just("user"), "content": texts}),
        remember=st.lists(st.fixed_dictionaries({"text": texts}), max_size=2),
    ),
    st.builds(ExperienceRememberMutation, text=texts),
    st.builds(ExperienceForgetMutation, experience_id=exp_ids),
    st.builds(AssistantTruncatedMutation, partial_content=texts, abort_reason=texts),
    st.builds(ToolCancelledMutation, tool_call_id=call_ids, tool_name=names, abort_reason=texts),
    st.builds(TurnFailedMutation, reason=texts),
)
