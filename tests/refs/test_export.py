"""export_plan: a ref that is one fenced block exports as bare code."""

from __future__ import annotations

import pytest

from selfref_tui.refs.export import export_plan, safe_stem
from selfref_tui.refs.parser import parse_refs


def test_fenced_python_from_parsed_ref():
    msg = ('<ref id="fib_iterative">\n```python\ndef fib(n):\n    a, b = 0, 1\n'
           '    return a\n```\n</ref>')
    ref = parse_refs(msg)[0]
    plan = export_plan(ref.id, ref.content)
    assert plan.fenced and plan.language == "python" and plan.extension == ".py"
    assert plan.content == "def fib(n):\n    a, b = 0, 1\n    return a\n"
    assert plan.suggested_name == "fib_iterative.py"


@pytest.mark.parametrize("lang,ext", [
    ("python", ".py"), ("javascript", ".js"), ("js", ".js"), ("typescript", ".ts"),
    ("ts", ".ts"), ("rust", ".rs"), ("go", ".go"), ("bash", ".sh"), ("sh", ".sh"),
    ("shell", ".sh"), ("json", ".json"), ("yaml", ".yaml"), ("yml", ".yaml"),
    ("toml", ".toml"), ("html", ".html"), ("css", ".css"), ("sql", ".sql"), ("c", ".c"),
    ("cpp", ".cpp"), ("java", ".java"), ("ruby", ".rb"), ("markdown", ".md"), ("md", ".md"),
    ("text", ".txt"), ("", ".txt"), ("Python", ".py"), ("klingon", ".txt"),
])
def test_language_to_extension(lang, ext):
    plan = export_plan("x", f"```{lang}\nbody\n```")
    assert plan.extension == ext and plan.content == "body\n"
    assert plan.suggested_name == "x" + ext


def test_blank_lines_around_and_tilde_and_long_fence():
    plan = export_plan("t", "\n\n~~~~ sh\necho ```\n~~~~\n\n")
    assert plan.fenced and plan.content == "echo ```\n" and plan.extension == ".sh"


def test_info_string_with_attributes():
    plan = export_plan("a", "```python title=x.py\nprint(1)\n```")
    assert plan.language == "python" and plan.content == "print(1)\n"


def test_indented_fence_is_dedented():
    plan = export_plan("a", "  ```go\n  package main\n    func f() {}\n  ```")
    assert plan.content == "package main\n  func f() {}\n"


@pytest.mark.parametrize("content", [
    "Some intro\n```python\nx = 1\n```",          # text before the block
    "```python\nx = 1\n```\nafter",               # text after
    "```py\na\n```\n\n```py\nb\n```",             # two blocks
    "```python\nx = 1",                           # not closed
    "```python\n```",                             # empty block stays a block
])
def test_not_exactly_one_block_is_kept_as_is(content):
    plan = export_plan("r", content)
    if content == "```python\n```":
        assert plan.fenced and plan.content == ""
        return
    assert not plan.fenced and plan.content == content + "\n"  # kept, ending a line


def test_an_export_ends_with_a_line_break_once():
    assert export_plan("p", "one line").content == "one line\n"
    assert export_plan("p", "two\nlines\n").content == "two\nlines\n"
    assert export_plan("p", "").content == ""


def test_markdown_or_text():
    assert export_plan("notes", "# Title\n\n- a\n- b").suggested_name == "notes.md"
    assert export_plan("notes", "See [docs](http://x).").extension == ".md"
    assert export_plan("plain", "just words\nmore words").suggested_name == "plain.txt"


def test_name_is_sanitised():
    assert safe_stem("../../etc/passwd") == "etc_passwd"
    assert safe_stem(".hidden") == "hidden"
    assert safe_stem("-rf") == "rf"
    assert safe_stem("") == "ref"
    assert safe_stem("a" * 100) == "a" * 64
    assert export_plan("main.py", "```python\nx\n```").suggested_name == "main.py"
    assert export_plan("v1.2", "```python\nx\n```").suggested_name == "v1.2.py"
