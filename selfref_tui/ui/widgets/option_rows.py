"""Bring an ``OptionList`` from the rows it shows to new rows, touching only what changed.

The sidebar's lists are re-sent whole after every ref or experience event (the
store's rows, rebuilt). Building every option again made each refresh of a
1,000-ref list re-style and re-measure 1,000 rows; most refreshes add one row
at the end and turn one earlier row "old". Rows are compared as values
(frozen dataclasses), so equal rows keep their option and its cached render.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

Row = TypeVar("Row")

#: Rows past which a list takes all the room it may have (its ``max-height``) instead
#: of the height of its rows (CSS class ``-long``): every row is a line at least, so
#: that many rows fill any screen. "auto" measured every row at each layout: with
#: 1,000 experiences, seconds of CPU to open a conversation.
LONG = 200

#: beyond this many changed rows one rebuild is cheaper than as many edits
MAX_EDITS = 32


def sync_options(
    option_list: OptionList,
    shown: Sequence[Row],
    rows: Sequence[Row],
    prompt: Callable[[Row], Content],
) -> bool:
    """Make ``option_list`` (showing ``shown``) show ``rows``.

    Args:
        option_list: The list; its options must be ``shown``'s, in order.
        shown: The rows it shows now.
        rows: The rows it is to show.
        prompt: A row's prompt (built only for rows that are new or changed).

    Returns:
        True when every option was built again (the highlight was reset).
    """
    if option_list.option_count != len(shown):  # not ours to edit: start again
        option_list.set_options(Option(prompt(row)) for row in rows)
        return True
    common = min(len(shown), len(rows))
    changed = [i for i in range(common) if shown[i] != rows[i]]
    removed = len(shown) - common
    if len(changed) + removed > MAX_EDITS:
        option_list.set_options(Option(prompt(row)) for row in rows)
        return True
    for index in changed:
        option_list.replace_option_prompt_at_index(index, prompt(rows[index]))
    for index in range(len(shown) - 1, common - 1, -1):
        option_list.remove_option_at_index(index)
    if len(rows) > common:
        option_list.add_options(Option(prompt(row)) for row in rows[common:])
    return False
