"""Context test fixtures: one offline tiktoken load per session (it takes ~0.3 s)."""

from __future__ import annotations

import socket

import pytest


class NetworkUsed(AssertionError):
    pass


def _refuse(*args, **kwargs):
    raise NetworkUsed("a test tried to open a network connection")


class _NoSocket(socket.socket):
    def __init__(self, *args, **kwargs):
        _refuse()


@pytest.fixture(scope="session")
def offline_encoders(tmp_path_factory):
    """``{"o200k_base": encode, "cl100k_base": encode}`` loaded with sockets forbidden."""
    from selfref_tui.selfref.encodings import load_encoder

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        mp.setattr(socket, "socket", _NoSocket)
        mp.setattr(socket, "create_connection", _refuse)
        mp.setattr(socket, "getaddrinfo", _refuse)
        encoders = {
            "o200k_base": load_encoder("gpt-4o"),
            "cl100k_base": load_encoder("gpt-4"),
        }
    return encoders
