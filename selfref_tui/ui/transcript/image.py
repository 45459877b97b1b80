"""An image in the transcript: its item, its decoding, and its half-block drawing.

An image arrives as a ``data:`` URL (an MCP tool's result, or a person's
``/attach``) and is shown as a block: a title line with its type, pixel size
and byte size, then the picture drawn with ``▀`` cells whose foreground is the
upper pixel and background the lower one. That works in every terminal, in
tmux and in snapshots, and fits the transcript's Line API: the picture is a
list of ``Strip`` s, cached per width like any row. (``textual-image`` was
considered: its Kitty/Sixel output is a widget of its own, which a Line-API
transcript cannot hold, and it queries the terminal at import; its half-block
fallback is what this module does, without the dependency.)

The bytes are hostile input. They are decoded once, on first draw, by Pillow
(imported only then, so the first frame never pays for it), restricted to the
four types models accept, refused above :data:`MAX_PIXELS` before any pixel is
decoded (a decompression bomb), and every failure becomes "image could not be
shown (reason)" on the block, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style

from selfref_tui.safety import inert_line
from selfref_tui.ui.transcript.model import Item, ToolItem

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from textual.strip import Strip

#: the largest picture decoded (width × height); a bigger one is named, not drawn
MAX_PIXELS = 25_000_000
#: a bigger image is decoded in a thread (a 20 MB PNG takes ~0.5 s), smaller ones at once
SYNC_BYTES = 512 * 1024
#: more pixels than this are decoded in a thread too, whatever the byte size: decoding
#: time follows the pixels (an 83 KB 4999×4999 PNG takes ~0.7 s), and a sender chooses both
SYNC_PIXELS = 1_000_000
#: decodes at once, at most: each can hold ~100 MB (:data:`MAX_PIXELS` × RGBA), and ten
#: hostile images must not all decode together
DECODE_THREADS = 2
#: the picture's size in cells, at most (each cell shows two pixels, one above the other)
MAX_COLUMNS = 64
MAX_ROWS = 20
_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WebP", "image/gif": "GIF"}


#: the error of a block whose URL is not a base64 ``data:`` URL
NOT_BASE64 = "not a base64 data URL"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


@dataclass(eq=False)
class ImageItem(Item):
    """One image; the picture is decoded on first draw and kept small."""

    url: str = ""
    #: where it came from, shown on its title: "tool NAME" or "attached"
    source: str = ""
    #: the file name a person attached (untrusted: shown inert)
    name: str = ""
    #: the decoded size and the type its bytes say, read once; the bytes themselves
    #: are decoded from ``url`` when needed and not kept (a large picture would be
    #: in memory twice: its data URL and its bytes)
    _size: int = 0
    _mime: str = ""
    _error: str = ""
    _decoded: bool = False
    _pending: bool = False
    #: (width, height) in pixels, once read
    pixels: tuple[int, int] | None = None
    #: (width, height) from the header alone, once read (None: unreadable); see decode_waits
    _header: tuple[int, int] | None = None
    _header_read: bool = False
    _thumb: Any = None  # a small RGBA Pillow image

    kind = "image"

    def __post_init__(self) -> None:
        # made on the app's loop: type and size from the URL's head and length (decoding
        # a 19 MB picture here held the loop ~0.25 s and copied it twice)
        from selfref_tui.context.images import url_head

        head = url_head(self.url)
        if head is None:
            self._error = NOT_BASE64
        else:
            self._mime, self._size = head

    @property
    def data(self) -> bytes:
        """The picture's bytes, decoded from its URL (for a decode or an export)."""
        from selfref_tui.context.images import parse_data_url

        parsed = None if self._error == NOT_BASE64 else parse_data_url(self.url)
        return parsed[1] if parsed is not None else b""

    @property
    def mime(self) -> str:
        """The type its bytes say (not what a sender declared); "" when none of ours."""
        return self._mime

    @property
    def extension(self) -> str:
        from selfref_tui.context.images import EXTENSIONS

        return EXTENSIONS.get(self.mime, "bin")

    @property
    def suggested_name(self) -> str:
        """A file name for an export: the attached file's stem, or ``image-N``, and the
        extension its bytes say (only letters, digits, ``-``, ``_`` and ``.`` kept)."""
        stem = self.name.rsplit("/", 1)[-1].rsplit(".", 1)[0] if self.name else ""
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("._") or f"image-{self.serial}"
        return f"{stem[:80]}.{self.extension}"

    @property
    def error(self) -> str:
        """Why it cannot be shown ("" when it can); decodes on first use."""
        self.decode()
        return self._error

    @property
    def title(self) -> str:
        kind = _NAMES.get(self.mime, "image")
        parts = [f"▣ {kind} image"]
        if self.pixels is not None:
            parts.append(f"{self.pixels[0]}×{self.pixels[1]} px")
        parts.append(human_size(self._size))
        if self.name:
            parts.append(self.name)
        if self.source:
            parts.append(self.source)
        return inert_line(" · ".join(parts))

    @property
    def copy_text(self) -> str:
        return self.title

    def decode(self) -> None:
        """Read the picture once (Pillow, imported here); a failure becomes :attr:`error`.

        Safe to run in a thread: the item changes only at the end, in one step.
        """
        if self._decoded:
            return
        thumb, pixels, error = None, None, self._error
        data = b"" if error else self.data
        if not error and not data:
            error = NOT_BASE64  # its head was, the rest is not
        if not error:
            try:
                thumb, pixels = _thumbnail(data)
            except _Refused as exc:
                error, pixels = exc.reason, exc.pixels
            except MemoryError:
                error = "out of memory"
            except Exception as exc:  # hostile bytes: any decoder failure is a reason
                error = _reason(exc)
        self._thumb, self.pixels, self._error = thumb, pixels, error
        self._decoded = True

    @property
    def decode_waits(self) -> bool:
        """Too big to decode on the event loop and not decoded yet: over :data:`SYNC_BYTES`,
        or over :data:`SYNC_PIXELS` by its header (a picture over :data:`MAX_PIXELS` is
        refused before any pixel is decoded, so that refusal is quick)."""
        if self._decoded:
            return False
        if self._size > SYNC_BYTES:
            return True
        if not self._header_read:
            from selfref_tui.context.images import url_image_size

            self._header = None if self._error else url_image_size(self.url)
            self._header_read = True
        if self._header is None:
            return False  # unreadable: decoding fails at the header, at once
        return SYNC_PIXELS < self._header[0] * self._header[1] <= MAX_PIXELS

    def cells(self, width: int) -> tuple[int, int]:
        """The picture's size in cells (columns, rows) at ``width`` columns available."""
        self.decode()
        if self._thumb is None:
            return 0, 0
        w, h = self._thumb.size
        scale = min(1.0, max(1, width) / w, (2 * MAX_ROWS) / h)
        return max(1, round(w * scale)), max(1, round(h * scale / 2))


class _Refused(Exception):
    def __init__(self, reason: str, pixels: tuple[int, int] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pixels = pixels


def _thumbnail(data: bytes) -> tuple[Any, tuple[int, int]]:
    """A small RGBA copy of the picture, and its full size; raises on anything wrong."""
    import io
    import warnings

    from PIL import Image

    from selfref_tui.context.images import sniff_mime

    if sniff_mime(data) is None:
        raise _Refused("not a PNG, JPEG, WebP or GIF image")
    with warnings.catch_warnings():
        # Pillow warns between its own limit and twice it; ours is lower, checked below.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(data), formats=_FORMATS) as image:
            size = (int(image.width), int(image.height))
            if size[0] <= 0 or size[1] <= 0:
                raise _Refused("it has no pixels", size)
            if size[0] * size[1] > MAX_PIXELS:
                raise _Refused(
                    f"{size[0]}×{size[1]} pixels is over the {MAX_PIXELS:,} pixel limit", size
                )
            image.draft("RGB", (MAX_COLUMNS * 2, MAX_ROWS * 4))  # JPEG: decode at a fraction
            image.thumbnail((MAX_COLUMNS, 2 * MAX_ROWS))
            return image.convert("RGBA"), size


def _reason(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc)
    if "DecompressionBomb" in name:  # Pillow refused it at open, before reading any pixel
        return f"it is over the {MAX_PIXELS:,} pixel limit"
    if "truncated" in text or isinstance(exc, EOFError):
        return "the data is truncated"
    if name == "UnidentifiedImageError":
        return "the data is not a readable PNG, JPEG, WebP or GIF image"
    return inert_line(f"{name}: {text}" if text else name, 120)


# ------------------------------------------------------------------ drawing


def decode_in_thread(item: ImageItem, widget: Any) -> None:
    """Decode a big image off the event loop (once); the block is drawn again when done."""
    if item._pending:
        return
    item._pending = True

    async def decode() -> None:
        import asyncio

        await asyncio.get_running_loop().run_in_executor(_decoder(), item.decode)
        item.touch()
        widget.redraw()

    widget.run_worker(decode(), group="image-decode", exit_on_error=False)


_DECODER: ThreadPoolExecutor | None = None


def _decoder() -> ThreadPoolExecutor:
    """The decoding threads (:data:`DECODE_THREADS`), shared by every transcript; not the
    default executor, which would run many decodes at once and starve other work."""
    global _DECODER
    if _DECODER is None:
        from concurrent.futures import ThreadPoolExecutor  # not before the first frame

        _DECODER = ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="image-decode")
    return _DECODER


def picture(item: ImageItem, width: int, background: tuple[int, int, int]) -> list[Strip]:
    """The decoded picture in ``▀`` half-block cells, ``width`` columns wide."""
    from PIL import Image
    from textual.strip import Strip

    cols, rows = item.cells(width)
    if not cols:
        return []
    back = Image.new("RGBA", (cols, rows * 2), (*background, 255))
    picture = item._thumb.resize((cols, rows * 2), Image.Resampling.BOX)
    pixels = Image.alpha_composite(back, picture).convert("RGB").load()
    styles: dict[tuple[Any, Any], Style] = {}
    strips = []
    for y in range(rows):
        segments = []
        for x in range(cols):
            pair = (pixels[x, 2 * y], pixels[x, 2 * y + 1])
            style = styles.get(pair)
            if style is None:
                style = styles[pair] = Style(
                    color=RichColor.from_rgb(*pair[0]), bgcolor=RichColor.from_rgb(*pair[1])
                )
            segments.append(Segment("▀", style))
        strips.append(Strip(Segment.simplify(segments), cols).extend_cell_length(width))
    return strips


def estimate(item: ImageItem, width: int) -> int:
    """Its height before drawing: exact once decoded, else a guess."""
    if item._decoded:
        return 1 + (1 if item._error else item.cells(max(1, width - 5))[1])
    return 1 + MAX_ROWS // 2


def image_items(urls: Iterable[str], *, source: str = "", archived: bool = False,
                owner: Item | None = None) -> list[ImageItem]:
    """Items for images given as ``data:`` URLs, under ``owner``."""
    return [ImageItem(url=url, source=source, archived=archived, owner=owner) for url in urls]


def content_images(content: Any, *, source: str = "", archived: bool = False,
                   owner: Item | None = None) -> list[ImageItem]:
    """Items for the images in a stored message's content (a string has none)."""
    from selfref_tui.context.images import named_images

    return [ImageItem(url=url, name=name, source=source, archived=archived, owner=owner)
            for url, name in named_images(content)]


_CALLED = re.compile(r"I called ([^(\s]+)\(")


def multimodal_items(message: dict[str, Any], cards: dict[str, ToolItem],
                     archived: bool) -> list[Item]:
    """Stored history of a tool result with images, shown as it was live.

    The store keeps such a result as an assistant note ("I called NAME(…)")
    and a user message holding the result's text and images (providers take
    images only there); the person sees the tool call, its result and the
    images under it.
    """
    from selfref_tui.context.images import text_of

    call_id = str(message.get("multimodal_for"))
    content = message.get("content")
    card = cards.get(call_id)
    out: list[Item] = []
    if card is None:
        found = _CALLED.match(text_of(content)) if message.get("role") == "assistant" else None
        card = ToolItem(call_id=call_id, tool_name=found.group(1) if found else "tool",
                        archived=archived)
        card.end("done", "", None)
        cards[call_id] = card
        out.append(card)
    if message.get("role") == "user":
        card.end("done", text_of(content), None)
        out += content_images(content, source=f"tool {card.tool_name}", archived=archived,
                              owner=card)
    return out


__all__ = [
    "MAX_PIXELS",
    "ImageItem",
    "content_images",
    "decode_in_thread",
    "estimate",
    "image_items",
    "multimodal_items",
    "picture",
]
