"""The context package re-exports its public names."""

from __future__ import annotations

import selfref_tui.context as context


def test_all_names_resolve_and_cover_the_ten_patches():
    for name in context.__all__:
        assert getattr(context, name) is not None, name
    from selfref_tui.context.mutations import MUTATION_TYPES

    assert set(MUTATION_TYPES) <= set(context.__all__)
    assert context.compile_messages.__module__ == "selfref_tui.context.compile"
