"""Where the automatic compaction reminder comes: one rule for the runtime and every view.

Pure and import-free, so the context meter (drawn in the app's first frame)
can place its tick where the runtime will really ask.
"""

from __future__ import annotations

import math

#: tokens left below the window for the compaction call itself: the runtime's note
#: (~100 tokens) and the summary the model writes as the call's arguments (ten
#: sections, typically 500-2,500 tokens); at most a quarter of a small window
COMPACTION_RESERVE = 3_000


def threshold(ratio: float, window: int) -> int:
    """The smallest token count at which the model is reminded to compact (0: never):
    ``ratio`` of the window, or sooner when that would leave less than
    :data:`COMPACTION_RESERVE` for the compaction call itself (a reminder at 95 % of
    16,000 tokens would leave 800 for the note and the summary the model writes)."""
    if ratio <= 0 or window <= 0:
        return 0
    reserve = min(COMPACTION_RESERVE, window // 4)
    return max(1, min(math.ceil(ratio * window), window - reserve))
