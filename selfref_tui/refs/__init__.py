"""Refs and file descriptors: pure parsing, paging and export planning (no I/O)."""

from __future__ import annotations

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
