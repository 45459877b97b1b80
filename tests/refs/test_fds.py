"""FdTable: paging that reaches everything, strict ranges, ids that never alias."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.refs.fds import FdTable, namespace_for_key, natural_key
from selfref_tui.refs.parser import parse_refs

T = "2026-01-01T00:00:00+00:00"


def xml(text: str) -> ET.Element:
    return ET.fromstring(text)


def err_type(text: str) -> str | None:
    el = xml(text)
    return el.get("type") if el.tag == "fd_error" else None


def table_with(content: str, **kw) -> tuple[FdTable, str]:
    t = FdTable(clock=lambda: T, **kw)
    rec = t.add_fd(content, source="test")
    return t, rec["id"]


# -- refs ----------------------------------------------------------------
def test_refs_from_parser_list_and_get_with_escaping():
    t = FdTable(clock=lambda: T)
    msg = '<ref id="code">\nif a < b && c > "d":\n    pass\n</ref><ref id="b">x</ref>'
    records = t.add_refs(parse_refs(msg), message_index=3)
    assert records[0] == {"t": "ref", "id": "code", "content": 'if a < b && c > "d":\n    pass',
                          "created": T, "message_index": 3}
    listing = xml(t.list_refs())
    assert listing.tag == "ref_list" and listing.get("count") == "2"
    code = listing.find("ref[@id='code']")
    assert code.get("lines") == "2" and code.get("chars") == str(len(records[0]["content"]))
    assert code.get("created") == T
    got = t.get_ref("code")
    assert "&lt; b &amp;&amp; c &gt;" in got
    assert xml(got).text == records[0]["content"]
    assert xml(t.get_ref("ref:b")).text == "x"


def test_same_ref_id_later_is_current_earlier_superseded():
    t = FdTable.from_store({"a": [{"id": "a", "content": "old", "created": T}]}, {})
    t.add_ref("a", "new", T)
    assert xml(t.get_ref("a")).text == "new"
    assert t.resolve("ref:a") == "new"
    assert xml(t.list_refs()).find("ref").get("versions") == "2"


def test_unknown_ref_lists_known_ids():
    t = FdTable()
    assert err_type(t.get_ref("nope")) == "not_found"
    t.add_ref("r10", "x")
    t.add_ref("r2", "y")
    msg = xml(t.get_ref("nope")).text
    assert "r2, r10" in msg


def test_attribute_escaping():
    t = FdTable()
    rec = t.add_fd("x", source='tool "q" <&>')
    listing = t.list_refs()
    el = xml(listing).find("fd")
    assert el.get("source") == 'tool "q" <&>'
    assert el.get("id") == rec["id"]


# -- paging --------------------------------------------------------------
def test_long_single_line_every_char_reachable_by_pages():
    content = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    t, fd = table_with(content)
    first = xml(t.read_fd(fd))
    assert first.get("pages") == "3" and first.get("next_page") == "2"
    pages = [xml(t.read_fd(fd, page=p)).text for p in (1, 2, 3)]
    assert [len(p) for p in pages] == [4000, 4000, 2000]
    assert "".join(pages) == content
    assert err_type(t.read_fd(fd, page=4)) == "invalid_range"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab\n", max_size=300), st.integers(1, 50))
def test_page_count_matches_slicing(content, size):
    t, fd = table_with(content, page_size=size)
    pages = int(xml(t.read_fd(fd)).get("pages"))
    got = "".join(xml(t.read_fd(fd, page=p)).text or "" for p in range(1, pages + 1))
    assert got == content
    assert err_type(t.read_fd(fd, page=pages + 1)) == "invalid_range"


@pytest.mark.parametrize("size", [0, -1, 1.5, None])
def test_bad_page_size_refused_not_looping(size):
    with pytest.raises(ValueError):
        FdTable(page_size=size)


@pytest.mark.parametrize("kw", [
    {"page": 0}, {"page": -2}, {"page": True}, {"page": "x"}, {"page": 1.0},
    {"mode": "line", "start": 0}, {"mode": "line", "start": 1, "count": 0},
    {"mode": "char", "start": -1}, {"mode": "char", "count": -3},
    {"mode": "page", "start": 0}, {"mode": "bytes"}, {"mode": "line", "page": 2},
])
def test_non_positive_and_bad_values_are_errors(kw):
    t, fd = table_with("a\nb\nc\n")
    assert err_type(t.read_fd(fd, **kw)) == "invalid_parameter"


def test_digit_strings_are_accepted():
    t, fd = table_with("a\nb\nc\n")
    assert xml(t.read_fd(fd, mode="line", start="2", count="1")).text == "b\n"


# -- line and char modes ---------------------------------------------------
def test_line_mode_exact_and_out_of_range_is_error():
    t, fd = table_with("one\ntwo\nthree")
    el = xml(t.read_fd(fd, mode="line", start=2, count=2))
    assert el.text == "two\nthree" and el.get("total_lines") == "3"
    assert xml(t.read_fd(fd, mode="line", start=3)).text == "three"
    assert err_type(t.read_fd(fd, mode="line", start=4)) == "invalid_range"
    bad = xml(t.read_fd(fd, mode="line", start=2, count=5))
    assert bad.get("type") == "invalid_range" and "at most 2" in bad.text


def test_char_mode_and_read_all():
    t, fd = table_with("0123456789")
    assert xml(t.read_fd(fd, mode="char", start=3, count=4)).text == "2345"
    assert err_type(t.read_fd(fd, mode="char", start=8, count=4)) == "invalid_range"
    assert xml(t.read_fd(fd, read_all=True)).text == "0123456789"


def test_empty_content():
    t, fd = table_with("")
    assert xml(t.read_fd(fd)).get("pages") == "1"
    assert err_type(t.read_fd(fd, mode="line")) == "invalid_range"


def test_lines_split_on_newline_only():
    t, fd = table_with("a\rb\x0cc\nd")
    # (control characters are not XML 1.0, so compare the string itself)
    out = t.read_fd(fd, mode="line", start=1, count=1)
    assert out.endswith('total_lines="2">a\rb\x0cc\n</fd_content>')


# -- unknown ids ----------------------------------------------------------
def test_unknown_fd_lists_at_most_20_naturally_sorted():
    t = FdTable()
    for i in range(25):
        t.add_fd(str(i))
    el = xml(t.read_fd("fd:99"))
    assert el.get("type") == "not_found"
    listed = re.findall(r"fd:\d+", el.text.split("Known fds:")[1])
    assert listed == [f"fd:{i}" for i in range(1, 21)]
    assert "5 more" in el.text
    assert sorted(["fd:10", "fd:2", "fd:1"], key=natural_key) == ["fd:1", "fd:2", "fd:10"]


def test_bad_fd_argument():
    t = FdTable()
    assert err_type(t.read_fd("")) == "invalid_parameter"
    assert err_type(t.read_fd(None)) == "invalid_parameter"
    assert err_type(t.read_fd("what")) == "not_found"


# -- outputs and extraction -------------------------------------------------
def test_small_output_passes_through_large_becomes_fd():
    t = FdTable(clock=lambda: T)
    text, rec = t.add_output("x" * 8000, source="shell")
    assert text == "x" * 8000 and rec is None
    big = "line\n" * 2000  # 10,000 chars
    text, rec = t.add_output(big, source="shell")
    assert rec == {"t": "fd", "id": "fd:1", "content": big, "created": T, "source": "shell"}
    el = xml(text)
    assert el.tag == "fd_result" and el.get("fd") == "fd:1" and el.get("pages") == "3"
    assert el.find("fd_preview").text == big[:4000]
    assert 'read_fd(fd="fd:1", page=2)' in el.find("fd_instructions").text


def test_extract_to_new_fd():
    t, fd = table_with("a\nb\nc\nd\n")
    text, rec = t.extract_to_new_fd(fd, mode="line", start=2, count=2)
    assert rec["id"] == "fd:2" and rec["content"] == "b\nc\n"
    assert xml(text).get("new_fd") == "fd:2"
    assert t.resolve("fd:2") == "b\nc\n"
    text, rec = t.extract_to_new_fd(fd, mode="line", start=9)
    assert rec is None and err_type(text) == "invalid_range"
    t.add_ref("r", "hello world")
    _, rec = t.extract_to_new_fd("ref:r", mode="char", start=7)
    assert rec["content"] == "world"


# -- ids across reloads and forks ---------------------------------------------
def test_numbering_resumes_after_reload():
    t = FdTable()
    recs = [t.add_fd("a"), t.add_fd("b")]
    fds = {r["id"]: {k: v for k, v in r.items() if k != "t"} for r in recs}
    again = FdTable.from_store({}, fds)
    assert again.add_fd("c")["id"] == "fd:3"


def test_forks_copy_parent_and_never_alias():
    parent = FdTable()
    parent.add_ref("keep", "parent ref")
    p1 = parent.add_fd("parent one")["id"]
    c1 = parent.child("1")
    c2 = parent.child("2")
    a = c1.add_fd("child one content")["id"]
    b = c2.add_fd("child two content")["id"]
    p2 = parent.add_fd("parent two")["id"]
    g = c1.child("1").add_fd("grandchild")["id"]
    ids = [p1, a, b, p2, g]
    assert ids == ["fd:1", "fd:1.1", "fd:2.1", "fd:2", "fd:1.1.1"]
    assert len(set(ids)) == len(ids)
    assert c1.resolve("fd:1") == "parent one" and c1.resolve("ref:keep") == "parent ref"
    assert c2.resolve(b) == "child two content"
    assert err_type(parent.read_fd(a)) == "not_found"  # child's fds stay in the child
    # the child's records, reloaded, keep numbering after its own highest id
    reloaded = FdTable.from_store(
        {}, {r["id"]: r for r in c1.records() if r["t"] == "fd"}, namespace="1")
    assert reloaded.add_fd("x")["id"] == "fd:1.2"
    assert {r["t"] for r in c1.records()} == {"ref", "fd"}


def test_bad_namespace_refused():
    with pytest.raises(ValueError):
        FdTable().child("a.b")


def test_namespace_for_fork_keys_matches_child():
    assert namespace_for_key("main") == ""
    assert namespace_for_key("main::fork::1") == "1"
    assert namespace_for_key("main::fork::1::fork::2") == "1.2"
    parent = FdTable()
    parent.add_fd("p")
    child = parent.child("1").child("2")
    rec = child.add_fd("c")
    reloaded = FdTable.from_store(
        {}, {r["id"]: r for r in child.records() if r["t"] == "fd"},
        namespace=namespace_for_key("main::fork::1::fork::2"))
    assert reloaded.namespace == child.namespace
    assert reloaded.add_fd("d")["id"] == "fd:1.2.2" != rec["id"]
