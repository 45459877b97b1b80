"""What the model's overwrite of a large file costs for its checkpoint.

Before ``fd_to_file`` replaces a file it keeps the previous bytes so a rewind can
put them back; a file over ``checkpoints.MAX_KEPT_BYTES`` (32 MiB) is neither read
nor kept. Each size is a sparse file (no disk used): the figures are the time of
one overwrite with its checkpoint, the peak memory it added, and what the key's
``files/`` folder holds after it.

    .venv/bin/python bench/checkpoint_bench.py [MiB ...]   (default: 1 16 31 33 1024)
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from selfref_tui.refs.fds import FdTable
from selfref_tui.selfref.checkpoints import MAX_KEPT_BYTES, Checkpoints
from selfref_tui.selfref.files import fd_to_file


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(mib: int) -> tuple[float, float, int, str]:
    """(seconds, peak MiB added, bytes kept, the record's before) for one overwrite."""
    with tempfile.TemporaryDirectory() as tmp:
        work, key = Path(tmp, "work"), Path(tmp, "key")
        work.mkdir()
        target = work / "big.log"
        with open(target, "wb") as f:
            f.truncate(mib * 2**20)
        table = FdTable()
        fd = table.add_fd("a short new text\n")["id"]
        records: list[dict] = []
        checkpoints = Checkpoints(key)
        peak = _peak_mib()
        start = time.perf_counter()
        fd_to_file(table, fd, str(target), roots=[work],
                   checkpoint=checkpoints.recorder("c1", records, "now"))
        took = time.perf_counter() - start
        kept = sum(p.stat().st_size for p in checkpoints.folder.iterdir())
        before = str(records[0]["before"])
        return took, _peak_mib() - peak, kept, before if before == "too-large" else "kept"


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1, 16, 31, 33, 1024]
    print(f"cap: {MAX_KEPT_BYTES // 2**20} MiB")
    print(f"{'file MiB':>9} {'ms':>8} {'peak +MiB':>10} {'kept MiB':>9}  before")
    for mib in sizes:
        took, peak, kept, before = one(mib)
        print(f"{mib:>9} {took * 1000:>8.1f} {peak:>10.1f} {kept / 2**20:>9.1f}  {before}")


if __name__ == "__main__":
    main()
