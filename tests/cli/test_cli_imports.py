"""What a command imports: only what it needs, with the same output.

Each command runs in a fresh interpreter (``cli.main``, as ``python -m
selfref_tui`` runs it), which then says which of the modules a command should
not need it had imported. The same command run in this process, where every
module is loaded already, must print the same and exit the same: leaving a
module for later changes nothing a script sees.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selfref_tui.context.mutations import (
    AssistantMessageMutation,
    ExperienceRememberMutation,
    UserMessageMutation,
)
from selfref_tui.selfref.reference import SelfReference
from tests.cli.helpers import ROOT, _env, cli

#: the runtime, the network and the screen: no store command needs them (nor ``filelock``:
#: the writer's lock is an ``fcntl.flock`` of its own, and names its host without ``socket``)
RUNTIME = ("openai", "httpx", "textual", "asyncio", "socket", "selfref_tui.agent",
           "selfref_tui.ui", "filelock")
#: the compile boundary, the summary, the token counter, the ref parser and fd table, the
#: model's file writes: a fold of the log needs none of them
NOT_FOR_A_FOLD = (
    "selfref_tui.context.compile",
    "selfref_tui.context.summary",
    "selfref_tui.context.kept_words",
    "selfref_tui.context.tokens",
    "selfref_tui.refs.parser",
    "selfref_tui.refs.fds",
    "selfref_tui.selfref.files",
)

_PROBE = """
import json, sys
from selfref_tui.cli import main
code = main(json.loads(sys.argv[1]))
sys.stdout.flush()
watched = json.loads(sys.argv[2])
seen = sorted(m for m in watched if m in sys.modules)
print("\\0imported " + json.dumps(seen), file=sys.stderr)
sys.exit(code)
"""


def lean(data: Path, argv: list[str], watched: tuple[str, ...]
         ) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``selfref-tui ARGV`` in a fresh interpreter; its result and which of ``watched``
    it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(watched)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env=_env({"SELFREF_DATA_DIR": str(data)}))
    stderr, _, last = proc.stderr.rpartition("\0imported ")  # the probe's line comes last
    return (subprocess.CompletedProcess(argv, proc.returncode, proc.stdout, stderr),
            json.loads(last))


def here(data: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """The same command in this process, where every module is imported already."""
    return cli(*argv, env={"SELFREF_DATA_DIR": str(data)})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data folder with one conversation of 40 messages, an experience and a ref."""
    folder = tmp_path / "data"
    store = SelfReference(folder)
    memory = store.open("main")
    memory.commit([ExperienceRememberMutation("The person likes short answers.")])
    for i in range(20):
        memory.commit([UserMessageMutation({"role": "user", "content": f"question {i}"}),
                       AssistantMessageMutation(content=f"answer {i}")],
                      records=[{"t": "ref", "id": f"note_{i % 3}", "content": f"note {i}"}])
    store.close()
    return folder


def same(lean_run: subprocess.CompletedProcess, here_run: subprocess.CompletedProcess) -> None:
    assert (lean_run.returncode, lean_run.stdout, lean_run.stderr) == (
        here_run.returncode, here_run.stdout, here_run.stderr)


def test_version_imports_no_store_and_no_context(data: Path) -> None:
    result, imported = lean(data, ["--version"], (*RUNTIME, "selfref_tui.selfref",
                                                  "selfref_tui.safety", "selfref_tui.refs",
                                                  "selfref_tui.context.mutations",
                                                  "msgspec"))
    assert imported == []
    assert result.stdout == "selfref-tui 0.1.0\n"


@pytest.mark.parametrize("argv", [["history", "--json"], ["history"], ["history", "--all"],
                                  ["keys", "list"], ["keys", "list", "--json"],
                                  ["refs", "list"], ["experiences", "list"]])
def test_reading_commands_fold_the_log_without_the_rest(data: Path, argv: list[str]) -> None:
    # a read-only open takes no lock: its module is not imported either
    result, imported = lean(data, argv, (*RUNTIME, *NOT_FOR_A_FOLD, "selfref_tui.selfref.lock"))
    assert imported == []
    same(result, here(data, argv))
    assert result.returncode == 0 and result.stdout


def test_rewind_imports_only_the_fold_and_says_the_same(data: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(data, twin)
    argv = ["rewind", "21"]
    result, imported = lean(data, argv, (*RUNTIME, *NOT_FOR_A_FOLD))
    assert imported == []
    same(result, here(twin, argv))
    assert "rewound conversation 'main' to just before message 21: 20 messages" in result.stdout
    # and its undo, and a branch: the same on both copies, the same modules left out
    for argv in (["rewind", "--undo"], ["branch", "11", "--name", "side"],
                 ["history", "--key", "side", "--json"]):
        result, imported = lean(data, argv, (*RUNTIME, *NOT_FOR_A_FOLD))
        assert imported == [], argv
        same(result, here(twin, argv))
    assert len(json.loads(result.stdout)) == 10


@pytest.mark.parametrize("argv", [["context", "show"], ["context", "show", "--json"]])
def test_context_show_makes_no_http_client_and_shows_the_same_request(data: Path,
                                                                     argv: list[str]) -> None:
    """It sends nothing: the request is planned as for a fresh provider, without ``openai``."""
    result, imported = lean(data, argv, ("openai", "httpx", "textual",
                                         "selfref_tui.agent.provider.client"))
    assert imported == []
    same(result, here(data, argv))
    assert result.returncode == 0 and "answer 19" in result.stdout
