"""The offline demo model's scripted answers, read as a person reads them."""

from __future__ import annotations

import re

from selfref_tui.demo.script import demo_script


def test_the_long_answers_parts_are_numbered_in_order():
    """'Part 1' six times in a row read as a bug: the parts count up."""
    reply = demo_script({"messages": [{"role": "user", "content": "write something long"}]}, 0)
    numbers = [int(n) for n in re.findall(r"^### Part (\d+):", reply.text, re.MULTILINE)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) > 6


def test_an_attached_image_is_acknowledged_not_answered_with_the_help_text():
    """/attach with --demo: the demo model says it got the picture and what would see it."""
    url = "data:image/png;base64,iVBORw0KGgo="
    body = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": url}}]}]}
    text = demo_script(body, 0).text
    assert "1 image (image/png)" in text and "vision model" in text
    assert "Try one of these" not in text
