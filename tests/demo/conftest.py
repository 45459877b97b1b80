"""Fail any provider test during which asyncio logged an error (e.g. a server task crash)."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(autouse=True)
def _no_asyncio_errors(caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")
    yield
    errors = [r for r in caplog.get_records("call") + caplog.get_records("teardown")
              if r.name == "asyncio" and r.levelno >= logging.ERROR]
    assert not errors, errors[0].getMessage()
