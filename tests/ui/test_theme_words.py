"""Text on screen takes a text colour of the theme: ``$text-primary``, ``$text-muted``…

A theme's ``$primary``, ``$accent``, ``$warning``… are colours for borders and
backgrounds; as the colour of text they fall to 1.9:1 on some built-in themes
(the footer's keys on catppuccin-latte). ``dim`` halves the contrast and
``$text-disabled`` is under 3:1 on light themes. Every widget and dialog is
read in every theme by tests/ui/test_themes.py; this test catches the same
mistake in a dialog that test does not open, by reading the source: a style
string that colours text with one of those.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import selfref_tui.ui

UI = Path(selfref_tui.ui.__file__).parent

#: a theme colour used for text: not a background ("on $x", "background: $x"), not a border
RAW_TEXT = re.compile(
    r"(?<!on )(?<![-\w])\$(primary|secondary|accent|warning|error|success)\b(?![-\w])(?! \d+%)"
)
FAINT = re.compile(r"(?:^|[\s;{:])(dim|\$text-disabled)\b")
NOT_TEXT = re.compile(r"border|background|bgcolor|scrollbar|\bon \$")


def _strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def test_widgets_colour_text_with_the_themes_text_colours():
    wrong = []
    for path in sorted(UI.rglob("*.py")):
        for line, text in _strings(path):
            for part in re.split(r"[;\n]", text):
                if NOT_TEXT.search(part) or part.strip().startswith("/*"):
                    continue
                if RAW_TEXT.search(part) or FAINT.search(part):
                    wrong.append(f"{path.relative_to(UI)}:{line}: {part.strip()!r}")
    assert not wrong, "text in a theme's raw colour or faded:\n" + "\n".join(wrong)
