"""An image's size and token cost, read from its header: never decoded, never believed unbounded."""

from __future__ import annotations

import base64
import io
import struct

import pytest
from PIL import Image

from selfref_tui.context.images import (
    MAX_IMAGE_TOKENS,
    TOKENS_PER_IMAGE,
    data_url,
    image_size,
    image_tokens,
    url_image_size,
)
from selfref_tui.context.tokens import TokenCounter, _cache_key
from tests.hostile_servers.mcp_images import png


def encoded(kind: str, size: tuple[int, int], **options) -> bytes:
    out = io.BytesIO()
    Image.new("RGBA" if kind == "WEBP-X" else "RGB", size, "red").save(
        out, kind.split("-")[0], **options)
    return out.getvalue()


@pytest.mark.parametrize(("kind", "options"), [
    ("PNG", {}), ("GIF", {}), ("WEBP", {}), ("WEBP", {"lossless": True}), ("WEBP-X", {}),
    ("JPEG", {}),
    # EXIF first: the frame header is 60 KB into the file
    ("JPEG", {"exif": (lambda e: (e.__setitem__(0x010E, "x" * 60_000), e.tobytes())[1])(
        Image.Exif())}),
])
@pytest.mark.parametrize("size", [(37, 91), (3000, 17)])
def test_sizes_are_read_from_the_header_of_each_type(kind, options, size):
    data = encoded(kind, size, **options)
    assert image_size(data) == size
    assert url_image_size(data_url("image/whatever", data)) == size


def test_a_data_url_is_not_decoded_past_its_header():
    """A 20 MB image's size costs a few bytes of base64, not 27 MB decoded."""
    head = png(640, 480)[:33]
    url = "data:image/png;base64," + base64.b64encode(head).decode() + "!" * 1_000_000
    assert url_image_size(url) == (640, 480)


@pytest.mark.parametrize("data", [b"", b"#!/bin/sh\n", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff",
                                  b"\xff\xd8" + b"\xff\xe1\xff\xff" * 3, b"RIFF\0\0\0\0WEBPVP8?"])
def test_unreadable_headers_have_no_size(data):
    assert image_size(data) is None
    assert image_tokens(image_size(data)) == TOKENS_PER_IMAGE


def test_token_cost_follows_the_size_and_is_bounded():
    assert image_tokens((2, 2)) == 255  # one tile
    assert image_tokens((1024, 1024)) == 765
    assert image_tokens((768, 2048)) == 1445
    for size in ((65535, 65535), (2**31, 1), (1, 2**31), (4000, 3000)):
        assert image_tokens(size) <= MAX_IMAGE_TOKENS


def test_counter_counts_images_by_their_size_and_keys_them_without_copies():
    counter = TokenCounter()
    tiny = data_url("image/png", png(2, 2))
    big = data_url("image/png", png(2, 2)[:16] + struct.pack(">II", 768, 2048) + png()[24:])
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": tiny}}]}
    framing = counter.count_message({"role": "user", "content": []})
    assert counter.count_message(message) == framing + 255
    message["content"].append({"type": "image_url", "image_url": {"url": big}})
    assert counter.count_message(message) == framing + 255 + 1445
    key = _cache_key(message)
    assert any(value is tiny for part in key[1] for value in part)  # the URL itself, not a copy

