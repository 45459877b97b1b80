"""A memory key's images, stored once each, named by the hash of their bytes.

An image reaches the transcript as a ``data:`` URL in an ``image_url`` content
part (a person's ``/attach``, an MCP tool's picture). Written into the log as
it is, every message repeating an image would repeat its megabytes, and every
load would parse them out of JSON. So before a patch is appended the store
writes each image's bytes to ``images/<sha256>`` in the key's folder (once: a
second message with the same image finds the file) and the log keeps only
``selfref-image:sha256:<hex>``; folding the log puts the ``data:`` URL back, so
everything above the store sees the message as it was sent.

The image file is written and fsynced before the log line that names it, so
a crash leaves at most an image no line names, never a line naming nothing.
A file that is missing or whose bytes no longer match its name is reported,
and the part becomes a short text saying so (the model is not sent garbage).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

from ..context.images import data_url, parse_data_url
from .fsutil import atomic_write, check_dir, ensure_dir, fsync_dir, read_regular

IMAGES_DIR = "images"
PREFIX = "selfref-image:sha256:"
_HEX = re.compile(r"[0-9a-f]{64}")
#: the patches whose messages may hold images
_CARRIERS = {
    "UserMessageMutation": ("message",),
    "MultimodalToolResultMutation": ("user_messages",),
    "ContextReplaceMutation": ("messages",),
}


def _parts(record: dict[str, Any]) -> list[tuple[list[Any], int]]:
    """Where the ``image_url`` parts of a serialised patch are: (content list, index)."""
    name = record.get("type") if type(record) is dict else None
    fields = _CARRIERS.get(name) if type(name) is str else None
    if not fields:
        return []
    found: list[tuple[list[Any], int]] = []
    for name in fields:
        value = record.get(name)
        for message in value if isinstance(value, list) else [value]:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                found += [
                    (content, index) for index, part in enumerate(content)
                    if isinstance(part, dict) and part.get("type") == "image_url"
                    and isinstance(part.get("image_url"), dict)
                ]
    return found


def missing_text(digest: str) -> str:
    """What a part whose image cannot be found says instead."""
    return f"[an image (sha256 {digest[:12]}) is missing from the store]"


class ImageStore:
    """The ``images/`` folder of one key."""

    def __init__(self, key_dir: Path) -> None:
        self.folder = key_dir / IMAGES_DIR
        #: hash → data URL, for images written or read in this process
        self._urls: dict[str, str] = {}
        #: problems found while resolving (the store shows them as warnings)
        self.problems: list[str] = []

    def externalize(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` (a serialised patch) with its images stored as files, named by hash.

        Changes ``record`` in place (the caller's fresh ``asdict`` copy) and returns it.
        """
        for content, index in _parts(record):
            image_url = content[index]["image_url"]
            url = image_url.get("url")
            parsed = parse_data_url(url) if isinstance(url, str) else None
            if parsed is None:
                continue  # an http(s) URL, or already a reference: kept as it is
            mime, data = parsed
            digest = hashlib.sha256(data).hexdigest()
            self._write(digest, data)
            self._urls[digest] = url
            image_url["url"] = PREFIX + digest
            image_url["mime"] = mime
        return record

    def resolve(self, record: Any) -> Any:
        """``record`` with its image references made ``data:`` URLs again (in place).

        Anything that is not a serialised patch comes back untouched (the decoder
        names what is wrong with it). Called for every patch a load folds, so the
        common cases (no carrier, a user message of plain text) return at once.
        """
        if type(record) is not dict:
            return record
        name = record.get("type")
        if name == "UserMessageMutation":
            message = record.get("message")
            if type(message) is not dict or type(message.get("content")) is not list:
                return record
        elif name not in _CARRIERS:
            return record
        for content, index in _parts(record):
            image_url = content[index]["image_url"]
            url = image_url.get("url")
            if not (isinstance(url, str) and url.startswith(PREFIX)):
                continue
            digest = url[len(PREFIX):]
            mime = str(image_url.pop("mime", "") or "image/png")
            resolved = self._url(digest, mime)
            if resolved is None:  # said in words: the model is never sent an empty image
                content[index] = {"type": "text", "text": missing_text(digest)}
            else:
                image_url["url"] = resolved
        return record

    def _path(self, digest: str) -> Path:
        if not _HEX.fullmatch(digest):
            raise ValueError(f"not an image hash: {digest[:80]!r}")
        return self.folder / digest

    def _write(self, digest: str, data: bytes) -> None:
        path = self._path(digest)
        if digest in self._urls:
            return
        existing = read_regular(path) if self.folder.is_dir() else None
        if existing is not None and hashlib.sha256(existing).hexdigest() == digest:
            return  # the same image, stored by an earlier message: not written twice
        created = ensure_dir(self.folder)
        check_dir(self.folder)
        atomic_write(path, data, sync_dir=True)
        if created:
            fsync_dir(self.folder.parent)

    def _url(self, digest: str, mime: str) -> str | None:
        cached = self._urls.get(digest)
        if cached is not None:
            return cached
        try:
            data = read_regular(self._path(digest))
        except (OSError, ValueError) as exc:
            self.problems.append(f"{self.folder}/{digest[:80]}: cannot read it ({exc})")
            return None
        if data is None:
            self.problems.append(f"{self.folder}/{digest}: an image of this key is missing")
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            self.problems.append(f"{self.folder}/{digest}: the image's bytes were changed")
            return None
        url = self._urls[digest] = data_url(mime, data)
        return url


def copy_images(src_dir: Path, dst_dir: Path) -> None:
    """Copy a key's images into another key folder (renaming a key copies its files)."""
    copy_blobs(src_dir, dst_dir, IMAGES_DIR)


def copy_blobs(src_dir: Path, dst_dir: Path, folder: str) -> None:
    """Copy a key's hash-named files (``images/``, ``files/``) into another key folder.

    Only regular files named by a hash are copied; links are neither followed
    nor copied.
    """
    src = src_dir / folder
    if not src.is_dir() or src.is_symlink():
        return
    ensure_dir(dst_dir / folder)
    for entry in os.scandir(src):
        if _HEX.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            shutil.copyfile(entry.path, dst_dir / folder / entry.name, follow_symlinks=False)
