"""selfref-tui: a terminal chat app whose agent manages its own context.

The public names are resolved lazily (PEP 562) so that ``import selfref_tui``
— which every command-line call does — stays cheap: the app's first frame
must not wait for the openai client or the store to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selfref_tui.lazy_names import resolved_on_read

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    **{
        name: "selfref_tui.context.mutations"
        for name in (
            "AssistantMessageMutation",
            "ToolResultMutation",
            "MultimodalToolResultMutation",
            "UserMessageMutation",
            "ContextReplaceMutation",
            "ContextSummaryMutation",
            "ExperienceRememberMutation",
            "ExperienceForgetMutation",
            "ExperienceEditMutation",
            "AssistantTruncatedMutation",
            "ToolCancelledMutation",
            "TurnFailedMutation",
            "ContextMutation",
        )
    },
    "apply_mutations": "selfref_tui.context.apply",
    "DataFromSelfRef": "selfref_tui.context.compile",
    "render_system_prompt_with_experiences": "selfref_tui.context.experiences",
    "SelfReference": "selfref_tui.selfref.reference",
    "SelfRefSession": "selfref_tui.selfref.session",
    "parse_refs": "selfref_tui.refs.parser",
    "AgentInputRouter": "selfref_tui.agent.turn.router",
}

__all__ = sorted(_EXPORTS)


__getattr__ = resolved_on_read(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from selfref_tui.agent.turn.router import AgentInputRouter
    from selfref_tui.context.apply import apply_mutations
    from selfref_tui.context.compile import DataFromSelfRef
    from selfref_tui.context.experiences import render_system_prompt_with_experiences
    from selfref_tui.context.mutations import (
        AssistantMessageMutation,
        AssistantTruncatedMutation,
        ContextMutation,
        ContextReplaceMutation,
        ContextSummaryMutation,
        ExperienceEditMutation,
        ExperienceForgetMutation,
        ExperienceRememberMutation,
        MultimodalToolResultMutation,
        ToolCancelledMutation,
        ToolResultMutation,
        TurnFailedMutation,
        UserMessageMutation,
    )
    from selfref_tui.refs.parser import parse_refs
    from selfref_tui.selfref.reference import SelfReference
    from selfref_tui.selfref.session import SelfRefSession
