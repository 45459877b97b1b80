"""What the model's append to, or insert into, a large file costs.

``fd_to_file`` with mode ``append`` or ``insert`` changes a file that exists,
with a checkpoint (what a rewind puts back) as the tool keeps one. Each case runs
in its own process on a fresh file of text lines, so the peak memory (the
process's maximum resident set, minus what it held before the write) is that
write's alone; the time is the one call. Also printed: the bytes the key's
``files/`` folder holds after it. The last row is an append with no checkpoint
(a person's export appending to a file).

    .venv/bin/python bench/fd_to_file_bench.py [MiB]     (default: 200)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LINE = b"a line of a large log file, as a program writes them over a day\n"
NEW = "two new lines\nwritten by the model\n"


def _make(path: Path, mib: int) -> int:
    """A file of about ``mib`` MiB of text lines; its line count."""
    block = LINE * (2**20 // len(LINE))
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)
    return mib * (2**20 // len(LINE))


def one(mode: str, mib: int, folder: Path, kept: bool = True) -> dict[str, float]:
    """One write in this process: seconds, peak MiB added, MiB kept in ``files/``
    (``kept=False``: no checkpoint, as a person's export appends)."""
    from selfref_tui.refs.fds import FdTable
    from selfref_tui.selfref.checkpoints import Checkpoints
    from selfref_tui.selfref.files import fd_to_file

    work, key = folder / "work", folder / "key"
    work.mkdir()
    target = work / "big.log"
    lines = _make(target, mib)
    table = FdTable()
    fd = table.add_fd(NEW)["id"]
    records: list[dict] = []
    checkpoints = Checkpoints(key)
    where = {"insert_at_line": lines // 2} if mode == "insert" else {}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    recorder = checkpoints.recorder("c1", records, "now") if kept else None
    result = fd_to_file(table, fd, str(target), mode=mode, roots=[work], checkpoint=recorder,
                        **where)
    took = time.perf_counter() - start
    added = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak
    if "fd_error" in result or target.stat().st_size != mib * 2**20 // len(LINE) * len(LINE) \
            + len(NEW):
        raise SystemExit(f"the write failed: {result}")
    held = sum(p.stat().st_size for p in checkpoints.folder.iterdir()) \
        if checkpoints.folder.is_dir() else 0
    return {"s": took, "peak_mib": added / 1024, "kept_mib": held / 2**20}


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        with tempfile.TemporaryDirectory(prefix="fd-to-file-bench-") as tmp:
            print(json.dumps(one(sys.argv[2], int(sys.argv[3]), Path(tmp),
                                 kept=sys.argv[4:] != ["bare"])))
        return
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(f"fd_to_file on a {mib} MiB file of text lines")
    print(f"{'mode':<28} {'s':>7} {'peak +MiB':>10} {'kept MiB':>9}")
    for mode, how in (("append", "checkpoint"), ("insert", "checkpoint"), ("append", "bare")):
        out = subprocess.run([sys.executable, __file__, "--one", mode, str(mib), how],
                             capture_output=True, text=True, check=True).stdout
        got = json.loads(out)
        label = f"{mode} ({'with its checkpoint' if how == 'checkpoint' else 'no checkpoint'})"
        print(f"{label:<28} {got['s']:>7.2f} {got['peak_mib']:>10.1f} {got['kept_mib']:>9.1f}")


if __name__ == "__main__":
    main()
