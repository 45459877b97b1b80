"""The pure context engine: typed patches, their fold, the compile boundary, token counts.

No files, network, asyncio or Textual here (see docs/architecture.md), so
everything in this package is cheap to import and to test.
"""

from __future__ import annotations

from .apply import TranscriptBuilder, apply_mutations
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
from .history import HistoryBuilder, HistoryEntry
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
from .summary import Summary, render_summary, summary_message, summary_mutation
from .tokens import TokenCounter, estimate_tokens

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
