"""The suite's own set-up: the files it hands out first are still there."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import SLOWEST_FIRST

ROOT = Path(__file__).resolve().parent.parent


def test_the_slowest_files_named_first_exist():
    missing = [path for path in SLOWEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"tests/conftest.py SLOWEST_FIRST names files that are gone: {missing}"
