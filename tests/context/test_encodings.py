"""Offline tiktoken data: placed under tiktoken's cache name, verified, never downloaded."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from selfref_tui.selfref import encodings
from selfref_tui.selfref.encodings import (
    EXPECTED_SHA256,
    cache_file_name,
    encoding_name_for,
    ensure_cache_dir,
    place_encoding,
)


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("openai/gpt-5-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("ft:gpt-3.5-turbo:acme", "cl100k_base"),
        ("llama3.1:8b", "o200k_base"),
        ("", "o200k_base"),
    ],
)
def test_encoding_chosen_by_model(model, name):
    assert encoding_name_for(model) == name


def test_cache_file_name_is_sha1_of_tiktoken_url():
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    assert cache_file_name("o200k_base") == hashlib.sha1(url.encode()).hexdigest()


def test_cache_dir_defaults_when_unset_or_empty(monkeypatch):
    env = {"TIKTOKEN_CACHE_DIR": ""}
    path = ensure_cache_dir(env)
    assert env["TIKTOKEN_CACHE_DIR"] == str(path)
    assert path.name == "tiktoken" and "selfref-tui" in str(path)
    assert ensure_cache_dir({"TIKTOKEN_CACHE_DIR": "/x/y"}) == type(path)("/x/y")


def test_place_writes_verified_file_atomically(tmp_path):
    target = place_encoding("cl100k_base", tmp_path)
    assert target == tmp_path / cache_file_name("cl100k_base")
    data = target.read_bytes()
    assert hashlib.sha256(data).hexdigest() == EXPECTED_SHA256["cl100k_base"]
    assert os.listdir(tmp_path) == [target.name]  # no temp files left behind


def test_damaged_cached_file_is_replaced(tmp_path):
    target = tmp_path / cache_file_name("o200k_base")
    target.write_bytes(b"garbage")
    place_encoding("o200k_base", tmp_path)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == EXPECTED_SHA256["o200k_base"]


def test_intact_cached_file_is_not_rewritten(tmp_path):
    target = place_encoding("o200k_base", tmp_path)
    os.utime(target, (1, 1))
    place_encoding("o200k_base", tmp_path)
    assert target.stat().st_mtime == 1


def test_unknown_encoding_is_refused(tmp_path):
    with pytest.raises(encodings.EncodingUnavailable):
        place_encoding("p50k_base", tmp_path)


def test_fresh_process_loads_with_sockets_forbidden(tmp_path):
    """A new interpreter (so no tiktoken in-memory cache) with every socket call refused."""
    script = textwrap.dedent(
        """
        import json, socket, sys

        class NoSocket(socket.socket):
            def __init__(self, *a, **k):
                raise SystemExit("NETWORK USED: socket")

        def refuse(*a, **k):
            raise SystemExit("NETWORK USED: " + repr(a))

        socket.socket = NoSocket
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from selfref_tui.selfref.encodings import load_encoder

        out = {m: load_encoder(m)("hello world") for m in ("gpt-4o", "gpt-3.5-turbo")}
        print(json.dumps(out))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HTTP", "HTTPS"))}
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"gpt-4o": [24912, 2375], "gpt-3.5-turbo": [15339, 1917]}
    assert sorted(os.listdir(tmp_path / "cache")) == sorted(
        cache_file_name(n) for n in ("o200k_base", "cl100k_base")
    )
