"""Fast decoding of stored patches, for loading long logs.

``mutation_from_dict`` is the reference decoder; loading a 100k-message key
calls it 100k times, so this module precomputes, per patch class, its field
names and a type check derived from the field annotations, and defers to the
reference decoder whenever something does not fit (it raises the canonical
error). The result is the same patch, only cheaper to get.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from ..context.mutations import MUTATION_TYPES, ContextMutation, mutation_from_dict


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_opt_str(v: Any) -> bool:
    return v is None or type(v) is str


def _is_dict(v: Any) -> bool:
    return type(v) is dict


def _is_dict_list(v: Any) -> bool:
    return type(v) is list and all(type(x) is dict for x in v)


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "str": _is_str,
    "str | None": _is_opt_str,
    "dict[str, Any]": _is_dict,
    "list[dict[str, Any]]": _is_dict_list,
    "list[dict[str, str]]": _is_dict_list,
}


def _spec(cls: type) -> tuple[type, tuple[tuple[str, Callable[[Any], bool]], ...]] | None:
    out = []
    for f in fields(cls):
        check = _CHECKS.get(f.type if isinstance(f.type, str) else "")
        if check is None:
            return None  # an annotation this module does not know: always use the reference
        out.append((f.name, check))
    return cls, tuple(out)


_SPECS = {name: spec for name, cls in MUTATION_TYPES.items() if (spec := _spec(cls)) is not None}


def decode_mutation(data: Any) -> ContextMutation:
    """Same result as ``mutation_from_dict(data)``; raises ``MutationDecodeError`` likewise."""
    if type(data) is dict:
        name = data.get("type")
        spec = _SPECS.get(name) if type(name) is str else None
        if spec is not None:
            cls, checks = spec
            kwargs = {}
            for name, check in checks:
                if name in data:
                    value = data[name]
                    if not check(value):
                        break
                    kwargs[name] = value
            else:
                try:
                    return cls(**kwargs)
                except TypeError:
                    pass
    return mutation_from_dict(data)
