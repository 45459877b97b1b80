"""Fast decoding of stored patches, for loading long logs.

``mutation_from_dict`` is the reference decoder; loading a 100k-message key
calls it 100k times, so this module precomputes, per patch class, its field
names and a type check derived from the field annotations, and defers to the
reference decoder whenever something does not fit (it raises the canonical
error). The result is the same patch, only cheaper to get.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..context.mutations import MUTATION_TYPES, ContextMutation, mutation_from_dict

# Field kinds, from the annotation text (the module uses postponed annotations).
_STR, _OPT_STR, _DICT, _DICT_LIST, _INT, _OPT_SECONDS, _OPT_BOOL = range(7)
_KINDS: dict[str, int] = {
    "str": _STR,
    "int": _INT,
    "str | None": _OPT_STR,
    "float | None": _OPT_SECONDS,
    "bool | None": _OPT_BOOL,
    "dict[str, Any]": _DICT,
    "list[dict[str, Any]]": _DICT_LIST,
    "list[dict[str, str]]": _DICT_LIST,
}


def _spec(cls: type) -> tuple[type, tuple[tuple[str, int], ...]] | None:
    out = []
    for f in fields(cls):
        kind = _KINDS.get(f.type if isinstance(f.type, str) else "")
        if kind is None:
            return None  # an annotation this module does not know: always use the reference
        out.append((f.name, kind))
    return cls, tuple(out)


_SPECS = {name: spec for name, cls in MUTATION_TYPES.items() if (spec := _spec(cls)) is not None}


_User = MUTATION_TYPES["UserMessageMutation"]
_Answer = MUTATION_TYPES["AssistantMessageMutation"]


def decode_mutation(data: Any) -> ContextMutation:
    """Same result as ``mutation_from_dict(data)``; raises ``MutationDecodeError`` likewise."""
    if type(data) is dict:
        name = data.get("type")
        # the two patches of nearly every line of a log, checked inline
        if name == "UserMessageMutation":
            message = data.get("message")
            if type(message) is dict:
                return _User(message)
        elif name == "AssistantMessageMutation" and "tool_calls" in data:
            content, calls = data.get("content"), data["tool_calls"]
            reasoning = data.get("reasoning_details", ())
            if (
                (content is None or type(content) is str)
                and type(calls) is list and not calls
                and ((type(reasoning) is list and all(type(r) is dict for r in reasoning))
                     or reasoning == ())
            ):
                return _Answer(content, calls, list(reasoning))
        spec = _SPECS.get(name) if type(name) is str else None
        if spec is not None:
            cls, checks = spec
            kwargs = {}
            for field_name, kind in checks:
                if field_name in data:
                    value = data[field_name]
                    t = type(value)
                    if kind == _STR:
                        if t is not str:
                            break
                    elif kind == _OPT_STR:
                        if t is not str and value is not None:
                            break
                    elif kind == _DICT:
                        if t is not dict:
                            break
                    elif kind == _INT:
                        if t is not int or value < 0:  # counts and numbers: never negative
                            break
                    elif kind == _OPT_SECONDS:
                        if value is not None and (t not in (int, float) or value < 0):
                            break
                    elif kind == _OPT_BOOL:
                        if t is not bool and value is not None:
                            break
                    elif t is not list or (value and not all(type(v) is dict for v in value)):
                        break
                    kwargs[field_name] = value
            else:
                try:
                    return cls(**kwargs)
                except TypeError:
                    pass
    return mutation_from_dict(data)
