"""The trust boundary: text from the model, a server, a tool or the disk is data.

One rule, owned here and used by every widget and every command-line line:

- :func:`inert` makes control characters visible (``␛`` for ESC, ``\\x9b`` for a
  C1 byte …) so nothing untrusted can drive the terminal: no clipboard writes,
  no retitling, no clearing the screen.
- :func:`inert_line` does the same for one-line places (titles, list rows).
- :func:`name_line` does that for a name, and shows invisible format characters
  (zero-width, bidirectional), spaces other than the plain one and letters that mix
  scripts in a word (:func:`lookalike_letters`) as escapes, so two different names
  never look alike.
- :func:`key_option` gives ``--key NAME`` for a command a person copies: that name,
  shell-quoted (:func:`shell_word`), its marked characters escaped so bash reads them back.
- :func:`one_line` puts an error that quotes a server on one short line.
- :func:`content` builds a Textual ``Content`` from plain text: never parsed as
  markup, so ``[@click=app.quit]`` is shown, not run.
- :func:`writable` escapes lone surrogates in text written to a file (UTF-8 has none).
- :func:`json_inert` escapes what ``json.dumps(ensure_ascii=False)`` leaves raw.
- :func:`redact` hides secrets (the configured key, ``Bearer`` tokens, URL
  userinfo) in anything shown or printed.

Pure: no files, no network; Textual is imported only by :func:`content`.
"""

from __future__ import annotations

from .inert import (
    content,
    has_controls,
    inert,
    inert_line,
    json_inert,
    key_option,
    lookalike_letters,
    mixed_scripts,
    name_line,
    odd_space,
    one_line,
    one_script,
    shell_word,
    writable,
)
from .redact import redact

__all__ = ["content", "has_controls", "inert", "inert_line", "json_inert", "key_option",
           "lookalike_letters", "mixed_scripts", "name_line", "odd_space", "one_line",
           "one_script", "redact", "shell_word", "writable"]
