"""Images on the command line: `context show` names them instead of printing base64."""

from __future__ import annotations

from selfref_tui.context.images import data_url, user_content
from selfref_tui.context.mutations import UserMessageMutation
from selfref_tui.selfref.reference import SelfReference
from tests.cli.test_cli import run

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 3000


def test_context_show_names_an_image_in_one_line(tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    content = user_content("what is this?", [data_url("image/png", PNG)])
    memory.commit([UserMessageMutation({"role": "user", "content": content})])
    store.close()
    shown = run("context", "show", "--demo")
    assert shown.returncode == 0, shown.stderr
    assert "what is this?\n[image image/png, 3,008 bytes]" in shown.stdout
    assert "base64" not in shown.stdout
