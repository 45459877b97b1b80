"""Modules the first frame does not need, imported when first used.

The first frame is drawn before the runtime exists, so nothing on it needs
the runtime's event types, the ref parser or Textual's Markdown (together
about 90 ms of imports on a 2-core machine, a third of a bare Textual app's
whole start-up). The code that handles those names runs later, once a key is
open; it reaches them through a :class:`LazyModule`, which imports on the
first attribute access and then keeps each name as a plain attribute.

``importlib.util.LazyLoader`` does the same, but on Python 3.11 two threads
touching one lazily loaded module can see it half-initialised, and the
start-up worker imports the runtime in a thread. ``import_module`` takes
the import lock, so a :class:`LazyModule` is safe from either side.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    """Stands for the module ``name`` until one of its attributes is read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)  # copy, pickle and inspect probe these
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later reads skip __getattr__
        return value

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"
