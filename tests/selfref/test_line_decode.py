"""A log line reads the same with the fast JSON decoder as with ``json`` alone: the same
record, or the same reason it is damaged, for good lines and hostile ones."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.selfref import log_lines
from selfref_tui.selfref.checksum import seal_bytes

pytest.importorskip("orjson")  # a dependency; a checkout not installed again since lacks it

#: any character, a lone surrogate included (``json`` writes it as an escape)
chars = st.characters(exclude_categories=())
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(chars, max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(chars, max_size=6), inner, max_size=4),
                      max_leaves=12)
records = st.dictionaries(st.text(chars, max_size=6), values, max_size=5)


def _both(raw: bytes, sealed: bool) -> tuple[str, str]:
    """What a load makes of ``raw`` with the fast decoder, and with ``json`` alone (as text:
    NaN is not equal to itself, and 1 == 1.0 == True)."""
    with mock.patch.object(log_lines, "FAST_FROM", 0):  # a line as if of a long log
        fast = log_lines.parse_line(raw, sealed, log_lines.fast_decoder(raw))
    slow = log_lines.parse_line(raw, sealed)
    return repr(fast), repr(slow)


def _line(record: dict, ascii_only: bool) -> bytes:
    text = json.dumps(record, ensure_ascii=ascii_only, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def test_the_fast_decoder_is_there():
    # a dependency: without it these tests prove nothing
    line = b'{"a":[1,"2"],"b":123456789012345678}\n'
    assert log_lines.fast_decoder(line * (log_lines.FAST_FROM // len(line) + 1)) is not None
    assert log_lines.fast_decoder(line) is None  # a short log: json alone
    long_run = line * (log_lines.FAST_FROM // len(line)) + b'{"a":"1234567890123456789"}\n'
    assert log_lines.fast_decoder(long_run) is None  # 19 digits in a row


def test_a_key_holding_an_integer_past_64_bits_loads_it_whole(tmp_path):
    from selfref_tui.context.mutations import UserMessageMutation
    from selfref_tui.selfref.reference import SelfReference

    message = {"role": "user", "content": "long " * (log_lines.FAST_FROM // 4), "weight": 2**80,
               "tiny": -(2**64)}  # a log long enough for the fast decoder
    with SelfReference(tmp_path) as refs:
        refs.open("main").commit([UserMessageMutation(message)])
    with SelfReference(tmp_path) as refs:
        stored = refs.open("main", write=False).entries()[0].message
    assert stored == message and type(stored["weight"]) is int


@settings(max_examples=300, deadline=None)
@given(records, st.booleans(), st.booleans())
def test_a_record_reads_the_same(record, ascii_only, sealed):
    raw = _line(record, ascii_only)
    if sealed:
        raw = seal_bytes(raw)
    fast, slow = _both(raw, sealed)
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(records, st.binary(max_size=6), st.integers(0, 200), st.booleans())
def test_a_changed_line_is_kept_or_refused_the_same(record, junk, at, sealed):
    """Bytes put into a line (unsealed, so the decoders see it): leading white space, extra
    data, broken UTF-8, a cut string; the same verdict either way."""
    raw = _line(record, False)
    at = min(at, len(raw))
    fast, slow = _both(raw[:at] + junk + raw[at:], sealed)
    assert fast == slow


def test_the_cases_the_fast_decoder_refuses_are_read_as_before():
    cases = [
        b'{"a":"\\ud800"}',  # a lone surrogate's escape: json reads it
        b'{"a":NaN,"b":-Infinity}',
        b'{"a":%d}' % (2**80),
        b'{"a":1} ',  # white space after: kept
        b'{"a":1}\x0b',  # what str.strip() drops but JSON does not call white space
        b' {"a":1}',
        b'{"a":1}{"b":2}',
        b'{"a":"\xff"}',
        b"[" * 5000 + b"]" * 5000,
        b"{" + b'"a":[' * 1020 + b"]" * 1020 + b"}",  # nesting one of them cannot follow
        b'{"a":1,"a":2}',  # the last of a repeated name, in the first one's place
    ]
    for raw in cases:
        fast, slow = _both(raw, False)
        assert fast == slow, raw[:40]
