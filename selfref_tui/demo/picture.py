"""A small demo picture: what the screenshots attach and the image snapshot shows.

One drawing for both, so the README's screenshot and the snapshot test show
the same picture; its bytes are steady (no randomness, no time), so the
snapshot is too.
"""

from __future__ import annotations

import io


def sunset_png() -> bytes:
    """A 96×48 PNG: a sky gradient, a sun and the sea."""
    from PIL import Image, ImageDraw  # imported here: only a picture needs Pillow

    image = Image.new("RGB", (96, 48))
    draw = ImageDraw.Draw(image)
    for y in range(30):
        draw.line([(0, y), (95, y)], fill=(40 + 6 * y, 60 + 2 * y, 160 - 3 * y))
    draw.ellipse([36, 14, 60, 38], fill=(255, 200, 60))
    draw.rectangle([0, 30, 95, 47], fill=(20, 60, 120))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
