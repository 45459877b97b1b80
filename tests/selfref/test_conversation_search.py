"""Searching every conversation: the recall tools' rule, and keys never loaded needlessly."""

from __future__ import annotations

import pytest

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref.conversation_search import ConversationSearch
from selfref_tui.selfref.reference import SelfReference


def _say(data_dir, key: str, *texts: str) -> None:
    with SelfReference(data_dir) as store:
        memory = store.open(key)
        for text in texts:
            memory.commit([UserMessageMutation({"role": "user", "content": text}),
                           AssistantMessageMutation(content="ok")])


def test_a_key_whose_log_lacks_a_word_is_not_loaded(tmp_path):
    data = tmp_path / "data"
    _say(data, "tea", "Green tea, please.\nWith \"milk\"?")
    _say(data, "coffee", "Black coffee.")
    with ConversationSearch(data) as search:
        found = search.search("GREEN tea")
        assert [(m.key, m.n) for m in found.matches] == [("tea", 1)]
        assert list(search._entries) == ["tea"]  # coffee was only looked at as bytes
        # a phrase across a line break, and words JSON escapes, still match
        assert search.search('"please. with"').total == 1
        assert search.search('"milk"?').total == 1


def test_the_letters_that_fold_to_ascii_turn_the_shortcut_off(tmp_path):
    data = tmp_path / "data"
    _say(data, "lab", "It was 300\u212a inside, at \u0130zmir, in the Hauptstra\u00dfe.")
    for _ in range(2):  # from the log, then from the cache: the same rule
        with ConversationSearch(data) as search:
            assert search.search("300k").total == 1  # the Kelvin sign folds to k
            for query in ("izmir", "\u0130ZMIR", "IZMIR", "hauptstrasse", "HAUPTSTRASSE",
                          "hauptstra\u00dfe", "HAUPTSTRA\u1e9eE"):
                found = search.search(query)
                assert found.total == 1, query
                assert found.matches[0].snippet.startswith("It was 300")


def test_non_ascii_words_are_found_by_loading(tmp_path):
    data = tmp_path / "data"
    _say(data, "fr", "Un café crème.")
    with ConversationSearch(data) as search:
        assert [m.snippet for m in search.search("CAFÉ").matches] == ["Un café crème."]


def test_an_unchanged_conversation_is_read_from_the_cache_and_a_changed_one_folded(tmp_path):
    from selfref_tui.selfref import search_cache

    data = tmp_path / "data"
    _say(data, "tea", "Green tea.", "More tea.")
    with ConversationSearch(data) as search:
        first = search.search("tea")
    key_dir = SelfReference(data).key_dir("tea")
    cached = search_cache.load(data, "tea", key_dir)
    assert [(e.n, e.role) for e in cached] == [(1, "user"), (2, "assistant"), (3, "user"),
                                               (4, "assistant")]
    with ConversationSearch(data) as search:
        assert search.search("tea") == first  # the same answer, from the cache
    _say(data, "tea", "Tea again.")
    assert search_cache.load(data, "tea", key_dir) is None  # the log changed
    with ConversationSearch(data) as search:
        assert search.search("tea").total == 3
    # a cache that is garbage, or names another key, is not believed
    path = search_cache._path(data, "tea")
    path.write_bytes(b"garbage\n\n")
    assert search_cache.load(data, "tea", key_dir) is None
    with ConversationSearch(data) as search:
        assert search.search("tea").total == 3


def test_words_the_fold_writes_are_found_before_and_after_the_cache(tmp_path):
    """A log's bytes lack what the fold writes (a call's "no result" reply, a cancel's
    words, the note before a tool's images, texts joined from parts): such words never
    rule a key out, so a first search finds what a cached one does."""
    import shutil

    from selfref_tui.context.mutations import (
        MultimodalToolResultMutation,
        ToolCancelledMutation,
        ToolResultMutation,
    )

    call = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    parts = [{"type": "text", "text": "earl"}, {"type": "text", "text": "grey"}]
    with SelfReference(tmp_path) as store:
        memory = store.open("tea")
        memory.commit([UserMessageMutation({"role": "user", "content": "go"}),
                       AssistantMessageMutation(content="", tool_calls=[call])])
        memory.commit([UserMessageMutation({"role": "user", "content": "next"})])
        memory.commit([ToolCancelledMutation("c9", "brew", "too hot")])
        memory.commit([ToolResultMutation("c7", "an orphan")])
        memory.commit([MultimodalToolResultMutation("c8", "snap", '{"x": 1}',
                                                    [{"content": "pixels"}])])
        memory.commit([UserMessageMutation({"role": "user", "content": parts})])
    queries = ["recorded", "brew'", "hot).", "unknown_tool", "snap({", "called", "earlgrey"]
    first = {}
    for query in queries:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        with ConversationSearch(tmp_path) as search:
            first[query] = search.search(query).total
    with ConversationSearch(tmp_path) as search:
        search.search("go")  # folds the key and keeps the cache
    with ConversationSearch(tmp_path) as search:
        assert {query: search.search(query).total for query in queries} == first
    assert all(first.values()), first


def test_a_phrase_matches_across_runs_of_white_space_before_and_after_words(tmp_path):
    """A phrase reads every run of white space in a message as one space: it finds the same
    messages whether words were searched before it or not, from the log or the cache."""
    data = tmp_path / "data"
    _say(data, "notes", "The blue\n\nbutton.", "A  blue \t button!", "blue, then button")
    for _ in range(2):  # folded from the log, then read from the cache
        with ConversationSearch(data) as search:
            assert search.search("blue button").total == 3
            assert [m.n for m in search.search('"blue button"').matches] == [3, 1]
            assert search.search("button").total == 3
            assert search.search('"  BLUE   button "').total == 2
        with ConversationSearch(data) as search:  # a phrase first
            assert [m.n for m in search.search('"blue button"').matches] == [3, 1]


def test_a_letter_that_folds_to_ascii_is_seen_among_many_other_escapes(tmp_path):
    """A log escapes every non-ASCII letter; past the escapes read one by one, each
    letter that folds to ASCII is looked for on its own, and still turns the shortcut off."""
    data = tmp_path / "data"
    _say(data, "ru", "д" * 120_000 + " Straße " + "ж" * 1_000)
    _say(data, "en", "Strasse")
    with ConversationSearch(data) as search:
        assert {m.key for m in search.search("STRASSE").matches} == {"ru", "en"}
        assert search.search("nowhere").total == 0


def test_words_met_only_late_and_in_capitals_still_load_the_key(tmp_path):
    """A log's first part is looked at as it is for the query's words before the whole is
    lower-cased: a word met there as typed is enough, one met only later, or only in
    capitals, is still found, and a word met nowhere still rules the key out."""
    from selfref_tui.selfref.conversation_search import _HEAD_FROM

    data = tmp_path / "data"
    filler = "filler " * (_HEAD_FROM // 7 // 20)
    _say(data, "long", "alpha early", *(filler for _ in range(40)), "ALPHA and OMEGA")
    assert (SelfReference(data).key_dir("long") / "log.jsonl").stat().st_size > _HEAD_FROM
    for _ in range(2):  # from the log, then from the cache
        with ConversationSearch(data) as search:
            assert [m.n for m in search.search("alpha omega").matches] == [83]
            assert [m.n for m in search.search("alpha").matches] == [83, 1]
        with ConversationSearch(data) as search:
            assert search.search("alpha zeta").total == 0
            assert not search._entries  # only looked at as bytes


def test_a_cache_cut_short_is_never_believed(tmp_path):
    """A cache is not fsynced: after a power loss it may end anywhere, even inside its last
    text, where its counts still agree. It is folded again, and the answer is the same."""
    from selfref_tui.selfref import search_cache

    data = tmp_path / "data"
    _say(data, "tea", "Green tea.", "Earl grey tea, strong.")
    with ConversationSearch(data) as search:
        answer = search.search("tea strong")
    assert answer.total == 1
    key_dir = SelfReference(data).key_dir("tea")
    path = search_cache._path(data, "tea")
    whole = path.read_bytes()
    assert search_cache.load(data, "tea", key_dir) is not None
    for cut in range(len(whole)):
        path.write_bytes(whole[:cut])
        assert search_cache.load(data, "tea", key_dir) is None, cut
        with ConversationSearch(data) as search:
            assert search.search("tea strong") == answer, cut
        assert path.read_bytes() == whole  # written again, whole


@pytest.mark.parametrize("planted", ["cache", "cache/search"])
def test_a_cache_folder_that_is_a_link_is_neither_written_nor_read_through(tmp_path, planted):
    """The data folder is input: a link planted at ``cache`` or ``cache/search`` made every
    search replace ``<key>.txt`` (made private) in the folder it led to, and read a cache
    from there. The search still answers; nothing there is written or believed."""
    from selfref_tui.selfref import search_cache

    data = tmp_path / "data"
    _say(data, "tea", "Green tea.")
    with ConversationSearch(data) as search:
        assert search.search("green").total == 1
    real = search_cache._path(data, "tea")
    made = real.read_bytes()  # a cache as this search writes it, to plant elsewhere
    (data / "cache").rename(tmp_path / "cache-was")
    elsewhere = tmp_path / "notes"
    folder = elsewhere / "search" if planted == "cache" else elsewhere
    folder.mkdir(parents=True)
    mine = folder / real.name
    mine.write_text("my own notes\n")
    link = data / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere, target_is_directory=True)
    with ConversationSearch(data) as search:
        assert search.search("green").total == 1
    assert mine.read_text() == "my own notes\n"
    assert sorted(p.name for p in folder.iterdir()) == [real.name]
    mine.write_bytes(made)  # a cache that would be believed, if read through the link
    assert search_cache.load(data, "tea", SelfReference(data).key_dir("tea")) is None
