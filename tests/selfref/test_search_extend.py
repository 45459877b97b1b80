"""A search cache brought up to date by folding what its log gained equals a load of the whole
log; anything it cannot answer exactly (a rewind, damage, a rewritten log) is folded whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ContextSummaryMutation,
    MultimodalToolResultMutation,
    RewindMutation,
    ToolResultMutation,
    UserMessageMutation,
)
from selfref_tui.selfref import search_cache
from selfref_tui.selfref.conversation_search import ConversationSearch
from selfref_tui.selfref.log_lines import pin_record
from selfref_tui.selfref.reference import SelfReference
from selfref_tui.selfref.search_cache import SearchEntries
from selfref_tui.selfref.search_extend import extend
from selfref_tui.selfref.store import LOG_NAME
from tests.context.strategies import mutations

from .helpers import reading, turn

CALL = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
SEARCH = {"id": "c2", "type": "function",
          "function": {"name": "search_history", "arguments": '{"query": "tea"}'}}


def commit(data: Path, batches, key: str = "main") -> None:
    with SelfReference(data) as store:
        memory = store.open(key)
        for batch in batches:
            if isinstance(batch, dict):
                memory.commit(records=[batch])
            else:
                memory.commit(batch)


def whole(data: Path, key: str = "main") -> SearchEntries:
    """What a load of the whole log gives a search."""
    with reading(data, key) as memory:
        entries = search_cache.from_entries(memory.entries())
    assert entries is not None
    return entries


def columns(entries: SearchEntries) -> tuple:
    return (entries.numbers, entries.roles, entries.times, entries.flags, entries.texts)


def searched(data: Path, key: str = "main"):
    """The entries a search uses, the problems it reported, and whether it folded the
    whole log for them (not: they came from the cache, brought up to date or not); the
    cache is written when the search closes."""
    problems: list[str] = []
    with ConversationSearch(data) as search:
        entries = search._entries_of(key, [], [], problems)
    assert isinstance(entries, SearchEntries)
    return entries, problems, key in search.folded


def cached(data: Path, key: str = "main") -> SearchEntries:
    found = search_cache.read(data, key)
    assert found is not None
    entries = search_cache.parse(*found)
    assert entries is not None
    return entries


def log_of(data: Path, key: str = "main") -> Path:
    return SelfReference(data).key_dir(key) / LOG_NAME


# ------------------------------------------------------------------ properties

batches = st.lists(st.lists(mutations, min_size=1, max_size=3), max_size=6)
pins = st.builds(pin_record, st.integers(1, 6), st.booleans())
rewinds = st.builds(lambda k: [RewindMutation(to_patch=k)], st.integers(0, 12))
earlier = st.lists(st.lists(mutations, min_size=1, max_size=3) | pins | rewinds, max_size=8)
later = st.lists(st.lists(mutations, min_size=1, max_size=3) | pins, min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(earlier, later)
def test_a_cache_brought_up_to_date_equals_a_load_of_the_whole_log(before, after):
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        commit(data, [[UserMessageMutation({"content": "start"})], *before])
        searched(data)  # folds the whole log and keeps the cache
        commit(data, after)
        entries, problems, folded = searched(data)
        assert not problems
        expected = whole(data)
        assert columns(entries) == columns(expected)  # folded whole or not, the same
        # what the search kept is the same again, and goes on from there
        assert columns(cached(data)) == columns(expected)
        commit(data, [turn(99)])
        entries, _, folded = searched(data)
        assert not folded
        assert columns(entries) == columns(whole(data))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(earlier, later, st.integers(0, 12))
def test_a_rewind_after_the_cache_is_folded_whole(before, after, to):
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        commit(data, [[UserMessageMutation({"content": "start"})], *before])
        searched(data)
        commit(data, [*after, [RewindMutation(to_patch=to)]])
        assert extend(cached(data), log_of(data).read_bytes(), log_of(data).parent) is None
        entries, _, folded = searched(data)
        assert folded
        assert columns(entries) == columns(whole(data))


# ------------------------------------------------------------------ cases


def test_plain_turns_are_folded_onto_the_cache(tmp_path):
    commit(tmp_path, [turn(1), turn(2)])
    searched(tmp_path)
    commit(tmp_path, [turn(3), turn(4, "tea for two")])
    entries, _, folded = searched(tmp_path)
    assert not folded  # not folded whole
    assert columns(entries) == columns(whole(tmp_path))
    with ConversationSearch(tmp_path) as search:
        assert [(m.n, m.role) for m in search.search("tea").matches] == [(7, "user")]


def test_a_compaction_after_the_cache_marks_every_working_message_compacted(tmp_path):
    commit(tmp_path, [turn(1), turn(2)])
    searched(tmp_path)
    summary = ContextSummaryMutation({"role": "user", "content": "summary", "compaction": {}})
    commit(tmp_path, [[summary], turn(3)])
    entries, _, folded = searched(tmp_path)
    assert not folded
    assert entries.flags == "222200"
    assert columns(entries) == columns(whole(tmp_path))


def test_results_for_a_block_open_when_cached_are_named_by_its_calls(tmp_path):
    # the recall tools' results are not searched: the name comes from the cached block
    commit(tmp_path, [turn(1, "tea"),
                      [AssistantMessageMutation(content="", tool_calls=[CALL, SEARCH])]])
    searched(tmp_path)
    assert cached(tmp_path).fold["state"]["unresolved"] == ["c1", "c2"]
    commit(tmp_path, [[ToolResultMutation("c2", "#1 user: tea")],
                      [ToolResultMutation("c1", "a tea cup")]])
    entries, _, folded = searched(tmp_path)
    assert not folded
    assert entries.texts[-2:] == ["", "a tea cup"]
    assert columns(entries) == columns(whole(tmp_path))


def test_a_cached_message_that_changes_is_folded_whole(tmp_path):
    commit(tmp_path, [turn(1), [AssistantMessageMutation(content="", tool_calls=[CALL])]])
    searched(tmp_path)
    picture = MultimodalToolResultMutation("c1", "shot", "{}", [{"content": "a picture"}])
    commit(tmp_path, [[picture]])  # takes the call from the cached assistant message
    entries, _, folded = searched(tmp_path)
    assert folded
    assert columns(entries) == columns(whole(tmp_path))


def test_a_cut_last_line_is_left_to_a_load_which_says_so(tmp_path):
    commit(tmp_path, [turn(1)])
    searched(tmp_path)
    commit(tmp_path, [turn(2)])
    log = log_of(tmp_path)
    os.truncate(log, log.stat().st_size - 5)
    assert extend(cached(tmp_path), log.read_bytes(), log.parent) is None
    entries, problems, folded = searched(tmp_path)
    assert folded
    assert problems and "incomplete" in problems[0]
    assert [e.n for e in entries] == [1, 2]


def test_an_unfinished_batch_is_left_to_a_load(tmp_path):
    commit(tmp_path, [turn(1)])
    searched(tmp_path)
    commit(tmp_path, [turn(2)])
    log = log_of(tmp_path)
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]))  # the batch's last line never arrived
    assert extend(cached(tmp_path), log.read_bytes(), log.parent) is None
    entries, problems, folded = searched(tmp_path)
    assert folded and problems and [e.n for e in entries] == [1, 2]


def test_a_damaged_appended_line_is_left_to_a_load(tmp_path):
    commit(tmp_path, [turn(1)])
    searched(tmp_path)
    commit(tmp_path, [turn(2, "green tea")])
    log = log_of(tmp_path)
    data = bytearray(log.read_bytes())
    at = data.rindex(b"green")
    data[at] = ord("G")  # same size, checksum no longer matches
    log.write_bytes(bytes(data))
    entries, problems, folded = searched(tmp_path)
    assert folded
    assert problems and "skipped" in problems[0].lower()
    assert columns(entries) == columns(whole(tmp_path))


def test_damage_before_the_cached_end_is_never_folded_over(tmp_path):
    commit(tmp_path, [turn(1, "black tea"), turn(2)])
    searched(tmp_path)
    log = log_of(tmp_path)
    data = bytearray(log.read_bytes())
    data[data.index(b"black")] = ord("B")  # damage in what the cache was made from
    log.write_bytes(bytes(data))
    with SelfReference(tmp_path) as store:  # a writer salvages, then appends
        store.open("main").commit(turn(3))
    entries, _, folded = searched(tmp_path)
    assert folded
    assert columns(entries) == columns(whole(tmp_path))
    with ConversationSearch(tmp_path) as search:
        assert search.search("black tea").total == 0  # the damaged message is gone


def test_a_log_replaced_under_the_cache_is_folded_whole(tmp_path):
    commit(tmp_path, [turn(1, "oolong"), turn(2)])
    searched(tmp_path)
    # another history, longer, whose lines fall where the cached ones did (a word of the
    # same length): only the CRC of the cached bytes tells them apart
    elsewhere = tmp_path / "elsewhere"
    commit(elsewhere, [turn(1, "sencha"), turn(2), turn(3)])
    replaced = log_of(elsewhere).read_bytes()
    assert len(replaced) > search_cache.read(tmp_path, "main")[0]["fold"]["end"]
    log_of(tmp_path).write_bytes(replaced)
    assert extend(cached(tmp_path), replaced, log_of(tmp_path).parent) is None
    with ConversationSearch(tmp_path) as search:
        assert search.search("oolong").total == 0
        assert search.search("sencha").total == 1


def test_an_image_missing_from_the_store_is_left_to_a_load(tmp_path):
    from selfref_tui.context.images import data_url, user_content
    from selfref_tui.selfref.images import IMAGES_DIR

    commit(tmp_path, [turn(1)])
    searched(tmp_path)
    png = b"\x89PNG\r\n\x1a\n" + b"pixels" * 100
    message = {"role": "user", "content": user_content("see", [data_url("image/png", png)])}
    commit(tmp_path, [[UserMessageMutation(message)]])
    for image in (log_of(tmp_path).parent / IMAGES_DIR).iterdir():
        image.unlink()
    entries, problems, folded = searched(tmp_path)
    assert folded
    assert problems and "missing" in problems[0]
    assert "is missing from the store" in entries[-1].message["content"]


def test_a_garbled_fold_state_is_not_believed(tmp_path):
    commit(tmp_path, [turn(1), [AssistantMessageMutation(content="", tool_calls=[CALL])]])
    searched(tmp_path)
    path = search_cache._path(tmp_path, "main")
    raw = path.read_bytes().replace(b'"insert_at":1', b'"insert_at":"x"', 1)
    assert raw != path.read_bytes()
    path.write_bytes(raw)
    commit(tmp_path, [[ToolResultMutation("c1", "done")]])
    entries, _, folded = searched(tmp_path)
    assert folded
    assert columns(entries) == columns(whole(tmp_path))


def test_kept_columns_survive_gaps_in_the_numbers_and_times_that_come_back(tmp_path):
    commit(tmp_path, [turn(1)])
    key_dir = SelfReference(tmp_path).key_dir("main")
    entries = SearchEntries([1, 2, 3, 5, 6, 9, 10], "uauaaut", ["a", "a", "b", "a", "a", "c",
                                                               "a"], "0012000",
                            ["one", "two", "three", "five", "six", "nine", "ten"])
    search_cache.save(tmp_path, "main", key_dir, search_cache.stamp_of(key_dir), entries)
    assert columns(cached(tmp_path)) == columns(entries)
    counted = SearchEntries(list(range(4, 9)), "uauau", ["t"] * 5, "00000", list("abcde"))
    search_cache.save(tmp_path, "main", key_dir, search_cache.stamp_of(key_dir), counted)
    assert columns(cached(tmp_path)) == columns(counted)


def test_the_crc_kept_is_of_the_bytes_folded_and_none_once_the_log_moved_on(tmp_path):
    import zlib

    commit(tmp_path, [turn(1, "tea " * 150_000), turn(2)])  # a log of several read pieces
    log = log_of(tmp_path)
    data = log.read_bytes()
    stamp = search_cache.stamp_of(log.parent)
    assert len(data) > 2 * search_cache._CRC_PIECE
    for end in (len(data), len(data) - 7, search_cache._CRC_PIECE, 0):
        assert search_cache.log_crc(log.parent, stamp, end) == zlib.crc32(data[:end])
    assert search_cache.log_crc(log.parent, stamp, len(data) + 1) is None  # shorter
    commit(tmp_path, [turn(3)])
    assert search_cache.log_crc(log.parent, stamp, len(data)) is None  # it grew since
