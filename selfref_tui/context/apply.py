"""Apply transcript patches to OpenAI-style message dicts: :func:`apply_mutations`.

The fold itself is :class:`~selfref_tui.context.builder.TranscriptBuilder` (its
names are importable from here too); a whole log with rewinds is folded by
:class:`~selfref_tui.context.history.HistoryBuilder`. Split so that ``history``
(which extends the builder) and this module (which picks one) import no cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .builder import (
    MULTIMODAL_MARK,
    NO_RESULT_TEXT,
    TranscriptBuilder,
    cancelled_text,
    fold_experiences,
    normalize_tool_call,
    unique_call_ids,
)
from .mutations import ContextMutation, RewindMutation

__all__ = [
    "MULTIMODAL_MARK",
    "NO_RESULT_TEXT",
    "TranscriptBuilder",
    "apply_mutations",
    "cancelled_text",
    "fold_experiences",
    "normalize_tool_call",
    "unique_call_ids",
]


def apply_mutations(
    messages: list[dict[str, Any]], mutations: Iterable[ContextMutation]
) -> list[dict[str, Any]]:
    """Apply ``mutations`` in order to a copy of ``messages`` and return it.

    Neither argument is modified. Remember/forget patches are batched and
    committed before the next other patch and at the end, forgets first. A
    :class:`RewindMutation` names a patch by its position in ``mutations``, so
    it can only be folded from the start of a log (``messages`` empty).
    """
    mutations = list(mutations)
    if not messages and any(isinstance(m, RewindMutation) for m in mutations):
        from .history import HistoryBuilder  # a whole log with rewinds: the fold that undoes

        builder: TranscriptBuilder = HistoryBuilder()
    else:
        builder = TranscriptBuilder(list(messages))
    for mutation in mutations:
        builder.apply(mutation)
    builder.flush_experiences()
    return builder.messages
