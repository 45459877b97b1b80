"""What an MCP tool result becomes for the model.

Text blocks are the tool result; an ``isError`` result is a tool error; images
must travel in a user message (providers accept them nowhere else), so a result
with images becomes user-message content parts. Embedded resources and resource
links become text naming their URI; audio and block types this client does not
know are named in the text rather than silently dropped, so the model knows
something was there. Pure: duck-typed on the SDK's content models, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from ...context.images import MAX_RESULT_IMAGES, image_type
from ...safety import inert_line

#: the most image data (decoded bytes) one result may carry into the context
MAX_IMAGE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class Image:
    mime_type: str
    data: str  # base64, as the server sent it
    size: int  # decoded bytes

    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


@dataclass(frozen=True)
class MappedResult:
    """A tool result in the shapes the loop knows: text, error, images."""

    text: str
    is_error: bool = False
    images: tuple[Image, ...] = field(default_factory=tuple)

    def user_messages(self, label: str, text: str | None = None) -> list[dict[str, Any]]:
        """One user message holding the result text and the images as content parts."""
        body = self.text if text is None else text
        head = f"Result of {label}:"
        first = f"{head}\n{body}" if body else head
        parts: list[dict[str, Any]] = [{"type": "text", "text": first}]
        parts += [{"type": "image_url", "image_url": {"url": im.data_url()}} for im in self.images]
        return [{"role": "user", "content": parts}]


def _decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _decoded_size(data: str) -> int | None:
    decoded = _decoded(data)
    return None if decoded is None else len(decoded)


def _field(block: Any, *names: str) -> Any:
    for name in names:
        value = getattr(block, name, None)
        if value is not None:
            return value
    return None


def _resource_text(resource: Any) -> str:
    uri = str(_field(resource, "uri") or "")
    mime = _field(resource, "mime_type", "mimeType") or "unknown type"
    text = _field(resource, "text")
    if isinstance(text, str):
        return f"[resource {uri} ({mime})]\n{text}"
    blob = _field(resource, "blob") or ""
    size = _decoded_size(blob) if isinstance(blob, str) else None
    amount = f"{size} bytes" if size is not None else "binary data"
    return f"[resource {uri}: {mime}, {amount}, not shown]"


def _image(block: Any, budget: int, number: int) -> tuple[str, Image | None]:
    """An image block: the line the text gets, and the image when it may go to the model.

    Its bytes decide its type (a shell script declared ``image/png`` is not an
    image, and a PNG declared ``image/jpeg`` is a PNG): the declared type is
    only named, shortened, when the bytes are not an image.
    """
    declared = inert_line(str(_field(block, "mime_type", "mimeType") or "no type"), 40)
    data = str(getattr(block, "data", "") or "")
    raw = _decoded(data)
    if raw is None:
        return f"[image ({declared}) with data that is not valid base64, dropped]", None
    mime = image_type(raw)
    if mime is None:
        return (f"[an image declared {declared}, {len(raw)} bytes: its bytes are not a PNG, "
                "JPEG, WebP or GIF image, dropped]"), None
    if len(raw) > budget:
        return (f"[image ({mime}, {len(raw)} bytes) over the {MAX_IMAGE_BYTES} byte limit, "
                "not shown]"), None
    return f"[image {number}: {mime}, {len(raw)} bytes]", Image(mime, data, len(raw))


def map_result(result: Any) -> MappedResult:
    """Map a ``CallToolResult`` (or anything with ``content`` and ``is_error``)."""
    texts: list[str] = []
    images: list[Image] = []
    budget = MAX_IMAGE_BYTES
    beyond = 0  # images past MAX_RESULT_IMAGES, named in one line at the end
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(getattr(block, "text", "")))
        elif kind == "image":
            if len(images) >= MAX_RESULT_IMAGES:
                beyond += 1
                continue
            text, image = _image(block, budget, len(images) + 1)
            texts.append(text)
            if image is not None:
                budget -= image.size
                images.append(image)
        elif kind == "audio":
            mime = _field(block, "mime_type", "mimeType") or "unknown type"
            size = _decoded_size(str(getattr(block, "data", "") or ""))
            texts.append(f"[audio ({mime}, {size if size is not None else '?'} bytes): audio is "
                         "not passed to the model]")
        elif kind == "resource":
            texts.append(_resource_text(getattr(block, "resource", None)))
        elif kind == "resource_link":
            uri = str(_field(block, "uri") or "")
            name = _field(block, "name") or ""
            description = _field(block, "description")
            line = f"[resource link {name}: {uri}]" if name else f"[resource link: {uri}]"
            texts.append(f"{line} {description}" if description else line)
        else:
            texts.append(f"[content of type {kind!r} that this client does not support]")
    if beyond:
        texts.append(f"[{beyond} more image{'s' if beyond > 1 else ''} left out: one result "
                     f"carries at most {MAX_RESULT_IMAGES}]")
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return MappedResult("\n".join(texts), bool(getattr(result, "is_error", False)), tuple(images))
