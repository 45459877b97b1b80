"""Theme colours made readable: text colours raised to a contrast floor on their backgrounds.

Textual derives ``$text-accent``, ``$text-success``… from each theme's colours,
and its footer writes keys in ``$accent`` on ``$panel``. On several built-in
themes some of these fall well under a readable contrast (the footer's keys on
catppuccin-latte at 1.9:1, Textual's highlighted code on textual-light at
2.6:1). :func:`readable_variables` moves each text colour toward black or white
just far enough to reach :data:`MIN_CONTRAST` on every background it is drawn
on, and leaves every colour that already reads well alone, so a theme keeps
its look. Themes of ANSI colours are the terminal's own and left as they are.

Contrast is WCAG's ratio of relative luminances (1:1 to 21:1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from textual.color import Color

#: the least contrast a text colour keeps on its backgrounds (WCAG AA for body text)
MIN_CONTRAST = 4.5

#: text colours, and the background variables each is drawn on
TEXT_ON: dict[str, tuple[str, ...]] = {
    **{f"text-{name}": ("background", "surface", "panel")
       for name in ("primary", "secondary", "accent", "warning", "error", "success")},
    "footer-key-foreground": ("footer-background",),
    "footer-description-foreground": ("footer-background",),
    "footer-foreground": ("footer-background",),
    # a plain button's label, at rest and hovered (the coloured ones: button_labels)
    "button-foreground": ("surface", "surface-darken-1"),
}


def luminance(color: Color) -> float:
    """WCAG relative luminance of an opaque colour."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = color.rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two opaque colours."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def readable(color: Color, backgrounds: Iterable[Color],
             minimum: float = MIN_CONTRAST) -> Color:
    """``color``, or the nearest blend of it toward black or white that reaches ``minimum``
    on each of ``backgrounds`` (the one of the two that contrasts with them best)."""
    grounds = list(backgrounds)
    if not grounds or all(contrast(color, bg) >= minimum for bg in grounds):
        return color
    average = sum(luminance(bg) for bg in grounds) / len(grounds)
    target = Color(0, 0, 0) if average > 0.18 else Color(255, 255, 255)
    for step in range(1, 21):
        moved = color.blend(target, step / 20)
        if all(contrast(moved, bg) >= minimum for bg in grounds):
            return moved
    return target


#: how far text that is set back (archived by a compaction, a superseded ref) fades into
#: its background at most, and the contrast it keeps all the same
FADE = 0.45
FADED_CONTRAST = 3.2


@lru_cache(maxsize=1024)
def fade(color: Color, ground: Color) -> Color:
    """``color`` faded toward ``ground`` as far as :data:`FADE`, keeping :data:`FADED_CONTRAST`.

    What Textual's ``dim`` does (half way to the background) left archived
    messages at 2:1 on light themes; this sets them back and leaves them read.
    A colour already under the floor (a faint frame) is left as it is.
    """
    for step in range(int(FADE * 20), 0, -1):
        moved = color.blend(ground, step / 20)
        if contrast(moved, ground) >= FADED_CONTRAST:
            return moved
    return color


#: Textual's coloured buttons: their label is ``$button-color-foreground`` ("auto 87%": off-white
#: or off-black by the colour's brightness) on the variant's colour, and hovered on this shade
BUTTON_VARIANTS = {"primary": "-darken-2", "success": "-darken-2", "warning": "-darken-2",
                   "error": "-darken-1"}
#: how opaque Textual draws a button's label ("auto 87%")
_LABEL_ALPHA = 0.87


def button_labels(variables: Mapping[str, str]) -> dict[str, str]:
    """``button-VARIANT-foreground`` and ``button-VARIANT-hover-foreground`` for each of
    :data:`BUTTON_VARIANTS` (app.tcss draws the labels in them).

    The theme's own label colour where it reads at :data:`MIN_CONTRAST` on the button
    (or its hover shade); else black or white, whichever reads better there, drawn as
    Textual draws its own (87 %) when that still reaches the floor. Textual's brightness
    rule put off-white on catppuccin-latte's orange: "Restore ticked files" at 2.3:1.
    """
    own = variables.get("button-color-foreground", f"auto {_LABEL_ALPHA:.0%}")
    out = {}
    for variant, hovered in BUTTON_VARIANTS.items():
        for state, shade in (("", ""), ("-hover", hovered)):
            name = f"button-{variant}{state}-foreground"
            ground = _parse(variables.get(f"{variant}{shade}"))
            if ground is None or _reads(own, ground):
                out[name] = own
                continue
            best = max((Color(0, 0, 0), Color(255, 255, 255)),
                       key=lambda c, g=ground: contrast(c, g))
            soft = f"{best.hex} {_LABEL_ALPHA:.0%}"
            out[name] = soft if _reads(soft, ground) else best.hex
    return out


def _reads(label: str, ground: Color) -> bool:
    """Whether a CSS label colour (``auto 87%``, ``#000000 87%``) reaches
    :data:`MIN_CONTRAST` on ``ground``, as Textual paints it there."""
    colour, _, percent = label.partition(" ")
    alpha = float(percent.rstrip("%")) / 100 if percent else 1.0
    if colour == "auto":
        painted = ground + ground.get_contrast_text(alpha)
    else:
        parsed = _parse(colour)
        if parsed is None:
            return True  # not ours to judge (an ANSI colour): left as the theme has it
        painted = ground + parsed.with_alpha(alpha)
    return contrast(painted, ground) >= MIN_CONTRAST


def readable_variables(variables: Mapping[str, str]) -> dict[str, str]:
    """``variables`` with each text colour of :data:`TEXT_ON` raised to :data:`MIN_CONTRAST`,
    and the coloured buttons' labels (:func:`button_labels`)."""
    out = dict(variables)
    out.update(button_labels(variables))
    for name, ground_names in TEXT_ON.items():
        color = _parse(out.get(name))
        grounds = [_parse(out.get(ground)) for ground in ground_names]
        if color is None or any(ground is None for ground in grounds):
            continue
        fixed = readable(color, [ground for ground in grounds if ground is not None])
        if fixed != color:
            out[name] = fixed.hex
    return out


def _parse(value: str | None) -> Color | None:
    """An opaque, non-ANSI colour, else None (ANSI colours are the terminal's to choose)."""
    if not value:
        return None
    try:
        color = Color.parse(value)
    except Exception:
        return None
    if color.ansi is not None or color.a < 1:
        return None
    return color
