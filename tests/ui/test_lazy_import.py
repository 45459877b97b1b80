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


def test_importing_the_app_leaves_the_runtime_and_markdown_for_later() -> None:
    """The first frame has nothing to show with these; ~120 ms of imports wait."""
    code = textwrap.dedent(
        """
        import sys
        import selfref_tui.ui.app
        heavy = [
            "selfref_tui.agent.events",
            "selfref_tui.context",
            "selfref_tui.refs",
            "selfref_tui.ui.widgets.fork_panel",
            "textual.widgets._markdown",
            "markdown_it",
            "openai",
            "tiktoken",
            "PIL",
        ]
        print(",".join(m for m in heavy if m in sys.modules))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == ""
