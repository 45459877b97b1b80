"""A damaged key opens with what could be saved, and the person is told (a notification)."""

from __future__ import annotations

import contextlib

from selfref_tui.demo.script import Reply
from selfref_tui.demo.server import DemoServer
from selfref_tui.selfref import SelfReference
from tests.selfref.helpers import turn

from .helpers import SIZE, make_app, started, wait_until


async def test_a_salvaged_key_shows_a_notice_naming_the_kept_original(tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    memory.commit(turn(1))
    memory.commit(turn(2))
    store.close()
    log = memory.log_path
    log.write_bytes(log.read_bytes().replace(b"answer 1", b"answer !"))  # line 3 changed
    async with DemoServer([Reply(text="hi")]) as url:
        app = make_app(tmp_path, url)
        async with app.run_test(size=SIZE) as pilot:
            await started(pilot, app)
            await wait_until(pilot, lambda: app._notifications, what="a notification")
            notes = [str(n.message) for n in app._notifications]
            note = next(n for n in notes if "damaged record" in n)
            assert "line 3" in note and ".damaged-" in note
            severities = {n.severity for n in app._notifications}
            assert "warning" in severities
    kept = list(log.parent.glob("log.jsonl.damaged-*"))
    assert len(kept) == 1 and b"answer !" in kept[0].read_bytes()


async def test_a_data_dir_that_takes_no_writes_says_to_start_read_only(tmp_path):
    from tests.selfref.test_store_cli import denied, make_key, unwritable

    log = make_key(tmp_path)
    async with DemoServer([Reply(text="never")]) as url:
        app = make_app(tmp_path, url)
        with contextlib.ExitStack() as stack:
            for path in unwritable(tmp_path / "data"):
                stack.enter_context(denied(path, 0o500 if path.is_dir() else 0o400))
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.transcript.items_of("error"),
                                 what="error block")
                said = app.transcript.items_of("error")[0].message
                assert str(log.parent) in said
                assert "start selfref-tui with --read-only" in said, said
                assert "--data-dir naming a writable folder" in said, said
