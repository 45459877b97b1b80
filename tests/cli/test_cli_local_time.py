"""Times people read are on their clock (``TZ``); ``--json`` keeps the stored ISO time.

The commands run with ``TZ`` set to a zone five and a half hours east of UTC,
with no daylight saving (a POSIX rule, no tz database needed), so every stored
UTC time shows 5:30 later: ``history`` as real processes started with it, the
other commands in this process with it set and read again (``time.tzset``, as a
process does when it starts), each a Python start and an import of the runtime
cheaper.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from unittest import mock

from selfref_tui.context.mutations import AssistantMessageMutation, UserMessageMutation
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, run

TZ = {"TZ": "IST-05:30"}
EAST = timezone(timedelta(hours=5, minutes=30))


def _seed() -> None:
    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        store.open("main").commit([
            UserMessageMutation({"role": "user", "content": "what time is it"}),
            AssistantMessageMutation(content="tea time")])


@contextmanager
def _on_that_clock() -> Iterator[None]:
    """This process on :data:`TZ`'s clock, then back on its own."""
    try:
        with mock.patch.dict(os.environ, TZ):
            time.tzset()
            yield
    finally:
        time.tzset()


def _local(iso: str, form: str) -> str:
    return datetime.fromisoformat(iso).astimezone(EAST).strftime(form)


def test_history_search_keys_refs_and_export_show_local_times_and_json_keeps_iso():
    _seed()
    assert cli("ask", "--demo", "show me some code").returncode == 0  # refs, with times
    listed = run("history", "--json", env=TZ)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    stamp = rows[0]["time"]
    stored = datetime.fromisoformat(stamp)
    assert stored.utcoffset() == timedelta(0)  # stored as written: UTC, with its offset
    utc_text = stored.strftime("%Y-%m-%d %H:%M")
    local_text = _local(stamp, "%Y-%m-%d %H:%M")
    assert local_text != utc_text

    text = run("history", env=TZ).stdout
    assert f"#1  user  {_local(stamp, '%Y-%m-%d %H:%M:%S')}" in text
    assert utc_text not in text

    with _on_that_clock():
        found = cli("search", "tea").stdout
        assert f"main #2 assistant {_local(rows[1]['time'], '%Y-%m-%d %H:%M')}  tea time" in found
        searched = json.loads(cli("search", "tea", "--json").stdout)
        assert searched[0]["time"] == rows[1]["time"]

        keys = json.loads(cli("keys", "list", "--json").stdout)
        updated = keys[0]["updated"]
        assert datetime.fromisoformat(updated).utcoffset() == timedelta(0)
        assert _local(updated, "%Y-%m-%d %H:%M") in cli("keys", "list").stdout

        refs = json.loads(cli("refs", "list", "--json").stdout)
        assert datetime.fromisoformat(refs[0]["created"]).utcoffset() == timedelta(0)
        assert _local(refs[0]["created"], "%Y-%m-%d %H:%M") in cli("refs", "list").stdout

        markdown = cli("export").stdout
        assert "## 1 · " in markdown
        assert f"{_local(stamp, '%Y-%m-%d %H:%M:%S')} IST" in markdown
        assert " UTC" not in markdown
        exported = json.loads(cli("export", "--format", "json").stdout)
        assert exported["messages"][0]["time"] == stamp
