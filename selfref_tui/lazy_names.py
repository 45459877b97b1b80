"""A package's public names, resolved when first read (PEP 562).

``selfref_tui`` itself, ``context`` and ``refs`` list their public names but
import the module defining one only when it is read: every command-line call
imports the package, and a command that folds a log needs neither the compile
boundary nor the token counter (see each package's docstring). One function
makes their module ``__getattr__``, so the three say the same thing the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def resolved_on_read(package: str, exports: Mapping[str, str],
                     namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``exports`` maps each public name to
    the module that defines it (relative to ``package`` when it starts with "."); a name
    read once is put in ``namespace`` (the package's globals) and not looked up again."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
