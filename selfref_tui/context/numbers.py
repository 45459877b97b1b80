"""Whole numbers as models write them in tool arguments.

Arguments arrive as JSON a model wrote, and smaller local models often write a
number as a string, ``"5"`` for ``5``. Refusing that cost a tool round trip each time
(the model had to call again, and some never did); reading it is safe because the
digits say one number. ``true`` is not a number here, though Python's ``bool`` is an
``int``, nor is ``1.5`` or ``1.0``: a value of the wrong kind is a mistake worth naming.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"\s*[-+]?\d{1,18}\s*")


def whole_number(value: object) -> int | None:
    """``value`` as an int when it is one (``5`` or ``"5"``), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


__all__ = ["whole_number"]
