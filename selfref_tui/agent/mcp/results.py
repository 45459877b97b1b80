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

#: the most image data (decoded bytes) one result may carry into the context
MAX_IMAGE_BYTES = 5 * 1024 * 1024
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})


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


def _decoded_size(data: str) -> int | None:
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


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


def map_result(result: Any) -> MappedResult:
    """Map a ``CallToolResult`` (or anything with ``content`` and ``is_error``)."""
    texts: list[str] = []
    images: list[Image] = []
    budget = MAX_IMAGE_BYTES
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(str(getattr(block, "text", "")))
        elif kind == "image":
            mime = str(_field(block, "mime_type", "mimeType") or "")
            data = str(getattr(block, "data", "") or "")
            size = _decoded_size(data)
            if size is None:
                texts.append(f"[image ({mime}) with data that is not valid base64, dropped]")
            elif mime not in IMAGE_TYPES:
                texts.append(f"[image of type {mime}, {size} bytes: not a type models accept]")
            elif size > budget:
                texts.append(f"[image ({mime}, {size} bytes) over the {MAX_IMAGE_BYTES} byte "
                             "limit, not shown]")
            else:
                budget -= size
                images.append(Image(mime, data, size))
                texts.append(f"[image {len(images)}: {mime}, {size} bytes]")
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
    structured = getattr(result, "structured_content", None)
    if not texts and structured is not None:
        texts.append(json.dumps(structured, ensure_ascii=False, default=str))
    return MappedResult("\n".join(texts), bool(getattr(result, "is_error", False)), tuple(images))
