"""The usual streamed delta read without parsing its JSON, exactly as the parse reads it.

A streamed answer is one SSE event per token, and after the first few every
event of a run is the same text but for one string: ``{"id": …, "choices":
[{"index": 0, "delta": {"content": "…"}, "finish_reason": null}]}``, or a tool
call's ``"arguments": "…"``. Parsing each (a JSON scan building five nested
containers, then reading them field by field) was most of the CPU the app
spent on 1 MB of tool arguments (143,000 events), and the dicts it builds keep
the collector busy. Here the first such event is parsed as usual and becomes a
*template*: the text before that string (``prefix``) and after it
(``suffix``). An event that is ``prefix + string + suffix`` then means what
the parse would have made of it with that string; its string is read with a
slice (``json.decoder.scanstring``, the parser's own, when it holds an
escape), and a run of such events becomes one piece of text.

Why this is exact: replacing one JSON string token by another leaves every
other token where it was, so the value differs only at that leaf. A template
is kept only after two made-up strings put in its place come out of the
ordinary reading (``classify``) as exactly one chunk carrying that string, no
more, so the leaf is the chunk's text and nothing else reads it. An empty
string falls back to the parse (reading skips empty text), and so does
anything that does not match: a server whose events differ each time (random
padding fields) costs a few failed attempts, then no more are made.
"""

from __future__ import annotations

import json.decoder
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: what the ordinary reading makes of one parsed event, when it is one chunk of
#: non-empty text that neighbours join: (the chunk's maker from its text, the text)
Classify = Callable[[Any], "tuple[Callable[[str], Any], str] | None"]
#: payloads → (values, error): the ordinary parse (``sse.decode``)
Decode = Callable[[list[str]], "tuple[list[Any], Exception | None]"]

#: a string token that may carry a chunk's text, up to its opening quote
_KEYS = re.compile(r'"(?:content|reasoning_content|reasoning|arguments)"\s*:\s*"')
#: what a JSON string must escape (and an escape itself): a slice is not enough
_SPECIAL = re.compile(r'["\\\x00-\x1f]')
_scanstring = json.decoder.scanstring
#: two strings put in a template's place to check it (letters, no escapes)
_PROBES = ("selfrefprobeA7q", "selfrefprobeZ2k")
MAX_TEMPLATES = 4
#: events read the ordinary way that are looked at as templates, per ``PAYS`` uses
#: of the kept ones: a stream where nothing repeats stops trying after these
TRIES = 16
PAYS = 64


@dataclass(slots=True)
class Template:
    prefix: str
    suffix: str
    make: Callable[[str], Any]
    hits: int = 0


class DeltaScanner:
    """Payloads in, values out: parsed JSON, or chunks made from runs of template events.

    One per stream. ``decode`` has ``sse.decode``'s contract (the values before
    the first bad payload, and its error), except that a run of events matching
    one template comes out as the one chunk the ordinary reading would have
    joined them into.
    """

    def __init__(self, decode: Decode, classify: Classify) -> None:
        self._decode = decode
        self._classify = classify
        self._templates: list[Template] = []
        self._tries = TRIES

    def decode(self, payloads: list[str]) -> tuple[list[Any], Exception | None]:
        if not self._templates and self._tries <= 0:
            return self._decode(payloads)  # the plain parse, whole batch at once
        out: list[Any] = []
        run: Template | None = None
        parts: list[str] = []
        templates = self._templates
        for payload in payloads:
            text = None
            for template in templates:
                text = _match(payload, template)
                if text is not None:
                    break
            if text is not None:
                template.hits += 1
                if template is not run:
                    if run is not None:
                        out.append(run.make("".join(parts)))
                        parts.clear()
                    run = template
                parts.append(text)
                continue
            if run is not None:
                out.append(run.make("".join(parts)))
                parts.clear()
                run = None
            values, error = self._decode([payload])
            if error is not None:
                return out, error
            value = values[0]
            out.append(value)
            if self._tries > 0:
                self._learn(payload, value)
        if run is not None:
            out.append(run.make("".join(parts)))
        return out, None

    def _learn(self, payload: str, value: Any) -> None:
        self._tries -= 1
        if self._tries == 0:
            if any(t.hits >= PAYS for t in self._templates):
                self._tries = TRIES  # the kept ones paid for these attempts: try on
                for template in self._templates:
                    template.hits = 0
            elif not any(t.hits for t in self._templates):
                # None ever matched (a field that differs in every event): stop
                # checking each event against them; the rest is parsed as usual.
                self._templates.clear()
                return
        seen = self._classify(value)
        if seen is None:
            return
        make, text = seen
        for key in _KEYS.finditer(payload):
            start = key.end()
            try:
                found, end = _scanstring(payload, start, True)
            except ValueError:
                continue
            if found != text:
                continue
            template = Template(payload[:start], payload[end - 1 :], make)
            if self._holds(template):
                if len(self._templates) >= MAX_TEMPLATES:
                    del self._templates[0]
                self._templates.append(template)
                return

    def _holds(self, template: Template) -> bool:
        """Whether two probe strings in the template's place read as exactly that text."""
        for probe in _PROBES:
            if probe in template.prefix or probe in template.suffix:
                return False
            values, error = self._decode([template.prefix + probe + template.suffix])
            if error is not None:
                return False
            seen = self._classify(values[0])
            if seen is None or seen[1] != probe or seen[0](probe) != template.make(probe):
                return False
        return True


def _match(payload: str, template: Template) -> str | None:
    """The string ``payload`` holds in ``template``'s place; None: not this template's."""
    prefix, suffix = template.prefix, template.suffix
    start = len(prefix)
    stop = len(payload) - len(suffix)
    if stop <= start or not payload.startswith(prefix) or not payload.endswith(suffix):
        return None
    text = payload[start:stop]
    if _SPECIAL.search(text) is None:
        return text
    try:
        text, end = _scanstring(payload, start, True)
    except ValueError:
        return None  # the parse reports it
    return text if end == stop + 1 and text else None
