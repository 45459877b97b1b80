"""Key names: validation and the directory-name mapping."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from selfref_tui.selfref import InvalidKeyError, SelfReference, key_dirname, validate_key
from selfref_tui.selfref.keys import MAX_KEY_LENGTH, key_from_dirname

from .helpers import turn

HOSTILE = [
    "",
    "   ",
    "\t",
    "../etc",
    "a/../../b",
    "..",
    "a..b",
    "a/b",
    "a\\b",
    "/abs",
    "C:\\Windows",
    "nul\x00byte",
    "bell\x07",
    "line\nbreak",
    " lead",
    "trail ",
    "x" * (MAX_KEY_LENGTH + 1),
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_with_a_one_line_message(name):
    with pytest.raises(InvalidKeyError) as info:
        validate_key(name)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(("Conversation name", "A conversation name", "The conversation name"))


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_never_reach_the_disk(tmp_path, name):
    store = SelfReference(tmp_path / "data")
    with pytest.raises(InvalidKeyError):
        store.open(name)
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    "name",
    [
        "main",
        "main::fork::1",
        "Main",
        "con",
        "CON",
        "nul.txt",
        ".hidden",
        "end.",
        "ü名前",
        "a b",
        "%41",
        "x" * MAX_KEY_LENGTH,
        "~tilde",
        "é" * MAX_KEY_LENGTH,
    ],
)
def test_valid_names_map_to_safe_directory_names(name):
    assert validate_key(name) == name
    dirname = key_dirname(name)
    assert dirname not in (".", "..")
    assert not dirname.startswith(".") and not dirname.endswith(".")
    assert "/" not in dirname and "\\" not in dirname and ":" not in dirname
    assert len(dirname.encode()) <= 200
    assert dirname.split(".")[0].lower() not in {"con", "prn", "aux", "nul", "com1", "lpt1"}
    assert all(ch.isascii() and (ch.isalnum() or ch in "%_.-~") for ch in dirname)
    decoded = key_from_dirname(dirname)
    assert decoded in (name, None)  # None only for hashed long names
    if len(dirname) < 150:
        assert decoded == name


def test_fork_key_round_trips_through_the_store(tmp_path):
    store = SelfReference(tmp_path)
    store.open("main::fork::1").commit(turn(1))
    store.open("main").commit(turn(2))
    store.close()
    again = SelfReference(tmp_path)
    listed = again.keys()
    assert {info.key for info in listed} == {"main", "main::fork::1"}
    assert again.open("main::fork::1", write=False).messages[-1]["content"] == "answer 1"


keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Cn", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(
    lambda k: k.strip() == k and k.strip() and ".." not in k and "/" not in k and "\\" not in k
)


@given(keys, keys)
def test_distinct_keys_never_share_a_directory_even_case_insensitively(a, b):
    if a != b:
        assert key_dirname(a).casefold() != key_dirname(b).casefold()


def test_rename_keeps_the_history_and_trash_keeps_the_files(tmp_path):
    from selfref_tui.selfref.errors import InvalidKeyError, StoreLockedError
    from selfref_tui.selfref.reference import SelfReference
    from tests.selfref.helpers import turn

    store = SelfReference(tmp_path)
    store.open("old").commit(turn(1))
    store.create("other")
    with pytest.raises(StoreLockedError):
        store.rename("old", "new")  # this instance writes it: refused, nothing moved
    store.release("old")
    with pytest.raises(InvalidKeyError):
        store.rename("old", "other")
    with pytest.raises(InvalidKeyError, match="names the agent's forks"):
        store.rename("old", "other::fork::1")  # a fork's name: hidden, and forks take it
    store.rename("old", "new")
    assert {i.key for i in store.keys()} == {"new", "other"}  # noqa: SIM118
    reopened = SelfReference(tmp_path).open("new")
    assert [m["content"] for m in reopened.history] == ["question 1", "answer 1"]
    reopened.close()
    where = store.trash("new")
    assert where.parent == tmp_path / "trash" and (where / "log.jsonl").exists()
    trashed = sorted(p.name for p in (tmp_path / "trash").iterdir())
    assert len(trashed) == 2  # the renamed key's old folder, then the deleted key
    assert {i.key for i in store.keys()} == {"other"}  # noqa: SIM118


def test_a_closed_store_takes_no_lock_so_a_late_thread_cannot_keep_one(tmp_path):
    """The app's token count runs in a thread; finishing after shutdown closed the store,
    it opened the key again and held its lock: the next window on that key was refused."""
    from selfref_tui.selfref.errors import StoreError
    from selfref_tui.selfref.reference import SelfReference

    first = SelfReference(tmp_path)
    assert first.open("main").writable
    first.close()
    with pytest.raises(StoreError, match="closed"):
        first.open("main")
    assert first.open("main", write=False) is not None  # reading takes no lock
    with SelfReference(tmp_path) as second:
        assert second.open("main").writable  # the lock is free


#: names that look like "main" (or like "main" then "exe.png") and are not
LOOKALIKES = ["ma\u200bin", "main\u200d", "\ufeffmain", "ma\u2060in", "main\u202egnp.exe",
              "main\u2066x\u2069", "ma\u00adin", "main\U000e0001"]


@pytest.mark.parametrize("name", LOOKALIKES)
def test_a_new_name_with_an_invisible_character_is_refused_everywhere(tmp_path, name):
    from selfref_tui.selfref.keys import validate_name

    with pytest.raises(InvalidKeyError, match=r"invisible character \(U\+[0-9A-F]{4,}\)"):
        validate_name(name)
    store = SelfReference(tmp_path / "data")
    store.open("main").commit(turn(1))
    store.release("main")
    for make in (lambda: store.open(name), lambda: store.create(name),
                 lambda: store.rename("main", name), lambda: store.branch("main", 1, name)):
        with pytest.raises(InvalidKeyError, match="invisible character"):
            make()
    assert {i.key for i in store.keys()} == {"main"}  # noqa: SIM118
    store.close()


def test_a_key_that_already_has_an_invisible_character_still_opens(tmp_path):
    """Made before the rule (or by hand): it opens, is listed, and can be renamed away."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    old = "ma\u200bin"
    store = SelfReference(tmp_path)
    write_empty_meta(store.key_dir(old), old, SCHEMA)
    store.open(old).commit(turn(1))
    store.release(old)
    assert {i.key for i in store.keys()} == {old}  # noqa: SIM118
    store.rename(old, "main-2")
    assert {i.key for i in store.keys()} == {"main-2"}  # noqa: SIM118
    store.close()


#: each word of one alphabet, or a space a person types: someone's honest name
HONEST = ["привет", "γεια σου", "日本語", "notes-заметки", "café crème", "Ελληνικά-2",
          "чат 1", "日本語 notes", "naïve", "main chat"]
#: a word that mixes alphabets, or a space that only looks plain
LOOKALIKE_LETTERS = [("m\u0430in", "mixes Latin and Cyrillic letters", r"m\u0430in"),
                     ("hell\u03bf", "mixes Latin and Greek letters", r"hell\u03bf"),
                     ("прив\u0065т", "mixes Latin and Cyrillic letters", r"прив\u0065т"),
                     ("my\u00a0chat", "U+00A0 NO-BREAK SPACE", r"my\u00a0chat"),
                     ("a\u2003b", "U+2003 EM SPACE", r"a\u2003b"),
                     ("a\u3000b", "U+3000 IDEOGRAPHIC SPACE", r"a\u3000b")]


@pytest.mark.parametrize("name", HONEST)
def test_a_name_in_any_one_alphabet_is_made(tmp_path, name):
    from selfref_tui.safety import name_line
    from selfref_tui.selfref.keys import validate_name

    assert validate_name(name) == name
    with SelfReference(tmp_path) as store:
        store.open(name).commit(turn(1))
        assert [i.key for i in store.keys()] == [name]  # noqa: SIM118
    assert name_line(name) == name  # shown as it is: nothing to mark


@pytest.mark.parametrize(("name", "reason", "shown"), LOOKALIKE_LETTERS)
def test_a_name_that_mixes_alphabets_in_a_word_is_refused_and_marked(tmp_path, name, reason,
                                                                     shown):
    from selfref_tui.safety import name_line
    from selfref_tui.selfref.keys import validate_name, write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    with pytest.raises(InvalidKeyError, match=re.escape(reason)):
        validate_name(name)
    with SelfReference(tmp_path) as store:
        with pytest.raises(InvalidKeyError, match=re.escape(reason)):
            store.open(name)
        assert list(store.keys()) == []
        write_empty_meta(store.key_dir(name), name, SCHEMA)  # made before the rule
        store.open(name).commit(turn(1))
        assert [i.key for i in store.keys()] == [name]  # noqa: SIM118
    assert name_line(name) == shown  # the one character that tells it apart, escaped


def test_a_name_made_from_one_with_an_odd_space_gets_a_plain_one():
    """F2 and a branch start from the name: a no-break space in it would be refused."""
    from selfref_tui.selfref.keys import validate_name, without_hidden

    assert validate_name(without_hidden("my\u00a0chat\u200b")) == "my chat"


@pytest.mark.parametrize(("old", "made"), [
    ("m\u0430in", "main"),  # a Cyrillic "а" among Latin letters
    ("hell\u03bf", "hello"),  # a Greek omicron
    ("прив\u0065т", "привет"),  # a Latin "e" in a Cyrillic word: the Cyrillic one
    ("\u03a1aris notes", "Paris notes"),  # a Greek capital rho
    ("ma\u0436in", "main"),  # a letter with no Latin twin is left out
    ("ma\u200bin\u00a0chat", "main chat"),
    ("notes-заметки", "notes-заметки"),  # a word in each alphabet: as it is
])
def test_a_name_made_from_one_that_mixes_alphabets_is_in_one(tmp_path, old, made):
    """F2 starts from the name and a branch suggests "<name>-branch-1": of "m\\u0430in"
    both kept the Cyrillic letter, so Enter was refused for a letter the person cannot
    tell from the Latin one."""
    from selfref_tui.selfref.keys import validate_name, without_hidden

    assert without_hidden(old) == made
    assert validate_name(f"{without_hidden(old)}-branch-1") == f"{made}-branch-1"
    with SelfReference(tmp_path) as store:
        store.open(f"{made}-branch-1").commit(turn(1))


def test_a_refusal_naming_a_lookalike_conversation_shows_its_telling_letter(tmp_path):
    """The lists show "m\\u0430in"; an error about it said 'mаin', which reads as 'main'."""
    from selfref_tui.selfref.keys import write_empty_meta
    from selfref_tui.selfref.log_lines import SCHEMA

    mixed = "m\u0430in"
    with SelfReference(tmp_path) as store:
        store.open("main").commit(turn(1))
        write_empty_meta(store.key_dir(mixed), mixed, SCHEMA)
        store.open(mixed).commit(turn(1))
        store.release(mixed)
        with pytest.raises(InvalidKeyError) as error:
            store.branch(mixed, 9, "other")
        assert "conversation 'm\\u0430in'" in str(error.value), error.value
        assert mixed not in str(error.value)


@pytest.mark.parametrize("how", ["trash", "rename"])
def test_a_trash_folder_that_is_a_link_is_refused_and_nothing_moves(tmp_path, how):
    """The data folder is input: a link planted at ``trash`` moved a deleted (or renamed)
    conversation's folder into wherever it led, out of the data folder. Refused in one
    line now, before anything is copied or moved."""
    from selfref_tui.selfref.errors import UnsafeStoreFileError
    from selfref_tui.selfref.reference import SelfReference
    from tests.selfref.helpers import turn

    data = tmp_path / "data"
    with SelfReference(data) as store:
        store.open("old").commit(turn(1))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (data / "trash").symlink_to(elsewhere, target_is_directory=True)
    store = SelfReference(data)
    with pytest.raises(UnsafeStoreFileError) as refused:
        store.trash("old") if how == "trash" else store.rename("old", "new")
    assert f"{data / 'trash'} is a symbolic link" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert list(elsewhere.iterdir()) == []
    assert {i.key for i in store.keys()} == {"old"}  # noqa: SIM118
