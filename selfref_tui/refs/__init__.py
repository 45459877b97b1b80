"""Refs and file descriptors: pure parsing, paging and export planning (no I/O).

The names below are resolved when first read (PEP 562): a module that needs
only the parser (the summary's kept words) does not import the fd table and
the export planning too.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: each public name → the module of this package that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("ExportPlan", "export_plan"), "export"),
    **dict.fromkeys(("FdError", "FdTable"), "fds"),
    **dict.fromkeys(("Ref", "Segment", "StreamingRefParser", "parse_refs"), "parser"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .export import ExportPlan, export_plan
    from .fds import FdError, FdTable
    from .parser import Ref, Segment, StreamingRefParser, parse_refs

__all__ = [
    "ExportPlan",
    "FdError",
    "FdTable",
    "Ref",
    "Segment",
    "StreamingRefParser",
    "export_plan",
    "parse_refs",
]
