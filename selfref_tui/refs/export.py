"""What a ref becomes when a person exports it to a file.

Why: models usually wrap code in a fence inside the ref. Saving the fence
markers into ``fib.py`` would break the file, so a ref that is exactly one
fenced block (blank lines around it ignored) exports as the bare code, named
after the ref with the extension its fence language suggests. Anything else
is saved as it is, as ``.md`` when it looks like Markdown, else ``.txt``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..safety.inert import writable

EXTENSIONS: dict[str, str] = {
    "python": ".py", "py": ".py", "python3": ".py",
    "javascript": ".js", "js": ".js", "jsx": ".jsx", "node": ".js",
    "typescript": ".ts", "ts": ".ts", "tsx": ".tsx",
    "rust": ".rs", "rs": ".rs", "go": ".go", "golang": ".go",
    "bash": ".sh", "sh": ".sh", "shell": ".sh", "zsh": ".sh", "console": ".sh",
    "json": ".json", "yaml": ".yaml", "yml": ".yaml", "toml": ".toml",
    "html": ".html", "css": ".css", "sql": ".sql",
    "c": ".c", "h": ".h", "cpp": ".cpp", "c++": ".cpp", "cxx": ".cpp", "hpp": ".hpp",
    "java": ".java", "kotlin": ".kt", "swift": ".swift", "csharp": ".cs", "cs": ".cs",
    "ruby": ".rb", "rb": ".rb", "php": ".php", "lua": ".lua", "r": ".r",
    "markdown": ".md", "md": ".md", "xml": ".xml", "ini": ".ini",
    "dockerfile": ".dockerfile", "makefile": ".mk", "diff": ".diff", "patch": ".diff",
    "text": ".txt", "txt": ".txt", "plaintext": ".txt", "": ".txt",
}
_FENCE_OPEN = re.compile(r"^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")
_MD_HINTS = re.compile(
    r"^(#{1,6}\s|\s*[-*+]\s|\s*\d+[.)]\s|>\s|\|.*\||\s*(`{3,}|~{3,}))|\*\*[^*]+\*\*|\[[^\]]+\]\([^)]+\)",
    re.MULTILINE,
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ExportPlan:
    content: str
    language: str  # fence language as written (lower-case), "" when not a fenced block
    extension: str
    suggested_name: str
    fenced: bool


def _single_fence(content: str) -> tuple[str, str] | None:
    """(language, code) when ``content`` is exactly one fenced block."""
    lines = content.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 2:
        return None
    m = _FENCE_OPEN.match(lines[0])
    if not m:
        return None
    indent, fence, info = m.group(1), m.group(2), m.group(3)
    closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    if not closing.match(lines[-1]):
        return None
    body = lines[1:-1]
    if any(closing.match(line) for line in body):
        return None  # the fence closes early: more than one block
    if indent:
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip(" \t")
                for line in body]
    code = "\n".join(body)
    return info.strip("{}.").lower(), (code + "\n" if code else "")


def safe_stem(ref_id: str) -> str:
    """A file name part that cannot climb directories, hide, or look like an option."""
    stem = _UNSAFE.sub("_", ref_id).strip("._-")[:64]
    return stem or "ref"


def looks_like_markdown(text: str) -> bool:
    return bool(_MD_HINTS.search(text))


def export_plan(ref_id: str, content: str) -> ExportPlan:
    stem = safe_stem(ref_id)
    fenced = _single_fence(content)
    if fenced is not None:
        language, code = fenced
        ext = EXTENSIONS.get(language, ".txt")
        body = code
    else:
        language = ""
        ext = ".md" if looks_like_markdown(content) else ".txt"
        body = content
    if body and not body.endswith("\n"):
        body += "\n"  # a text file ends with a line break (cat, diff and git expect one)
    body = writable(body)  # a lone surrogate (half an emoji's pair) has no UTF-8: its escape
    name = stem if stem.lower().endswith(ext) else stem + ext
    return ExportPlan(body, language, ext, name, fenced is not None)
