"""Refs and file descriptors: pure parsing, paging and export planning (no I/O).

The names below are resolved when first read (PEP 562): a module that needs
only the parser (the summary's kept words) does not import the fd table and
the export planning too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selfref_tui.lazy_names import resolved_on_read

#: each public name → the module of this package that defines it (relative)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("ExportPlan", "export_plan"), ".export"),
    **dict.fromkeys(("FdError", "FdTable"), ".fds"),
    **dict.fromkeys(("Ref", "Segment", "StreamingRefParser", "parse_refs"), ".parser"),
}


__getattr__ = resolved_on_read(__name__, _EXPORTS, globals())


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
