"""Reading an image a person attaches (``/attach PATH``), with every refusal said plainly.

The type is decided by the file's bytes, never by its name: a ``photo.png``
that is really a shell script, or only starts like a PNG, is refused (the
rule MCP images follow too: ``context.images.image_type``). The file is opened
without blocking (a FIFO named like an image must not hang the app) and read
up to :data:`MAX_ATTACH_BYTES` plus one byte, so a huge file is refused
without being read whole. Each refusal is one line naming the path (shown
inert: a file name may hold control characters) and what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from ..context.images import data_url, image_type
from ..safety import inert_line
from .export_path import expand_home

#: the largest image a person may attach (OpenAI's own limit per image)
MAX_ATTACH_BYTES = 20 * 1024 * 1024


class AttachError(ValueError):
    """An image that cannot be attached; the message says why and what to do."""


@dataclass(frozen=True)
class Attachment:
    """An image ready to send: its name (for the chip), type and bytes."""

    name: str
    mime: str
    data: bytes

    @property
    def url(self) -> str:
        return data_url(self.mime, self.data)


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def read_image(path: str, *, limit: int = MAX_ATTACH_BYTES) -> Attachment:
    """The image at ``path`` (``~`` expanded); raises :class:`AttachError`."""
    shown = inert_line(path.strip(), 200)
    if not path.strip():
        raise AttachError("Usage: /attach PATH — a PNG, JPEG, WebP or GIF file.")
    try:
        target = expand_home(path.strip())
    except ValueError as exc:
        raise AttachError(str(exc)) from None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise AttachError(f"No file at {shown} — check the path.") from None
    except IsADirectoryError:
        raise AttachError(f"{shown} is a folder — attach an image file in it.") from None
    except PermissionError:
        raise AttachError(f"Cannot read {shown}: permission denied.") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise AttachError("That path is too long.") from None
        raise AttachError(f"Cannot open {shown}: {exc.strerror or exc}.") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise AttachError(f"{shown} is a folder — attach an image file in it.")
        if not stat.S_ISREG(st.st_mode):
            raise AttachError(f"{shown} is not a regular file — attach an image file.")
        if st.st_size > limit:
            raise AttachError(f"{shown} is {_mb(st.st_size)}; images up to {_mb(limit)} can "
                              "be attached — make it smaller first.")
        chunks: list[bytes] = []
        total = 0
        while total <= limit and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise AttachError(f"Cannot read {shown}: {exc.strerror or exc}.") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew while being read
        raise AttachError(f"{shown} is over {_mb(limit)}; images up to {_mb(limit)} can be "
                          "attached.")
    mime = image_type(data)
    if mime is None:
        raise AttachError(f"{shown} is not a PNG, JPEG, WebP or GIF image (its bytes say so, "
                          "whatever its name) — attach one of those.")
    return Attachment(inert_line(os.path.basename(path.strip()) or path.strip(), 80), mime, data)
