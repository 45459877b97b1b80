"""The first frame's import diet: what it leaves out stays out, and comes when used."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from selfref_tui.ui.lazy_import import LazyModule

ROOT = Path(__file__).resolve().parents[2]


def _probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    """A fresh module ``name`` on the path, not imported yet."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_lazy_module_imports_on_first_read_and_keeps_the_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probe(tmp_path, monkeypatch, "lazy_probe_mod", "LOADS = []\nLOADS.append(1)\nVALUE = 42\n")
    lazy = LazyModule("lazy_probe_mod")
    assert "lazy_probe_mod" not in sys.modules
    assert lazy.VALUE == 42
    assert "lazy_probe_mod" in sys.modules
    assert "VALUE" in vars(lazy)  # kept: the next read does not go through __getattr__
    assert lazy.LOADS == [1]  # imported once


def test_lazy_module_does_not_import_for_dunder_probes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probe(tmp_path, monkeypatch, "lazy_probe_dunder", "X = 1\n")
    lazy = LazyModule("lazy_probe_dunder")
    assert not hasattr(lazy, "__wrapped__")
    assert "lazy_probe_dunder" not in sys.modules
    assert "lazy_probe_dunder" in repr(lazy)


def test_a_missing_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        _ = LazyModule("json").no_such_name


#: what the first frame has no use for, and what each would cost it: the runtime and its
#: client (openai ~0.5 s with pydantic and httpx), tokens (tiktoken), MCP (the SDK,
#: anyio), images (Pillow), Markdown and code (markdown-it, Pygments, rich's Syntax,
#: Textual's Markdown), the store, the fork panel, and the slash-command table
HEAVY = (
    "openai",
    "httpx",
    "httpx2",
    "pydantic",
    "anyio",
    "tiktoken",
    "mcp",
    "PIL",
    "markdown_it",
    "pygments",
    "rich.syntax",
    "rich.markdown",
    "textual.widgets._markdown",
    "selfref_tui.agent.events",
    "selfref_tui.agent.turn.loop",
    "selfref_tui.agent.provider.client",
    "selfref_tui.agent.mcp",
    "selfref_tui.context",
    "selfref_tui.refs",
    "selfref_tui.selfref",
    "selfref_tui.ui.widgets.fork_panel",
    "selfref_tui.ui.commands",
    "selfref_tui.ui.command_handlers",
    "concurrent.futures.thread",
)


def _imported(code: str) -> list[str]:
    """Which of :data:`HEAVY` a fresh interpreter running ``code`` had imported by the
    time ``code`` put ``sys.modules`` in ``seen`` (or by its end)."""
    probe = "import sys\nseen = None\n" + textwrap.dedent(code) + textwrap.dedent(
        f"""
        heavy = {HEAVY!r}
        print(",".join(m for m in heavy if m in (seen or sys.modules)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return [name for name in out.stdout.strip().split(",") if name]


def test_importing_the_app_leaves_the_heavy_modules_for_later() -> None:
    """``import selfref_tui.ui.app`` alone pulls in none of them."""
    assert _imported("import selfref_tui.ui.app\n") == []


def test_the_first_frame_is_drawn_without_the_heavy_modules() -> None:
    """Nor do compose and on_mount: the app's own first frame (as bench/startup_bench.py
    marks it) is drawn before any of them is imported; the runtime comes after it."""
    code = """
        import tempfile
        from selfref_tui.config import AppConfig, ProviderConfig
        from selfref_tui.ui.app import SelfRefApp

        class FirstFrame(SelfRefApp):
            def on_mount(self):
                # queued before the app's own on_mount queues the start-up worker
                self.call_after_refresh(self.first_frame)
                super().on_mount()

            def first_frame(self):
                global seen
                seen = set(sys.modules)
                self.exit()

            def boot(self):
                pass  # the runtime's imports, which come after the frame, are not the point

        provider = ProviderConfig(base_url="http://127.0.0.1:9/v1", api_key="x", model="m")
        with tempfile.TemporaryDirectory() as data_dir:
            FirstFrame(AppConfig(provider=provider, data_dir=data_dir, key="main")).run(
                headless=True, size=(120, 40)
            )
    """
    assert _imported(code) == []
