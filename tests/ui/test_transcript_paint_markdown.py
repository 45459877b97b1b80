"""The transcript's Markdown, parsed by one shared parser, draws what Rich's own does."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.markdown import Markdown

from selfref_tui.safety import inert
from selfref_tui.ui.transcript.paint_answer import markdown
from tests.hostile import CORPUS

SAMPLES = [
    "plain words",
    "# Heading\n\nA paragraph with **bold**, *italic*, ~~struck~~ and `code`.",
    "- one\n- two\n  - nested\n\n1. first\n2. second\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "```python\ndef f(x):\n    return x\n```\n",
    "> quoted\n> text\n\n---\n\n[a link](https://example.com) and <https://example.org>",
    "",
    *(text for _, text in CORPUS),
]


def lines(renderable) -> list[list[tuple[str, str]]]:
    console = Console(width=60, color_system="truecolor", force_terminal=True)
    rendered = console.render_lines(renderable, console.options, pad=True)
    return [[(seg.text, str(seg.style)) for seg in line] for line in rendered]


@pytest.mark.parametrize("text", SAMPLES)
def test_shared_parser_draws_what_markdown_draws(text):
    text = inert(text)
    assert lines(markdown(text)) == lines(Markdown(text, hyperlinks=False))


def test_each_block_keeps_its_own_text():
    first, second = markdown("first"), markdown("second")
    assert "first" in str(lines(first)) and "second" in str(lines(second))
    assert "first" not in str(lines(second))
