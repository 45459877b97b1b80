"""Images on the command line: `ask --image`, and `context show` naming them (not base64)."""

from __future__ import annotations

from selfref_tui.context.images import data_url, user_content
from selfref_tui.context.mutations import UserMessageMutation
from selfref_tui.demo import DemoServer, Reply
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import cli, one_line

# a signature and a 2x2 header, then zeros: 3,008 bytes
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes([0, 0, 0, 2, 0, 0, 0, 2])
       + b"\x00" * 2984)


def test_context_show_names_an_image_in_one_line(tmp_path):
    store = SelfReference(tmp_path / "data")
    memory = store.open("main")
    content = user_content("what is this?", [data_url("image/png", PNG)])
    memory.commit([UserMessageMutation({"role": "user", "content": content})])
    store.close()
    shown = cli("context", "show", "--demo")
    assert shown.returncode == 0, shown.stderr
    assert "what is this?\n[image image/png, 3,008 bytes]" in shown.stdout
    assert "base64" not in shown.stdout


def test_ask_sends_images_and_names_a_server_that_refuses_them(tmp_path):
    (tmp_path / "a.png").write_bytes(PNG)
    (tmp_path / "notes.png").write_text("not an image")
    server = DemoServer([Reply(text="A black picture."), Reply(text="never")],
                        models=("m1",), context_window=4096)
    url = server.start_in_thread()  # `ask` runs its own event loop in this thread
    try:
        env = {"OPENAI_API_KEY": "sk-test"}
        result = cli("ask", "--base-url", url, "--model", "m1", "--image",
                     str(tmp_path / "a.png"), "what is it?", env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "A black picture.\n"
        parts = server.requests[0]["messages"][-1]["content"]
        assert parts == [{"type": "text", "text": "what is it?"},
                         {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}]

        result = cli("ask", "--base-url", url, "--model", "m1", "--image",
                     str(tmp_path / "notes.png"), "x", env=env)
        assert result.returncode == 2
        assert "is not a PNG, JPEG, WebP or GIF image" in one_line(result.stderr)
        assert len(server.requests) == 1  # nothing sent

        server.refuse_images = True
        result = cli("ask", "--base-url", url, "--model", "m1", "--image",
                     str(tmp_path / "a.png"), "again", env=env)
        assert result.returncode == 1
        assert "model 'm1' does not accept images — remove the attachment" in result.stderr
    finally:
        server.stop_thread()
