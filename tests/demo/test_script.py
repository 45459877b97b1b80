"""The offline demo model's scripted answers, read as a person reads them."""

from __future__ import annotations

import re

from selfref_tui.demo.script import demo_script


def test_the_long_answers_parts_are_numbered_in_order():
    """'Part 1' six times in a row read as a bug: the parts count up."""
    reply = demo_script({"messages": [{"role": "user", "content": "write something long"}]}, 0)
    numbers = [int(n) for n in re.findall(r"^### Part (\d+):", reply.text, re.MULTILINE)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) > 6
