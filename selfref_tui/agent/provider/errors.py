"""``ProviderError``: one line a person can act on, and how a failure becomes one.

A server's refusal (status, body), a transport failure or a mid-stream error event
is mapped here to a ``ProviderError`` whose message names the URL or model and what
to do; length refusals are recognised across servers (with their figures when the
text says them), and so are refusals of a request's images.
"""

from __future__ import annotations

import contextlib
import functools
import re
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from selfref_tui.agent.provider.refusal import REFUSAL_READ_S, is_slow
from selfref_tui.config import ProviderConfig
from selfref_tui.context.images import image_urls
from selfref_tui.safety import one_line, redact


class ProviderError(Exception):
    """A failure a person can act on.

    ``message`` is one line naming the URL or model and what to do; ``detail``
    is the server's own error text in full (a pydantic report runs to dozens
    of lines; its cause is rarely in the first 160 characters), for
    ``ask --verbose`` and the app's expandable error. ``kind`` is one of
    :attr:`KINDS`; ``context_overflow`` means the request does not fit the
    model's window, with ``tokens`` and ``window`` when the server said them.
    """

    KINDS = ("auth", "model", "rate_limit", "server", "connection", "timeout", "protocol",
             "bad_request", "context_overflow")

    def __init__(self, kind: str, message: str, *, partial: bool = False,
                 status: int | None = None, detail: str = "", tokens: int | None = None,
                 window: int | None = None, images_refused: bool = False,
                 bad_image: bool = False) -> None:
        # trust boundary: no bearer token or URL userinfo, ever
        message, detail = redact(message), redact(detail)
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.partial = partial
        self.status = status
        self.detail = detail
        self.tokens = tokens
        self.window = window
        #: the server refused the request's images (it carried ``image_url`` parts)
        self.images_refused = images_refused
        #: the server takes images but could not read one of this request's
        self.bad_image = bad_image

    def __repr__(self) -> str:
        return f"ProviderError({self.kind!r}, {self.message!r}, partial={self.partial})"



class _Retryable(Exception):
    def __init__(self, error: ProviderError, delay: float | None, reason: str) -> None:
        super().__init__(error.message)
        self.error = error
        self.delay = delay
        self.reason = reason



MAX_RETRY_AFTER_S = 120.0



def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds from Retry-After / retry-after-ms, capped; None when absent or unreadable."""
    headers = exc.response.headers
    ms = headers.get("retry-after-ms")
    if ms:
        with contextlib.suppress(ValueError):
            return min(max(float(ms) / 1000, 0.0), MAX_RETRY_AFTER_S)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        pass
    try:
        import datetime as _dt

        when = parsedate_to_datetime(value)
        delta = (when - _dt.datetime.now(when.tzinfo)).total_seconds()
        return min(max(delta, 0.0), MAX_RETRY_AFTER_S)
    except (TypeError, ValueError):
        return None



def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return exc.message



#: what servers say when a request does not fit the model's window: OpenAI's code,
#: vLLM/OpenAI's "maximum context length", llama.cpp's "exceed(s) context window" /
#: "exceeds the available context size", Anthropic-style "prompt is too long", LM
#: Studio's "context length", Ollama/TGI's "too many tokens" / "input is too long"
_OVERFLOW = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|"
    r"exceeds? (?:the )?(?:available )?context (?:window|size|length)|"
    r"context (?:window|size|length) (?:of \d+ )?(?:has been |was |is )?exceeded|"
    r"prompt is too long|too many (?:input )?tokens|input is too long|"
    r"longer than the (?:model's )?context",
    re.IGNORECASE)



_WINDOW_FIGURE = re.compile(r"(?:maximum context length is|context window of|"
                            r"context size(?: of)?|n_ctx(?:_slot)?\s*=?)\s*\(?(\d+)",
                            re.IGNORECASE)



_TOKENS_FIGURE = re.compile(r"(?:requested|Requested tokens|prompt has|resulted in|"
                            r"n_prompt_tokens\s*=?)\s*\(?(\d+)", re.IGNORECASE)



#: pydantic's report: the request body's shape was refused, whatever the status
_VALIDATION = re.compile(r"\d+ validation errors?(?::| for )", re.IGNORECASE)



def _is_overflow(text: str, code: object = None) -> bool:
    return code in ("context_length_exceeded", "exceed_context_size_error") or bool(
        _OVERFLOW.search(text))



def _overflow_text(exc: openai.APIError) -> str | None:
    """The error text of a mid-stream error event when it is a length refusal."""
    body = exc.body
    text = exc.message
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            text = inner["message"]
            if _is_overflow(text, inner.get("code")):
                return text
    return text if _is_overflow(str(text)) else None



def _overflow_figures(text: str) -> tuple[int | None, int | None]:
    """(requested tokens, window) when the server's text says them."""
    window = _WINDOW_FIGURE.search(text)
    tokens = _TOKENS_FIGURE.search(text)
    return (int(tokens.group(1)) if tokens else None, int(window.group(1)) if window else None)



#: a refusal that names images: OpenAI's "image_url is only supported by certain models",
#: vLLM's "… is not a multimodal model", llama.cpp's "image input is not supported" (mmproj)
_IMAGES_REFUSED = re.compile(r"image|vision|multi-?modal|mmproj", re.IGNORECASE)



#: a refusal of one image, not of images: OpenAI's "You uploaded an unsupported image"
#: (invalid_image_format), "does not represent a valid image" (image_parse_error), Pillow's
#: "cannot identify image file" behind vLLM, "Could not process image", "failed to decode"
_BAD_IMAGE = re.compile(
    r"invalid[_ ]image|unsupported image|image_parse_error|not (?:represent )?a valid image|"
    r"cannot identify image|image (?:file |data )?(?:is )?(?:invalid|corrupt|malformed|"
    r"truncated)|(?:could not|couldn't|cannot|can't|unable to|failed to) (?:decode|process|"
    r"read|load|parse|open) (?:the |an? )?(?:provided )?image", re.IGNORECASE)


#: what a 5xx must say to be read as images refused rather than a failure worth a retry:
#: llama.cpp's "image input is not supported … mmproj", "… is not a multimodal model"
_IMAGE_INPUT_REFUSED = re.compile(
    r"image_url|image input|mmproj|not a multi-?modal model|"
    r"(?:images?|vision) (?:input )?(?:is |are )?not supported|"
    r"(?:does not|doesn't|cannot|can't) (?:support|accept|take) (?:images?|vision)",
    re.IGNORECASE)



def _refuses_images(status: int, text: str) -> bool:
    """Whether a refusal of a request carrying images is about the images."""
    if status in (400, 415, 422):
        return bool(_IMAGES_REFUSED.search(text))
    # a 5xx validation report echoes the request, image_url parts and all: not about them
    return (status in (500, 501) and bool(_IMAGE_INPUT_REFUSED.search(text))
            and not _VALIDATION.search(text))



def carries_images(messages: list[dict]) -> bool:
    """Whether a request's messages hold an ``image_url`` part (read on errors only)."""
    return any(isinstance(m, dict) and image_urls(m.get("content")) for m in messages)



def _names_stream_options(error: ProviderError) -> bool:
    """A 400/422 whose text names stream_options: the one refusal worth a re-send."""
    return error.status in (400, 422) and "stream_options" in (error.detail or error.message)



def _is_connect_timeout(exc: BaseException) -> bool:
    """A timeout while connecting (nothing was sent), told by the HTTP library's exception."""
    cause = exc.__cause__
    return cause is not None and "Connect" in type(cause).__name__



def _reason(exc: BaseException) -> str:
    """A retry's reason, short: "rate limited (429)", "server error (503)", "cannot connect"."""
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate limited (429)"
        return f"server error ({exc.status_code})"
    if isinstance(exc, openai.APITimeoutError):
        return "connect timeout"
    return "cannot connect"



def _short(value: object) -> str:
    return one_line(value, 160)


def provider_error(config: ProviderConfig, kind: str, message: str, *, detail: str = "",
                   **extra: Any) -> ProviderError:
    """The one place a ProviderError is made: a server may echo the key, so both
    texts pass through ``redact`` with the configured key."""
    secrets = [config.api_key]
    return ProviderError(kind, redact(message, secrets), detail=redact(detail, secrets),
                         **extra)


def first_byte_timeout(config: ProviderConfig) -> ProviderError:
    """A server that took the request and sent nothing in time (it was not re-sent)."""
    seconds = config.first_byte_timeout
    return provider_error(config, "timeout", f"{config.base_url} accepted the request but "
                          f"sent nothing for {seconds:g} s (first_byte_timeout_s) — the model "
                          "may still be loading or reading a long prompt; try again (it was "
                          "not re-sent), or raise first_byte_timeout_s")


def map_error(config: ProviderConfig, exc: BaseException, *, partial: bool = False,
              midway: bool = False, images: bool = False) -> ProviderError:
    """The error for ``exc`` (made by :func:`provider_error`: the key masked wherever it
    was echoed).

    ``images``: the request carried ``image_url`` parts. Only then is a refusal
    that names images read as "this model has no vision": without them, a
    validation report echoing a message about "an image" is a validation
    report, and a 5xx about a "vision encoder" is a server failure.
    """
    url = config.base_url or "the provider"
    model = config.model
    error = functools.partial(provider_error, config)
    if isinstance(exc, openai.APITimeoutError):
        if _is_connect_timeout(exc):
            return error("timeout", f"cannot connect to {url} within "
                         f"{config.connect_timeout_s:g} s (connect_timeout_s) — is the "
                         "server running and reachable?", partial=partial)
        if midway and partial:
            return error("timeout", f"the stream from {url} stopped: nothing for "
                         f"{config.idle_timeout:g} s (idle_timeout_s)", partial=partial)
        return first_byte_timeout(config)
    if isinstance(exc, openai.APIConnectionError):
        if midway and partial:
            return error("connection", f"connection lost: the stream from {url} "
                         "dropped midway", partial=partial)
        if midway:
            return error("connection", f"connection lost: {url} closed the stream "
                         "before answering — try again")
        return error("connection", f"cannot reach {url} — is the server running?",
                     partial=partial)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        full = _api_message(exc)
        detail = _short(full)
        if is_slow(exc.response):
            detail += f"; its error text was still arriving after {REFUSAL_READ_S:g} s"
        if _is_overflow(full, exc.code):
            tokens, window = _overflow_figures(full)
            figures = f" ({tokens} of {window} tokens)" if tokens and window else ""
            return error("context_overflow", "the conversation no longer fits the "
                         f"model's window{figures} — {url} refused it for length",
                         detail=full, status=status, tokens=tokens, window=window)
        if images and status in (400, 415, 422) and _BAD_IMAGE.search(full):
            return error("bad_request", f"{url} could not read an image of the request "
                         f"(it answered {status}) — send the message again without the "
                         "attachment, or attach another image", status=status, detail=full,
                         bad_image=True)
        if images and _refuses_images(status, full):
            return error("bad_request", f"model '{model}' does not accept images — remove "
                         "the attachment (send the message again without it) or pick a "
                         f"vision model ({url} answered {status})", status=status,
                         detail=full, images_refused=True)
        if status in (401, 403):
            env = config.api_key_env or "OPENAI_API_KEY"
            return error("auth", f"API key rejected by {url} ({status}) — check "
                         f"{env} (or the profile's api_key_env)", status=status,
                         detail=full)
        if status == 404:
            if exc.code == "model_not_found" or "model" in detail.lower():
                # a conversation remembers its model (/model): config.toml's `model`
                # does not reach it, and the app's --model does not beat its choice
                return error("model", f"model '{model}' not found at {url} — choose "
                             "another: /model NAME in the app, --model NAME on the "
                             "command line", status=status, detail=full)
            return error("model", f"{url} answered 404 for model '{model}' — check "
                         "the base URL (it usually ends in /v1) and the model name "
                         "(`--model`)", status=status, detail=full)
        if status == 429:
            return error("rate_limit", f"rate limited by {url} (429) — wait a moment "
                         f"and try again ({detail})", status=status, detail=full)
        if status >= 500 and not _VALIDATION.search(full):
            return error("server", f"{url} failed with {status} ({detail}) — try "
                         "again; if it persists, check the server's logs",
                         status=status, partial=partial, detail=full)
        # 4xx, and a 500 that is a validation report (llama-cpp-python answers
        # a body its request model refuses with 500): the same request would
        # fail the same way, so it is not retried.
        return error("bad_request", f"{url} rejected the request ({status}: "
                     f"{detail})", status=status, detail=full)
    if isinstance(exc, openai.APIError):
        text = _overflow_text(exc)
        if text is not None:
            tokens, window = _overflow_figures(text)
            figures = f" ({tokens} of {window} tokens)" if tokens and window else ""
            return error("context_overflow", "the conversation no longer fits the "
                         f"model's window{figures} — {url} refused it for length",
                         detail=text, partial=partial, tokens=tokens, window=window)
        return error("server", f"{url} reported an error mid-stream: "
                     f"{_short(exc.message)}", partial=partial, detail=str(exc.message))
    return error("protocol", f"unexpected answer from {url}: {_short(exc)}",
                 partial=partial, detail=str(exc))
