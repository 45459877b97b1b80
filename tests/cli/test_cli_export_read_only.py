"""An export onto a file the person made read-only: refused before anything is written.

Images go beside the export before its own file (a refused images folder leaves
it unwritten); a read-only export file refused after them left the images written
under a message saying nothing was changed.
"""

from __future__ import annotations

import pytest

from tests.cli.helpers import cli, one_line
from tests.cli.test_cli_search_export import _seed
from tests.selfref.test_store_cli import denied


@pytest.mark.parametrize("through", ["file", "link"])
def test_a_read_only_export_file_is_refused_before_any_image_is_written(tmp_path, through):
    _seed()  # "main" holds an image
    kept = tmp_path / "kept.md"
    kept.write_text("mine")
    target = tmp_path / "chat.md"
    if through == "link":  # the person's link, followed as the export follows it
        target.symlink_to(kept)
    else:
        target = kept
    images = tmp_path / f"{target.stem}-images"
    with denied(kept, 0o444):
        result = cli("export", "--key", "main", "-o", str(target), "--force")
    assert result.returncode == 1, result.stderr
    assert f"{target} is read-only; nothing was changed" in one_line(result.stderr)
    assert kept.read_text() == "mine" and not images.exists()
