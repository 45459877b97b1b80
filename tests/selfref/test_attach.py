"""Reading an image to attach: the type from its bytes, and every refusal one clear line."""

from __future__ import annotations

import os

import pytest

from selfref_tui.selfref.attach import AttachError, read_image
from tests.hostile import assert_inert

# each a signature and a header naming a size (2x2), then zeros
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes([0, 0, 0, 2, 0, 0, 0, 2]) + b"\x00" * 32
KINDS = {
    "a.png": (PNG, "image/png"),
    "b.jpg": (b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x02\x00\x02" + b"\x00" * 32, "image/jpeg"),
    "c.webp": (b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 10 + b"\x02\x00\x02\x00"
               + b"\x00" * 8, "image/webp"),
    "d.gif": (b"GIF89a\x02\x00\x02\x00" + b"\x00" * 32, "image/gif"),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_four_types_are_known_by_their_bytes(tmp_path, name):
    data, mime = KINDS[name]
    (tmp_path / name).write_bytes(data)
    image = read_image(str(tmp_path / name))
    assert (image.name, image.mime, image.data) == (name, mime, data)
    assert image.url.startswith(f"data:{mime};base64,")


def test_refusals_name_the_path_and_what_to_do(tmp_path):
    (tmp_path / "notes.png").write_text("#!/bin/sh\necho not an image\n")
    # only a signature: the model's server would refuse it after sending, as MCP's are
    (tmp_path / "start.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    os.mkfifo(tmp_path / "pipe.png")
    big = tmp_path / "huge.png"
    with open(big, "wb") as fh:
        fh.write(PNG)
        fh.truncate(21 * 1024 * 1024)  # sparse: refused by its size, never read
    cases = {
        str(tmp_path / "missing.png"): "No file at",
        str(tmp_path): "is a folder",
        str(tmp_path / "notes.png"): "is not a PNG, JPEG, WebP or GIF image",
        str(tmp_path / "start.png"): "is not a PNG, JPEG, WebP or GIF image",
        str(tmp_path / "pipe.png"): "is not a regular file",  # and opening it did not block
        str(big): "is 21.0 MB; images up to 20.0 MB can be attached",
        "   ": "Usage: /attach PATH",
    }
    for path, said in cases.items():
        with pytest.raises(AttachError) as caught:
            read_image(path)
        message = str(caught.value)
        assert said in message, message
        assert "\n" not in message


def test_a_name_with_control_characters_is_made_inert(tmp_path):
    name = "evil\x1b]52;c;cm0gLXJm\x07\u202egnp.png"
    (tmp_path / name).write_bytes(PNG)
    image = read_image(str(tmp_path / name))
    assert_inert(image.name)
    assert image.data == PNG
    with pytest.raises(AttachError) as caught:
        read_image(str(tmp_path / ("missing\x1b[2J" + name)))
    assert_inert(str(caught.value))
