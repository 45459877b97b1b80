"""Quotation tags found in text that streams in (refs/quoted.py)."""

from __future__ import annotations

import pytest

from selfref_tui.refs.parser import MAX_TAG_LEN, parse_refs, quote_refs
from selfref_tui.refs.quoted import QuoteScanner


def scan(text: str, size: int) -> list[tuple[str, str]]:
    scanner = QuoteScanner()
    pieces = []
    for at in range(0, len(text), size):
        pieces += scanner.feed(text[at: at + size])
    pieces += scanner.finish()
    merged: list[tuple[str, str]] = []
    for piece in pieces:
        value = piece.text if piece.kind == "text" else piece.ref_id
        if piece.kind == "text" and merged and merged[-1][0] == "text":
            merged[-1] = ("text", merged[-1][1] + value)
        else:
            merged.append((piece.kind, value))
    return merged


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_tags_are_found_however_the_text_is_cut(size):
    text = ('see <quoted_ref kind="code" id="fib">\ndef fib(n): <b> a<c\n</quoted_ref >!'
            ' <quoted_ref id=bare> <quoted_ref id="a b"> <quoted_ref id="x"\n> <quoted_refs'
            ' id="y"> </quoted_ref\n> end <quoted')
    assert scan(text, size) == [
        ("text", "see "), ("open", "fib"), ("text", "\ndef fib(n): <b> a<c\n"), ("close", ""),
        ("text", '! <quoted_ref id=bare> <quoted_ref id="a b"> <quoted_ref id="x"\n> '
                 '<quoted_refs id="y"> </quoted_ref\n> end <quoted'),
    ]


def test_a_tag_too_long_is_text_and_nothing_is_held_for_it():
    tag = f'<quoted_ref id="a" note="{"n" * MAX_TAG_LEN}">'
    scanner = QuoteScanner()
    pieces = scanner.feed(tag + "after")
    assert [p.kind for p in pieces] == ["text"] and "".join(p.text for p in pieces) == (
        tag + "after")


def test_what_quote_refs_writes_is_found_and_defines_no_ref():
    quoted = quote_refs('<ref id="plan">\nstep one\n</ref>')
    assert parse_refs(quoted) == []
    assert scan(quoted, 3) == [("open", "plan"), ("text", "\nstep one\n"), ("close", "")]
