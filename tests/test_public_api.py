"""The names the package promises are importable from the top-level package."""

from __future__ import annotations

import subprocess
import sys

import selfref_tui

PROMISED = [
    "AssistantMessageMutation", "ToolResultMutation", "MultimodalToolResultMutation",
    "UserMessageMutation", "ContextReplaceMutation", "ContextSummaryMutation",
    "ExperienceRememberMutation", "ExperienceForgetMutation", "AssistantTruncatedMutation",
    "ToolCancelledMutation", "ContextMutation", "apply_mutations", "DataFromSelfRef",
    "render_system_prompt_with_experiences", "SelfReference", "SelfRefSession", "parse_refs",
    "AgentInputRouter",
]


def test_every_promised_name_is_importable():
    for name in PROMISED:
        assert getattr(selfref_tui, name) is not None, name
    from selfref_tui import AgentInputRouter, SelfReference, parse_refs  # noqa: F401

    assert [r.id for r in selfref_tui.parse_refs('<ref id="a">x</ref>')] == ["a"]


def test_unknown_name_raises_attribute_error():
    try:
        selfref_tui.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_package_import_stays_light():
    """Importing the package must not pull in the network client or Textual."""
    code = "import sys, selfref_tui; print('openai' in sys.modules, 'textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
