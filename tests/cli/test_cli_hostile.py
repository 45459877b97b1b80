"""The command line against a hostile model: nothing it sends drives the person's terminal.

A real ``ask`` talks over real HTTP to the in-package server scripted with the
hostile corpus (answer text, a ref, an experience, a tool name, an error
message). Output to a terminal is read through a real pseudo-terminal; output
into a pipe must stay exact where it is content (``refs show``) and be
JSON-escaped under ``--json``. Notes and errors are inert everywhere, and no
key, bearer token or URL userinfo reaches them.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import tty

import pytest

from selfref_tui.demo import DemoServer, HttpError, Reply
from selfref_tui.demo.script import ToolCall
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import ROOT, _env, cli, run
from tests.hostile import CORPUS, ESC, assert_inert

#: every hostile string, one per line, then a ref holding all of them again
HOSTILE = "\n".join(text for _name, text in CORPUS)
ANSWER = f"Here it is:\n{HOSTILE}\n<ref id=\"evil\">\n{HOSTILE}\n</ref>\nend"
TOOL_NAME = "[@click=app.screenshot('x.svg','/tmp')]SHOT[/]\x1b]0;title\x07"


def run_tty(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``selfref-tui ARGS`` with stdout on a real pseudo-terminal (raw: no \\n → \\r\\n)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen([sys.executable, "-m", "selfref_tui", *args], stdout=slave,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=_env(env),
                            cwd=ROOT)
    os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                raise TimeoutError("no output from the command within 60 s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the command closed its end
                break
            if not data:
                break
            chunks.append(data)
        err = proc.stderr.read() if proc.stderr else b""
        code = proc.wait(60)
    finally:
        os.close(master)
        if proc.stderr:
            proc.stderr.close()
    return code, b"".join(chunks).decode(), err.decode()


@pytest.fixture
def hostile_key(tmp_path):
    """A store whose key ``main`` holds a hostile answer, ref, experience and tool call."""
    server = DemoServer([
        Reply(tool_calls=[ToolCall("remember", {"text": f"exp {HOSTILE}"}),
                          ToolCall(TOOL_NAME, {"x": ESC})]),
        Reply(text=ANSWER),
    ])
    url = server.start_in_thread()
    try:
        result = cli("ask", "--base-url", url, "--model", "m", "hi",
                     env={"OPENAI_API_KEY": "sk-unused-here"})
    finally:
        server.stop_thread()
    assert result.returncode == 0, result.stderr
    # into a pipe, the answer is the model's text as it was sent
    assert HOSTILE in result.stdout
    assert_inert(result.stderr)  # the tool note names a hostile tool: shown, not sent
    assert "[tool] [@click=app.screenshot" in result.stderr and "␛]0;title" in result.stderr
    return tmp_path


def test_ask_on_a_terminal_shows_controls_and_notes_are_always_inert():
    server_script = [Reply(tool_calls=[ToolCall(TOOL_NAME, {})]), Reply(text=ANSWER)]

    async def go() -> tuple[int, str, str]:
        async with DemoServer(server_script) as url:
            import asyncio

            return await asyncio.to_thread(run_tty, "ask", "--base-url", url, "--model", "m",
                                           "again", env={"OPENAI_API_KEY": "k"})

    import asyncio

    code, out, err = asyncio.run(go())
    assert code == 0, err
    assert_inert(out)
    assert_inert(err)
    assert "␛]52;c;cm0gLXJmIH4=␇" in out  # the clipboard write is visible, not performed
    assert "[@click=app.quit]ERR[/]" in out


def test_a_hostile_store_read_back(hostile_key, tmp_path):
    """One store, every way of reading it (the pipe and the terminal through real processes)."""
    from selfref_tui.refs.export import export_plan

    with SelfReference(os.environ["SELFREF_DATA_DIR"]) as store:
        stored = store.open("main", write=False).refs["evil"][-1]["content"]
    assert HOSTILE in stored

    # refs show into a pipe: byte-exact, it is the content (a newline added if it lacks one)
    piped = subprocess.run([sys.executable, "-m", "selfref_tui", "refs", "show", "evil"],
                           capture_output=True, env=_env(), cwd=ROOT, timeout=60)
    assert piped.returncode == 0
    assert piped.stdout.decode() == stored + ("" if stored.endswith("\n") else "\n")

    # on a terminal: every listing shows the characters instead of sending them
    for args in (("refs", "show", "evil"), ("refs", "list"), ("experiences", "list"),
                 ("keys", "list"), ("context", "show"), ("search", "pwned"), ("export",)):
        code, out, err = run_tty(*args)
        assert code == 0, (args, err)
        assert_inert(out)
        if args[0] in ("experiences", "context", "search", "export") or args[1] == "show":
            assert "␛]0;pwned title␇" in out, args  # visible: something was there

    # --json: control characters as \u escapes, the values themselves unchanged
    for args in (("refs", "list", "--json"), ("experiences", "list", "--json"),
                 ("context", "show", "--json"), ("search", "pwned", "--json"),
                 ("export", "--format", "json")):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        assert_inert(result.stdout)
        assert "\u202e" not in result.stdout
        value = json.loads(result.stdout)
        if args[0] == "experiences":
            assert value[0]["text"] == f"exp {HOSTILE}"
        if args[0] == "context":
            assert any(HOSTILE in (m.get("content") or "") for m in value["messages"])

    # an exported file is the ref's content, as the person's export always writes it
    target = tmp_path / "evil.txt"
    result = cli("refs", "export", "evil", str(target))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes().decode() == export_plan("evil", stored).content
    assert_inert(result.stdout + result.stderr)


def test_server_errors_are_inert_and_hold_no_secret(tmp_path):
    key = "sk-live-0123456789abcdefSECRET"
    hostile_error = "[@click=app.quit]ERR[/] \x1b]52;c;Zm9v\x07 \x9b2J"

    def script(body: dict, index: int):
        auth = server.headers[-1].get("authorization", "")
        if body["messages"][-1]["content"] == "one":  # a proxy echoing the request's header
            return HttpError(400, f"{hostile_error} rejected header Authorization: {auth}")
        return HttpError(400, f"bad credential {auth.split()[-1]} for {body['messages'][-1]}")

    server = DemoServer(script)
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": key}
        first = cli("ask", "--base-url", url, "--model", "m", "one", env=env)
        second = cli("ask", "--base-url", url, "--model", "m", "two", env=env)
        userinfo = url.replace("http://", "http://alice:hunter2pass@")
        third = cli("ask", "--base-url", userinfo, "--model", "m", "three", env=env)
    finally:
        server.stop_thread()
    for result in (first, second, third):
        assert result.returncode == 1
        err = result.stderr
        assert_inert(err)
        assert key not in err and "hunter2pass" not in err and "alice" not in err
    assert "[@click=app.quit]ERR[/]" in first.stderr and "␛]52;c;" in first.stderr
    assert "***" in first.stderr and "***" in second.stderr
    assert "http://***@127.0.0.1" in third.stderr


def test_an_answer_holding_half_a_surrogate_pair_does_not_stop_the_next_turns(tmp_path):
    """JSON may escape one half of a surrogate pair (``"\\ud83d"``, an emoji cut in two):
    the answer then holds a lone surrogate, which UTF-8 cannot encode. Every later
    request carries that answer; it is sent JSON-escaped as it arrived, and the
    conversation goes on."""
    server = DemoServer([Reply(text="half an emoji: \ud83d, then more"),
                         Reply(text="still here")])
    url = server.start_in_thread()
    try:
        env = {"OPENAI_API_KEY": "sk-unused-here"}
        first = cli("ask", "--base-url", url, "--model", "m", "one", env=env)
        second = cli("ask", "--base-url", url, "--model", "m", "two", env=env)
    finally:
        server.stop_thread()
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert second.stdout == "still here\n"
    sent = server.requests[-1]["messages"]
    assert {"role": "assistant", "content": "half an emoji: \ud83d, then more"} in [
        {k: m.get(k) for k in ("role", "content")} for m in sent]


def _stored_answer(text: str) -> None:
    """One ``ask`` whose answer (``text``) the store keeps in ``main``."""
    server = DemoServer([Reply(text=text)])
    url = server.start_in_thread()
    try:
        asked = cli("ask", "--base-url", url, "--model", "m", "one",
                    env={"OPENAI_API_KEY": "sk-unused-here"})
    finally:
        server.stop_thread()
    assert asked.returncode == 0, asked.stderr


def test_a_stored_lone_surrogate_is_printed_as_its_escape_into_a_pipe_and_a_terminal(tmp_path):
    """UTF-8 has no bytes for a lone surrogate: into a pipe whose encoding is strict (a
    UTF-8 desktop locale) `history` stopped with a traceback; on a terminal whose
    output escapes surrogates (the C.UTF-8 locale) ``\\udc9b`` went out as the raw
    byte 0x9b, a C1 CSI."""
    said = "half an emoji \ud83d and a byte \udc9b31m red"
    _stored_answer(said)
    strict = {"PYTHONIOENCODING": "utf-8"}
    shown = run("history", env=strict)
    assert shown.returncode == 0, shown.stderr
    assert "half an emoji \\ud83d and a byte \\udc9b31m red" in shown.stdout
    as_json = run("history", "--json", env=strict)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)[-1]["content"] == said
    code, out, err = run_tty("history", env={"PYTHONIOENCODING": "utf-8:surrogateescape"})
    assert code == 0, err
    assert "\\ud83d and a byte \\udc9b31m red" in out  # decoded strictly: no raw byte in it


def test_a_stored_lone_surrogate_is_exported_as_its_escape(tmp_path):
    """A conversation or ref holding half an emoji's pair is written to a file with the
    half as its escape: UTF-8 has no bytes for it, and the export wrote nothing ("the
    content is not valid text") while the same conversation as JSON could be kept."""
    _stored_answer('cut \ud83d here <ref id="half">a \ud83d b</ref>')
    for args, name in ((("export", "-o"), "conversation.md"),
                       (("refs", "export", "half"), "ref.md")):
        target = tmp_path / name
        written = cli(*args, str(target))
        assert written.returncode == 0, written.stderr
        assert "a \\ud83d b" in target.read_bytes().decode("utf-8")
    assert "cut \\ud83d here" in (tmp_path / "conversation.md").read_text()
