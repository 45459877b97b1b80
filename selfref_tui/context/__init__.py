"""The pure context engine: typed patches, their fold, the compile boundary, token counts.

No files, network, asyncio or Textual here (see docs/architecture.md), so
everything in this package is cheap to test. The names below are resolved
when first read (PEP 562): importing one module of the package (the store's
fold needs ``history`` and ``mutations``; ``selfref-tui rewind`` nothing else)
does not import the compile boundary, the summary and the token counter too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selfref_tui.lazy_names import resolved_on_read

#: each public name → the module of this package that defines it (relative)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys((
        "TranscriptBuilder",
        "apply_mutations",
    ), ".apply"),
    **dict.fromkeys((
        "DataFromSelfRef",
        "InvocationConfig",
        "REF_INSTRUCTIONS",
        "compile_messages",
        "render_provider_messages",
        "snapshot_of",
        "system_prompt_text",
    ), ".compile"),
    **dict.fromkeys((
        "experiences_of",
        "next_id",
        "render_system_prompt_with_experiences",
        "with_forgotten",
        "with_remembered",
    ), ".experiences"),
    **dict.fromkeys((
        "HistoryBuilder",
        "HistoryEntry",
    ), ".history"),
    **dict.fromkeys((
        "AssistantMessageMutation",
        "AssistantTruncatedMutation",
        "ContextMutation",
        "ContextReplaceMutation",
        "ContextSummaryMutation",
        "ExperienceEditMutation",
        "ExperienceForgetMutation",
        "ExperienceRememberMutation",
        "MultimodalToolResultMutation",
        "MutationDecodeError",
        "RewindMutation",
        "ToolCancelledMutation",
        "ToolResultMutation",
        "TurnFailedMutation",
        "UserMessageMutation",
        "mutation_from_dict",
        "mutation_to_dict",
    ), ".mutations"),
    **dict.fromkeys((
        "Summary",
        "render_summary",
        "summary_message",
        "summary_mutation",
    ), ".summary"),
    **dict.fromkeys((
        "TokenCounter",
        "estimate_tokens",
    ), ".tokens"),
}


__getattr__ = resolved_on_read(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .apply import (
        TranscriptBuilder,
        apply_mutations,
    )
    from .compile import (
        REF_INSTRUCTIONS,
        DataFromSelfRef,
        InvocationConfig,
        compile_messages,
        render_provider_messages,
        snapshot_of,
        system_prompt_text,
    )
    from .experiences import (
        experiences_of,
        next_id,
        render_system_prompt_with_experiences,
        with_forgotten,
        with_remembered,
    )
    from .history import (
        HistoryBuilder,
        HistoryEntry,
    )
    from .mutations import (
        AssistantMessageMutation,
        AssistantTruncatedMutation,
        ContextMutation,
        ContextReplaceMutation,
        ContextSummaryMutation,
        ExperienceEditMutation,
        ExperienceForgetMutation,
        ExperienceRememberMutation,
        MultimodalToolResultMutation,
        MutationDecodeError,
        RewindMutation,
        ToolCancelledMutation,
        ToolResultMutation,
        TurnFailedMutation,
        UserMessageMutation,
        mutation_from_dict,
        mutation_to_dict,
    )
    from .summary import (
        Summary,
        render_summary,
        summary_message,
        summary_mutation,
    )
    from .tokens import (
        TokenCounter,
        estimate_tokens,
    )

__all__ = [
    "REF_INSTRUCTIONS",
    "AssistantMessageMutation",
    "AssistantTruncatedMutation",
    "ContextMutation",
    "ContextReplaceMutation",
    "ContextSummaryMutation",
    "DataFromSelfRef",
    "ExperienceEditMutation",
    "ExperienceForgetMutation",
    "ExperienceRememberMutation",
    "HistoryBuilder",
    "HistoryEntry",
    "InvocationConfig",
    "MultimodalToolResultMutation",
    "MutationDecodeError",
    "RewindMutation",
    "Summary",
    "TokenCounter",
    "ToolCancelledMutation",
    "ToolResultMutation",
    "TranscriptBuilder",
    "TurnFailedMutation",
    "UserMessageMutation",
    "apply_mutations",
    "compile_messages",
    "estimate_tokens",
    "experiences_of",
    "mutation_from_dict",
    "mutation_to_dict",
    "next_id",
    "render_provider_messages",
    "render_summary",
    "render_system_prompt_with_experiences",
    "snapshot_of",
    "summary_message",
    "summary_mutation",
    "system_prompt_text",
    "with_forgotten",
    "with_remembered",
]
