"""A log line reads the same with the fast JSON decoder as with ``json`` alone: the same
record, or the same reason it is damaged, for good lines and hostile ones."""

from __future__ import annotations

import json
import shutil
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfref_tui.selfref import log_lines
from selfref_tui.selfref.checksum import seal_bytes

pytest.importorskip("msgspec")  # a dependency; a checkout not installed again since lacks it

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
        decoder = log_lines.fast_decoder(raw)
    assert decoder is not None
    fast = log_lines.parse_line(raw, sealed, decoder)
    slow = log_lines.parse_line(raw, sealed)
    return repr(fast), repr(slow)


def _line(record: dict, ascii_only: bool) -> bytes:
    text = json.dumps(record, ensure_ascii=ascii_only, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def test_the_fast_decoder_is_there():
    # a dependency: without it these tests prove nothing
    line = b'{"a":[1,"2"],"b":123456789012345678901234567890}\n'
    assert log_lines.fast_decoder(line * (log_lines.FAST_FROM // len(line) + 1)) is not None
    assert log_lines.fast_decoder(line) is None  # a short log: json alone


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
        b'{"a":%d,"b":-%d}' % (2**80, 2**70),  # integers past 64 bits stay integers
        b'{"a":%s}' % (b"9" * 4300),  # the longest integer json reads
        b'{"a":%s}' % (b"9" * 4301),  # one digit more: too large to read, for both
        b'{"a":1e400,"b":-0.0,"c":5e-324}',
        b'{"a":"\xed\xa0\x80"}',  # a surrogate as UTF-8 bytes: not UTF-8
        b'{"a":"x\ty"}',  # a raw tab in a string
    ]
    for raw in cases:
        fast, slow = _both(raw, False)
        assert fast == slow, raw[:40]


def test_a_line_nested_near_the_limit_is_read_as_json_reads_it():
    """msgspec, called a frame nearer the limit, would read a line or two deeper than
    json: such a line is kept or refused as json decides, at any depth."""
    for depth in range(log_lines._SHALLOW - 2, 1001):
        raw = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
        fast, slow = _both(raw, False)
        assert fast == slow, depth
    assert "nests too deeply" in _both(b'{"a":' + b"[" * 1000 + b"]" * 1000 + b"}", False)[0]


def test_a_long_log_with_damaged_and_odd_lines_loads_as_json_loads_it(tmp_path):
    """A log long enough for the fast decoder, holding lines it refuses (a lone surrogate's
    escape, NaN, an integer past 64 bits, white space after the object) and damaged ones:
    the same messages, and the same lines reported skipped, as read with ``json`` alone."""
    from selfref_tui.context.mutations import UserMessageMutation
    from selfref_tui.selfref.reference import SelfReference
    from selfref_tui.selfref.store import LOG_NAME

    filler = "a long enough message " * 100
    with SelfReference(tmp_path) as refs:
        memory = refs.open("main")
        for i in range(log_lines.FAST_FROM // len(filler) + 10):
            memory.commit([UserMessageMutation({"role": "user", "content": f"{i} {filler}"})])
        log = refs.key_dir("main") / LOG_NAME

    def patch_line(message: object, ts: str = "x") -> bytes:
        text = json.dumps({"t": "m", "ts": ts, "m": {"type": "UserMessageMutation",
                                                     "message": message}},
                          separators=(",", ":"))
        return seal_bytes(text.encode("ascii"))

    odd = [
        patch_line({"role": "user", "content": "lone \ud800 surrogate"}),
        patch_line({"role": "user", "content": "not a number", "score": float("nan")}),
        patch_line({"role": "user", "content": "big", "n": 2**80, "m": -(2**70)}),
        b'{"t":"m","ts":"x","m":{"type":"UserMessageMutation","message":{"role":"user",'
        b'"content":"unsealed"}}}',  # no checksum in a sealed log: damaged
        patch_line({"role": "user", "content": "changed"})[:-3] + b'0"}',  # checksum wrong
        patch_line({"role": "user", "content": "[" * 300}),  # brackets in a text
        patch_line([[["nested"]]] * 200),  # many brackets: read by json alone; a bad patch
    ]
    lines = log.read_bytes().split(b"\n")
    for n, line in enumerate(odd):
        lines.insert(5 + 3 * n, line)
    log.write_bytes(b"\n".join(lines))
    assert log_lines.fast_decoder(log.read_bytes()) is not None

    def load() -> tuple[list, list, list]:
        with SelfReference(tmp_path) as refs:
            memory = refs.open("main", write=False)
            assert memory.salvage is not None
            return (repr(memory.messages), memory.salvage.lines, memory.take_warnings())

    fast = load()
    with mock.patch.object(log_lines, "FAST_FROM", 1 << 62):
        slow = load()
    assert fast == slow
    assert len(fast[1]) == 3  # the unsealed line, the changed one, the bad patch
    assert "lone \\ud800 surrogate" in fast[0] and "'n': 1208925819614629174706176" in fast[0]


def test_a_search_folding_many_short_logs_reads_them_as_a_long_one_and_finds_the_same(
        tmp_path):
    """Logs that are each too short for the fast decoder but add up to ``FAST_FROM``: a
    search reads those after the first megabyte with it, and finds the same messages and
    reports the same damage as with ``json`` alone (odd lines in the last log)."""
    from selfref_tui.context.mutations import UserMessageMutation
    from selfref_tui.selfref import key_load
    from selfref_tui.selfref.conversation_search import ConversationSearch
    from selfref_tui.selfref.reference import SelfReference
    from selfref_tui.selfref.store import LOG_NAME

    filler = "a short log's message " * 40
    per_key = log_lines.FAST_FROM // 3 // len(filler)
    keys = [f"k{k}" for k in range(5)]
    with SelfReference(tmp_path) as refs:
        for key in keys:
            refs.open(key).commit([UserMessageMutation(
                {"role": "user", "content": f"{key} {i} {filler}"}) for i in range(per_key)])
            refs.release(key)
        log = refs.key_dir(keys[-1]) / LOG_NAME
    sizes = [(refs.key_dir(key) / LOG_NAME).stat().st_size for key in keys]
    assert max(sizes) < log_lines.FAST_FROM < sum(sizes)

    def odd(message: object) -> bytes:
        return seal_bytes(json.dumps({"t": "m", "ts": "x", "m": {
            "type": "UserMessageMutation", "message": message}},
            separators=(",", ":")).encode("ascii"))

    lines = log.read_bytes().split(b"\n")
    lines[3:3] = [odd({"role": "user", "content": "short lone \ud800 surrogate"}),
                  odd({"role": "user", "content": "short big", "n": 2**80}),
                  odd({"role": "user", "content": "short changed"})[:-3] + b'0"}']
    log.write_bytes(b"\n".join(lines))

    used: list[bool] = []
    real = key_load.fast_decoder

    def spy(data: bytes) -> object:
        decoder = real(data)
        used.append(decoder is not None)
        return decoder

    def search() -> tuple[list, list]:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)  # every log folded
        with mock.patch.object(key_load, "fast_decoder", spy), \
                ConversationSearch(tmp_path) as found_in:
            found = found_in.search("short", limit=None, keys=keys)
            assert found_in.folded == set(keys)
        return [m.as_dict() for m in found.matches], found.problems

    fast = search()
    sizes = [(tmp_path / "keys" / key / LOG_NAME).stat().st_size for key in keys]
    # each log after the first megabyte, its own included
    assert used == [sum(sizes[:i + 1]) >= log_lines.FAST_FROM for i in range(5)]
    assert used[0] is False and used[-1] is True
    used.clear()
    with mock.patch.object(log_lines, "FAST_FROM", 1 << 62):
        slow = search()
    assert used == [False] * 5
    assert fast == slow
    assert len(fast[0]) == 5 * per_key + 2 and len(fast[1]) == 1  # the changed line
