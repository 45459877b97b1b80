"""A write that really fails half-way, for the file tests of both write paths."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def write_past_a_size_limit(path: Path, root: Path,
                            **kwargs: object) -> subprocess.CompletedProcess:
    """``write_file(path, 1 MB, roots=[root], **kwargs)`` in a child process whose files may
    not grow past 64 KiB: the disk refuses the write midway, as a full disk would. The child
    exits 3 and prints the refusal when ``write_file`` raises ``FileWriteError``."""
    extra = "".join(f", {name}={value!r}" for name, value in kwargs.items())
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        from selfref_tui.selfref.file_walk import FileWriteError
        from selfref_tui.selfref.files import write_file
        try:
            write_file({str(path)!r}, "y" * 1_000_000, roots=[{str(root)!r}]{extra})
        except FileWriteError as exc:
            print("refused:", exc)
            sys.exit(3)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT)
