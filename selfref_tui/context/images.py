"""Images as message content: data URLs, ``image_url`` parts and magic bytes.

Vision models take images as OpenAI ``image_url`` content parts whose URL is
a ``data:`` URL; an MCP tool's images and a person's ``/attach`` both become
such parts in a user message. The store keeps each image once, by content
hash (see :mod:`selfref_tui.selfref.images`), and the transcript shows them;
all of them need the same few rules, kept here. Pure: no files, no decoding.

Types are decided by magic bytes, never by a file name or a declared type,
because both come from outside (a person's path, a server's ``mimeType``).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

#: what vision models accept (and what the transcript can draw)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
#: a file name extension per type (exports suggest it)
EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


def sniff_mime(data: bytes) -> str | None:
    """The image type ``data`` starts with (PNG, JPEG, WebP, GIF), or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    return None


def image_type(data: bytes) -> str | None:
    """The type of image ``data`` is, or None: its signature, and a header whose size
    can be read (a signature alone is not an image: a server's bytes or a person's file
    that only start like one would be refused by the model's server after sending)."""
    mime = sniff_mime(data)
    return mime if mime is not None and image_size(data) is not None else None


#: the most images one tool result carries to the model (the rest are named in its text):
#: 200 tiny ones once made every later request of a key too large for a 128k window
MAX_RESULT_IMAGES = 8
#: what an image costs when its size cannot be read: a 1024x1024 high-detail image
TOKENS_PER_IMAGE = 765
#: the most one image may cost, whatever its size: vision models scale images down
#: (OpenAI's high detail tops out at 1,445 tokens, Anthropic's at about 1,600)
MAX_IMAGE_TOKENS = 1_600
#: the most JPEG segments read looking for the size (a real file has a few dozen)
_JPEG_SEGMENTS = 512
#: JPEG start-of-frame markers (C4, C8 and CC share the range but are not frames)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG, JPEG, WebP or GIF; None when unreadable."""
    return _size(lambda start, n: data[start:start + n])


def _url_reader(url: str) -> tuple[Any, int] | None:
    """A reader of a base64 ``data:`` URL's bytes (``read(start, n)``, decoding only those)
    and where its payload starts; None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    comma = url.find(",", 0, 256)  # never a copy of the payload: it is megabytes
    if comma < 0 or not url.endswith(";base64", 0, comma):
        return None
    payload = comma + 1

    def read(start: int, n: int) -> bytes:
        first = payload + start // 3 * 4
        last = payload + -(-(start + n) // 3) * 4
        try:
            chunk = base64.b64decode(url[first:last], validate=True)
        except (binascii.Error, ValueError):
            return b""
        return chunk[start - start // 3 * 3:][:n]

    return read, payload


def url_image_size(url: str) -> tuple[int, int] | None:
    """The size of a base64 ``data:`` URL's image, decoding only the header's bytes.

    A 20 MB image is 27 MB of base64: counting its tokens must not decode it.
    """
    reader = _url_reader(url)
    return None if reader is None else _size(reader[0])


def url_head(url: str) -> tuple[str, int] | None:
    """(the image type its first bytes say, or "", its size in bytes) of a base64 ``data:``
    URL, from its first bytes and its length: nothing else is decoded or copied. None when
    it is not one (a payload that is not base64 past its head is found when it is decoded).
    """
    reader = _url_reader(url)
    if reader is None:
        return None
    read, payload = reader
    length = len(url) - payload
    head = read(0, 16)
    if length % 4 or (length and not head):
        return None
    padding = 2 if url.endswith("==") else 1 if url.endswith("=") else 0
    return sniff_mime(head) or "", length // 4 * 3 - padding


def _size(read: Any) -> tuple[int, int] | None:
    head = read(0, 30)
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
        width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    elif head.startswith((b"GIF87a", b"GIF89a")):
        width, height = int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
    elif head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        kind = head[12:16]
        if kind == b"VP8X":
            width = int.from_bytes(head[24:27], "little") + 1
            height = int.from_bytes(head[27:30], "little") + 1
        elif kind == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        elif kind == b"VP8 ":
            width = int.from_bytes(head[26:28], "little") & 0x3FFF
            height = int.from_bytes(head[28:30], "little") & 0x3FFF
        else:
            return None
    elif head.startswith(b"\xff\xd8"):
        found = _jpeg_size(read)
        if found is None:
            return None
        width, height = found
    else:
        return None
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_size(read: Any) -> tuple[int, int] | None:
    """Walk a JPEG's segments to its frame header (EXIF may come first and be long)."""
    position = 2
    for _ in range(_JPEG_SEGMENTS):
        marker = read(position, 4)
        if len(marker) < 4 or marker[0] != 0xFF:
            return None
        kind = marker[1]
        if kind == 0xFF:  # fill byte
            position += 1
            continue
        if kind in (0x01, *range(0xD0, 0xD9)):  # markers without a length
            position += 2
            continue
        if kind in _SOF:
            frame = read(position + 5, 4)
            if len(frame) < 4:
                return None
            return int.from_bytes(frame[2:4], "big"), int.from_bytes(frame[0:2], "big")
        position += 2 + int.from_bytes(marker[2:4], "big")
    return None


def image_tokens(size: tuple[int, int] | None) -> int:
    """What a vision model charges for an image of ``size`` pixels, at most MAX_IMAGE_TOKENS.

    OpenAI's high-detail rule, the dearest of the common ones for most sizes:
    fit in 2048x2048, shortest side down to 768, then 170 per 512-pixel tile
    plus 85. An unreadable size costs :data:`TOKENS_PER_IMAGE`.
    """
    if size is None:
        return TOKENS_PER_IMAGE
    width, height = float(size[0]), float(size[1])
    if max(width, height) > 2048:
        scale = 2048 / max(width, height)
        width, height = width * scale, height * scale
    if min(width, height) > 768:
        scale = 768 / min(width, height)
        width, height = width * scale, height * scale
    tiles = math.ceil(width / 512) * math.ceil(height / 512)
    return min(85 + 170 * max(1, tiles), MAX_IMAGE_TOKENS)


def url_tokens(url: str) -> int:
    """:func:`image_tokens` of an image URL (a ``data:`` URL's size read from its header)."""
    return image_tokens(url_image_size(url))


def is_image_part(part: Any) -> bool:
    """Whether a content part is an image (``image_url``, however its type is spelled)."""
    return isinstance(part, Mapping) and (part.get("type") == "image_url" or "image_url" in part)


def image_part_tokens(part: Any) -> int:
    """What an image content part costs (the counter's and the breakdown's one rule)."""
    inner = part.get("image_url") if isinstance(part, Mapping) else None
    url = inner.get("url") if isinstance(inner, Mapping) else inner
    return url_tokens(url) if isinstance(url, str) else TOKENS_PER_IMAGE


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def parse_data_url(url: str) -> tuple[str, bytes] | None:
    """``(declared type, bytes)`` of a base64 ``data:`` URL; None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    mime = head[5:].removesuffix(";base64").split(";")[0].strip().lower()
    try:
        return mime, base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None


def image_part(url: str) -> dict[str, Any]:
    """An OpenAI ``image_url`` content part."""
    return {"type": "image_url", "image_url": {"url": url}}


def part_url(part: Any) -> str | None:
    """The URL of an ``image_url`` content part, or None for any other part."""
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return None
    inner = part.get("image_url")
    url = inner.get("url") if isinstance(inner, dict) else inner
    return url if isinstance(url, str) else None


def image_urls(content: Any) -> list[str]:
    """The image URLs in a message's content (a string has none)."""
    if not isinstance(content, list):
        return []
    return [url for url in map(part_url, content) if url is not None]


def text_of(content: Any) -> str:
    """A message's text: the string, or its text parts joined."""
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return str(content or "")


#: the file name a person's attached image had, kept on its content part so that the
#: transcript names it after a reload as it did live; the compile boundary drops it
#: (:func:`wire_parts`): it is ours, not the provider's
FILE_NAME = "file_name"


def user_content(text: str, urls: Iterable[str] = (),
                 names: Iterable[str] = ()) -> str | list[dict[str, Any]]:
    """A user message's content: the text alone, or a text part then image parts.

    ``names``: the attached files' names, one per URL ("" or missing: none).
    """
    urls, names = list(urls), list(names)
    if not urls:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for index, url in enumerate(urls):
        part = image_part(url)
        name = names[index] if index < len(names) else ""
        if isinstance(name, str) and name:
            part[FILE_NAME] = name
        parts.append(part)
    return parts


def named_images(content: Any) -> list[tuple[str, str]]:
    """(URL, attached file name or "") of each image in a message's content."""
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        url = part_url(part)
        if url is not None:
            name = part.get(FILE_NAME)
            out.append((url, name if isinstance(name, str) else ""))
    return out


def wire_parts(content: list[Any]) -> list[Any]:
    """``content`` as a provider takes it: without the file names kept on image parts
    (the same list when none has one)."""
    if not any(isinstance(p, dict) and FILE_NAME in p for p in content):
        return content
    return [{k: v for k, v in p.items() if k != FILE_NAME} if isinstance(p, dict) else p
            for p in content]


def readable(content: Any) -> str:
    """A message's content for people: text parts as text, each image as one short line.

    A ``data:`` URL is megabytes of base64 nobody reads (and would flood a terminal).
    """
    if not isinstance(content, list):
        return str(content or "")
    lines = []
    for part in content:
        url = part_url(part)
        if url is None:
            lines.append(str(part.get("text", "")) if isinstance(part, dict) else str(part))
            continue
        parsed = parse_data_url(url)
        if parsed is None:
            lines.append(f"[image {url[:200]}]")
        else:
            mime = sniff_mime(parsed[1]) or parsed[0] or "unknown type"
            lines.append(f"[image {mime}, {len(parsed[1]):,} bytes]")
    return "\n".join(lines)


def omitted_text(model: str) -> str:
    """What stands in a request for a tool's image that ``model`` cannot take."""
    return f"[image omitted: model {model} does not accept images]"


def without_tool_images(messages: list[dict[str, Any]], placeholder: str,
                        only: Collection[str] | None = None) -> list[dict[str, Any]]:
    """``messages`` with each image of a tool's result replaced by ``placeholder`` text
    (``only``: just those with these URLs).

    Why: a model without vision refuses the whole request for one image a tool
    returned (a screenshot, a plot), and the conversation could not go on. Only
    the request changes; the store keeps the images. Messages without such an
    image are the same objects (compile caches compare them with the last call's).
    """
    from .apply import MULTIMODAL_MARK

    out = messages
    for index, message in enumerate(messages):
        content = message.get("content")
        urls = image_urls(content)
        if (message.get("role") != "user" or MULTIMODAL_MARK not in message or not urls
                or (only is not None and not any(url in only for url in urls))):
            continue
        if out is messages:
            out = list(messages)
        if only is not None:  # the other images stay images
            out[index] = {**message, "content": [
                {"type": "text", "text": placeholder} if part_url(part) in only else part
                for part in content]}
            continue
        texts = [placeholder if part_url(part) is not None else text_of([part])
                 for part in content]
        out[index] = {**message, "content": "\n".join(t for t in texts if t)}
    return out


#: the share of the window one tool result's images may take: no single result can
#: make a key's next request too large (its newest turn cannot be left out)
RESULT_IMAGE_SHARE = 0.25


def cap_images(messages: list[dict[str, Any]], budget: int,
               limit: int = MAX_RESULT_IMAGES) -> list[dict[str, Any]]:
    """``messages`` (one tool result's) with at most ``limit`` images costing at most
    ``budget`` tokens together; each image past either is named in words instead.

    Messages without an image left out are the same objects.
    """
    kept = spent = 0

    def left_out(part: Any) -> dict[str, Any] | None:
        nonlocal kept, spent
        if not is_image_part(part):
            return None
        cost = image_part_tokens(part)
        if kept < limit and spent + cost <= budget:
            kept, spent = kept + 1, spent + cost
            return None
        why = (f"one result carries at most {limit} images" if kept >= limit else
               f"about {cost:,} tokens, past this result's share of the window "
               f"({budget:,} tokens for its images)")
        return {"type": "text", "text": f"[an image left out: {why}]"}

    return _parts_replaced(messages, left_out)


def _parts_replaced(messages: list[dict[str, Any]],
                    replacement: Callable[[Any], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """``messages`` with each content part that ``replacement`` (asked of every part, in
    order) returns a part for replaced by it.

    Copy on write: a message with no part replaced is the same object, and so is
    the list when none is (compile caches compare them with the last call's).
    """
    out = messages
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        parts = None
        for at, part in enumerate(content):
            new = replacement(part)
            if new is None:
                continue
            if parts is None:
                parts = list(content)
            parts[at] = new
        if parts is not None:
            if out is messages:
                out = list(messages)
            out[index] = {**message, "content": parts}
    return out


#: what stands in a request for an image the same request already carries
REPEATED_TEXT = "[the same image as shown earlier in this conversation]"


def images_once(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each image carried once: a repeat (the same picture attached
    again, a tool returning the same screenshot) becomes :data:`REPEATED_TEXT`.

    Why: the API is stateless, so every request carries every image of the
    conversation; the same megabytes twice in one request (and their tokens
    twice in the window) tell the model nothing more. The first stays where it
    was (a request's start stays the same, for servers that cache prompts).
    Messages without a repeat are the same objects.
    """
    seen: set[str] = set()

    def repeated(part: Any) -> dict[str, Any] | None:
        url = part_url(part)
        if url is None:
            return None
        if url not in seen:
            seen.add(url)
            return None
        return {"type": "text", "text": REPEATED_TEXT}

    return _parts_replaced(messages, repeated)


def tool_image_urls(messages: list[dict[str, Any]]) -> set[str]:
    """The URLs of the images tools' results hold in ``messages``."""
    from .apply import MULTIMODAL_MARK

    return {url for message in messages
            if message.get("role") == "user" and MULTIMODAL_MARK in message
            for url in image_urls(message.get("content"))}


def suspect_tool_images(messages: list[dict[str, Any]]) -> set[str]:
    """The tools' images that may be the one a server said it could not read.

    Those before the conversation's last answer went in a request the server
    answered, so it read them: the suspects are the tools' images after it. A
    person's image there is the suspect instead (none of the tools' is). When
    nothing after it holds an image (the server or model changed since, say),
    every tool image is.
    """
    last = next((at for at in range(len(messages) - 1, -1, -1)
                 if messages[at].get("role") == "assistant"), -1)
    recent = messages[last + 1:]
    found = tool_image_urls(recent)
    if found or person_images(recent):
        return found
    return tool_image_urls(messages)


def person_images(messages: list[dict[str, Any]]) -> bool:
    """Whether a message the person wrote (not a tool's result, not failed) holds an image."""
    from .apply import MULTIMODAL_MARK

    return any(message.get("role") == "user" and MULTIMODAL_MARK not in message
               and not message.get("failed") and image_urls(message.get("content"))
               for message in messages)
