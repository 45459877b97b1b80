"""The <ref> grammar, its edge cases, and streaming = whole-string."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.refs.parser import MAX_DEPTH, Ref, Segment, StreamingRefParser, parse_refs


def merged(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for s in segments:
        if (out and s.kind in ("text", "ref_text") and out[-1].kind == s.kind
                and out[-1].ref_id == s.ref_id and out[-1].depth == s.depth):
            out[-1] = Segment(s.kind, out[-1].text + s.text, s.ref_id, s.depth)
        elif s.kind in ("text", "ref_text") and not s.text:
            continue
        else:
            out.append(s)
    return out


def run(chunks: list[str]) -> tuple[list[Segment], StreamingRefParser]:
    p = StreamingRefParser()
    segs: list[Segment] = []
    for c in chunks:
        segs += p.feed(c)
    segs += p.finish()
    return merged(segs), p


def ids(text: str) -> list[tuple[str, str]]:
    return [(r.id, r.content) for r in parse_refs(text)]


# -- grammar -------------------------------------------------------------
def test_basic_ref_and_surrounding_text():
    segs, p = run(['Here:\n<ref id="fib">\ndef f():\n    return 1\n</ref>\nDone.'])
    assert p.refs == [Ref("fib", "def f():\n    return 1")]
    assert segs == [
        Segment("text", "Here:\n"),
        Segment("ref_open", ref_id="fib", depth=1),
        Segment("ref_text", "def f():\n    return 1", "fib", 1),
        Segment("ref_close", ref_id="fib", depth=1),
        Segment("text", "\nDone."),
    ]


def test_quotes_and_other_attributes():
    assert ids("<ref id='a'>x</ref>") == [("a", "x")]
    assert ids('<ref lang="py" id="b">x</ref>') == [("b", "x")]
    assert ids('<ref id="c" title=\'T t\'>x</ref>') == [("c", "x")]
    assert ids('<ref  id = "d"  >x</ref >') == [("d", "x")]
    assert ids('<ref\tid="e">x</ref>') == [("e", "x")]


def test_id_alphabet_and_length():
    assert ids('<ref id="A_b.c-9">x</ref>') == [("A_b.c-9", "x")]
    assert ids(f'<ref id="{"a" * 64}">x</ref>') == [("a" * 64, "x")]
    for bad in ['"{}"'.format("a" * 65), '""', '"a b"', '"a/b"', '"é"', '"a:b"']:
        text = f"<ref id={bad}>x</ref>"
        assert parse_refs(text) == [], bad
        segs, _ = run([text])
        assert segs == [Segment("text", text)]


def test_malformed_tags_are_plain_text():
    for text in [
        "<ref id=a>x</ref>",             # unquoted
        '<ref id="a"/>x</ref>',          # self-closing
        '<ref id="a" id="b">x</ref>',    # duplicate id
        '<ref name="a">x</ref>',         # no id
        '<REF id="a">x</REF>',           # case matters
        '<ref id="a"\n>x</ref>',         # tags do not span lines
        '<refid="a">x</ref>',
        '<ref id="a>x</ref>',            # unterminated quote
    ]:
        segs, p = run([text])
        assert p.refs == [], text
        assert "".join(s.text for s in segs) == text


def test_stray_close_and_lone_angle_brackets_are_text():
    segs, p = run(["a < b </ref> c <<ref> d >"])
    assert p.refs == []
    assert segs == [Segment("text", "a < b </ref> c <<ref> d >")]


def test_adjacent_refs_both_count():
    assert ids('<ref id="a">1</ref><ref id="b">2</ref>') == [("a", "1"), ("b", "2")]
    assert ids('<ref id="a">\n1\n</ref><ref id="b">\n2\n</ref>') == [("a", "1"), ("b", "2")]


def test_nested_refs_both_count_outer_without_inner_tags():
    text = '<ref id="outer">A <ref id="inner">B</ref> C</ref>'
    assert ids(text) == [("inner", "B"), ("outer", "A B C")]
    segs, _ = run([text])
    assert segs == [
        Segment("ref_open", ref_id="outer", depth=1),
        Segment("ref_text", "A ", "outer", 1),
        Segment("ref_open", ref_id="inner", depth=2),
        Segment("ref_text", "B", "inner", 2),
        Segment("ref_close", ref_id="inner", depth=2),
        Segment("ref_text", " C", "outer", 1),
        Segment("ref_close", ref_id="outer", depth=1),
    ]


def test_nested_multiline_content_is_concatenated_text():
    text = '<ref id="o">\nhead\n<ref id="i">\nbody\n</ref>\ntail\n</ref>'
    assert ids(text) == [("i", "body"), ("o", "head\nbody\ntail")]


def test_nesting_depth_is_bounded():
    opens = "".join(f'<ref id="r{i}">' for i in range(MAX_DEPTH + 1))
    text = opens + "x" + "</ref>" * (MAX_DEPTH + 1)
    refs = parse_refs(text)
    assert len(refs) == MAX_DEPTH
    assert refs[0].content == f'<ref id="r{MAX_DEPTH}">x'


def test_unclosed_ref_is_not_stored_and_reported():
    segs, p = run(['<ref id="done">ok</ref> then <ref id="open">\npartial\n'])
    assert p.refs == [Ref("done", "ok")]
    assert p.unclosed == ["open"]
    assert segs[-1] == Segment("ref_text", "partial\n", "open", 1)
    _, p2 = run(['<ref id="a">x<ref id="b">y</ref>'])
    assert p2.refs == [Ref("b", "y")]
    assert p2.unclosed == ["a"]


def test_content_verbatim_only_one_newline_stripped_each_side():
    text = '<ref id="v">\n\n  indented\n\ttab\n\n</ref>'
    assert ids(text) == [("v", "\n  indented\n\ttab\n")]
    assert ids('<ref id="w">  a  </ref>') == [("w", "  a  ")]
    assert ids('<ref id="e"></ref>') == [("e", "")]
    assert ids('<ref id="n">\n</ref>') == [("n", "")]
    assert ids('<ref id="crlf">\r\nx\r\n</ref>') == [("crlf", "\r\nx\r")]


def test_same_id_twice_both_reported_in_order():
    assert ids('<ref id="a">1</ref> <ref id="a">2</ref>') == [("a", "1"), ("a", "2")]


# -- fences --------------------------------------------------------------
def test_tags_inside_fence_outside_refs_are_literal():
    text = 'Example:\n```xml\n<ref id="x">demo</ref>\n```\n<ref id="real">y</ref>'
    assert ids(text) == [("real", "y")]
    segs, _ = run([text])
    assert segs[0] == Segment("text", 'Example:\n```xml\n<ref id="x">demo</ref>\n```\n')


def test_tilde_fence_and_unclosed_fence_run_to_end():
    assert ids('~~~\n<ref id="x">a</ref>\n~~~\n<ref id="y">b</ref>') == [("y", "b")]
    assert ids('```\n<ref id="x">a</ref>\n') == []
    # a shorter or different fence does not close
    assert ids('````\n```\n<ref id="x">a</ref>\n~~~\n') == []


def test_backtick_info_with_backtick_is_not_a_fence():
    assert ids('```a`b\n<ref id="x">a</ref>') == [("x", "a")]


def test_ref_wrapping_fence():
    code = "```python\ndef f():\n    return '<ref>'\n```"
    text = f'Look:\n<ref id="fib">\n{code}\n</ref>\nafter <ref id="z">q</ref>'
    assert ids(text) == [("fib", code), ("z", "q")]


def test_ref_wrapping_fence_inline_and_close_on_fence_line():
    assert ids('x <ref id="a">```py\nprint(1)\n```</ref>') == [("a", "```py\nprint(1)\n```")]


def test_ref_wrapping_unclosed_fence_still_closes():
    text = '<ref id="a">\n```python\nprint(1)\n</ref>\nmore <ref id="b">k</ref>'
    assert ids(text) == [("a", "```python\nprint(1)"), ("b", "k")]


def test_fence_inside_ref_showing_ref_syntax_stays_literal():
    inner = '```\n<ref id="demo">\nhello\n</ref>\n```'
    text = f'<ref id="doc">\n{inner}\n</ref>'
    assert ids(text) == [("doc", inner)]


def test_indented_fence_in_list_item():
    text = '- step\n    ```\n    <ref id="x">no</ref>\n    ```\n<ref id="y">yes</ref>'
    assert ids(text) == [("y", "yes")]


# -- streaming -----------------------------------------------------------
def test_segments_arrive_as_soon_as_known():
    p = StreamingRefParser()
    assert p.feed("Hello ") == [Segment("text", "Hello ")]
    assert p.feed("a < b") == [Segment("text", "a < b")]
    p2 = StreamingRefParser()
    assert p2.feed("<") == []
    assert p2.feed("x") == [Segment("text", "<x")]
    assert p2.feed('<ref id="k"') == []
    assert p2.feed(">") == [Segment("ref_open", ref_id="k", depth=1)]
    assert p2.feed("\n") == []  # belongs to the tag
    assert p2.feed("code") == [Segment("ref_text", "code", "k", 1)]
    assert p2.feed("\n") == []  # may belong to </ref>
    assert p2.feed("x") == [Segment("ref_text", "\nx", "k", 1)]
    assert p2.feed("</ref>") == [Segment("ref_close", ref_id="k", depth=1)]


def test_plain_lt_is_not_held_back():
    p = StreamingRefParser()
    assert merged(p.feed("1 <2")) == [Segment("text", "1 <2")]
    assert merged(p.feed(" <r")) == [Segment("text", " ")]
    assert merged(p.feed("x")) == [Segment("text", "<rx")]


def test_one_char_at_a_time_equals_whole():
    text = ('Intro\n<ref id="a">\n```py\nx = "<ref id=\'q\'>"\n```\n</ref><ref id="b">B'
            '<ref id="c">C</ref></ref>\n```\n<ref id="lit">l</ref>\n```\n<ref id="open">tail\n')
    whole, pw = run([text])
    chars, pc = run(list(text))
    assert whole == chars
    assert pw.refs == pc.refs == [
        Ref("a", '```py\nx = "<ref id=\'q\'>"\n```'), Ref("c", "C"), Ref("b", "BC")]
    assert pw.unclosed == pc.unclosed == ["open"]


def test_feed_after_finish_is_refused():
    p = StreamingRefParser()
    p.finish()
    try:
        p.feed("x")
    except RuntimeError:
        return
    raise AssertionError("feed after finish accepted")


ALPHABET = ['<ref id="a">', '<ref id="b" x=\'1\'>', "</ref>", "<", ">", "ref", "</", "\n",
            "```", "~~~", "`", " ", "x", "id=", '"', "'", "\t", "py", "    ", "````",
            '<ref id="a">\n```py\n', "\n```\n</ref>"]


@st.composite
def message_and_cuts(draw):
    parts = draw(st.lists(st.sampled_from(ALPHABET), max_size=40))
    text = "".join(parts)
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=12))))
    chunks, prev = [], 0
    for c in [*cuts, len(text)]:
        chunks.append(text[prev:c])
        prev = c
    return text, chunks


@settings(max_examples=500, deadline=None)
@given(message_and_cuts())
def test_any_chunking_gives_same_result(data):
    text, chunks = data
    whole, pw = run([text])
    split, ps = run(chunks)
    assert whole == split
    assert pw.refs == ps.refs
    assert pw.unclosed == ps.unclosed
    assert refs_from_segments(whole) == pw.refs


def refs_from_segments(segments: list[Segment]) -> list[Ref]:
    """A ref's content is exactly the ref_text shown between its open and close."""
    stack: list[tuple[str, list[str]]] = []
    out: list[Ref] = []
    for s in segments:
        if s.kind == "ref_open":
            stack.append((s.ref_id, []))
            assert s.depth == len(stack)
        elif s.kind == "ref_text":
            assert s.depth == len(stack) and s.ref_id == stack[-1][0]
            for _, texts in stack:
                texts.append(s.text)
        elif s.kind == "ref_close":
            assert s.depth == len(stack)
            rid, texts = stack.pop()
            assert rid == s.ref_id
            out.append(Ref(rid, "".join(texts)))
        else:
            assert not stack
    return out
