"""The layers, checked: what each package may import, and no import cycles.

Every module's imports are read with ``ast``, those inside functions and under
``TYPE_CHECKING`` included, and the modules named to ``LazyModule``: a deferred import
still ties two modules together, and a cycle through one is still a cycle. The rules are
docs/architecture.md's and the docstrings of ``selfref_tui/agent`` and its subpackages.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "selfref_tui"
ROOT = "selfref_tui"


@dataclass(frozen=True)
class Import:
    importer: str
    #: the imported module: ``from a.b import c`` names ``a.b.c`` when that is a module
    target: str
    line: int


def _name_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _modules() -> dict[str, Path]:
    return {_name_of(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(module: str, source: str, *, is_package: bool,
               known: Iterable[str] = ()) -> list[Import]:
    """Every import in ``source`` (module ``module``), wherever it is in the file."""
    known = set(known)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(module, alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.append(Import(module, child if child in known else target, node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "LazyModule" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            # imported on first use (ui/lazy_import.py): still a tie between the two modules
            found.append(Import(module, node.args[0].value, node.lineno))
    return found


@functools.cache
def _all_imports() -> tuple[Import, ...]:
    modules = _modules()
    found: list[Import] = []
    for name, path in modules.items():
        found += imports_of(name, path.read_text(encoding="utf-8"),
                            is_package=path.name == "__init__.py", known=modules)
    return tuple(found)


def _within(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _pkg(*names: str) -> tuple[str, ...]:
    return tuple(f"{ROOT}.{n}" for n in names)


@dataclass(frozen=True)
class Rule:
    what: str
    importers: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    #: importers the rule leaves out (a subpackage with its own rule)
    except_importers: tuple[str, ...] = ()


RULES = [
    Rule("the pure core imports nothing above it",
         _pkg("context", "refs", "safety"),
         _pkg("selfref", "agent", "ui", "cli", "demo")),
    Rule("the pure core uses no event loop, network or terminal",
         _pkg("context", "refs", "safety"),
         ("asyncio", "socket", "http", "httpx", "openai", "textual", "rich"),
         allowed=("textual.content",)),  # safety builds a Content, never parses markup
    Rule("the store imports nothing of the runtime or the front ends",
         _pkg("selfref"), _pkg("agent", "ui", "cli", "demo")),
    Rule("the runtime never imports Textual", _pkg("agent"), ("textual",)),
    Rule("the runtime imports no front end", _pkg("agent"), _pkg("ui", "cli")),
    Rule("the UI never touches the store's files", _pkg("ui"),
         _pkg("selfref.store", "selfref.fsutil", "selfref.lock", "selfref.decode")),
    Rule("config imports nothing of the package", _pkg("config", "config_load"),
         _pkg("context", "refs", "selfref", "agent", "ui", "cli", "demo")),
    Rule("agent's shared vocabulary imports none of its parts",
         _pkg("agent.events", "agent.abort", "agent.protocols"),
         _pkg("agent.provider", "agent.turn", "agent.tools", "agent.chat", "agent.mcp")),
    Rule("the provider knows nothing of turns, tools or windows",
         _pkg("agent.provider"), _pkg("agent.turn", "agent.tools", "agent.chat", "agent.mcp")),
    Rule("tools know nothing of turns, the provider or windows",
         _pkg("agent.tools"), _pkg("agent.turn", "agent.provider", "agent.chat", "agent.mcp")),
    Rule("a turn takes the provider's vocabulary only (the client comes as a protocol)",
         _pkg("agent.turn"), _pkg("agent.provider", "agent.chat", "agent.mcp"),
         allowed=_pkg("agent.provider.chunks", "agent.provider.errors")),
    Rule("MCP is a tool source: no turns, provider or windows",
         _pkg("agent.mcp"), _pkg("agent.turn", "agent.provider", "agent.chat")),
    Rule("the chat controller sits on top of the runtime",
         _pkg("agent"), _pkg("agent.chat"), except_importers=_pkg("agent.chat")),
]


def violations(rule: Rule, found: Iterable[Import]) -> list[str]:
    return [
        f"{i.importer}:{i.line} imports {i.target}"
        for i in found
        if _within(i.importer, rule.importers)
        and not _within(i.importer, rule.except_importers)
        and _within(i.target, rule.forbidden)
        and not _within(i.target, rule.allowed)
    ]


@pytest.mark.parametrize("rule", RULES, ids=[r.what for r in RULES])
def test_layer_rule(rule: Rule) -> None:
    assert violations(rule, _all_imports()) == [], rule.what


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def test_no_import_cycles() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for i in _all_imports():
        target = i.target
        while target and target not in modules:  # ``from pkg import attr`` → pkg
            target = target.rpartition(".")[0]
        if target and target != i.importer:
            graph[i.importer].add(target)
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def _file_calls(module: str) -> list[str]:
    """Calls in ``module`` that open a file: ``open()``, ``os.open``, ``io.open``,
    ``Path.read_text`` and its kin (``Image.open`` of bytes in memory is not one)."""
    found = []
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id == "open":
            found.append(f"{module}:{node.lineno} open()")
        elif isinstance(fn, ast.Attribute) and (
            fn.attr in ("read_text", "write_text", "read_bytes", "write_bytes")
            or (fn.attr == "open" and isinstance(fn.value, ast.Name)
                and fn.value.id in ("os", "io"))
        ):
            found.append(f"{module}:{node.lineno} {ast.unparse(fn)}()")
    return found


@pytest.mark.parametrize("packages", [_pkg("ui"), _pkg("context", "refs", "safety")],
                         ids=["ui", "pure core"])
def test_opens_no_files(packages: tuple[str, ...]) -> None:
    found = [call for m in _modules() if _within(m, packages) for call in _file_calls(m)]
    assert found == []


# ------------------------------------------------------------ the checker itself


def test_imports_are_read_wherever_they_are() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import sibling, helper\n"
        "if TYPE_CHECKING:\n"
        "    from ..b import Thing\n"
        "def f():\n"
        "    import textual.widgets\n"
        "    from .sibling import name\n"
        "late = LazyModule('p.c.late')\n"
    )
    found = imports_of("p.a.m", source, is_package=False, known={"p.a.sibling"})
    assert sorted((i.line, i.target) for i in found) == [
        (1, "typing"), (2, "p.a"), (2, "p.a.sibling"), (4, "p.b"),
        (6, "textual.widgets"), (7, "p.a.sibling"), (8, "p.c.late"),
    ]


def test_a_forbidden_import_is_reported() -> None:
    rule = Rule("core", ("p.core",), ("p.ui",), allowed=("p.ui.ok",))
    found = [Import("p.core.x", "p.ui.widgets", 3), Import("p.core.y", "p.ui.ok", 4),
             Import("p.uix", "p.ui.widgets", 5), Import("p.core.z", "p.uix", 6)]
    assert violations(rule, found) == ["p.core.x:3 imports p.ui.widgets"]


def test_a_cycle_is_reported_with_its_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"g"},
             "g": {"f"}}
    assert cycles(graph) == [["a", "b", "c"], ["f", "g"]]
