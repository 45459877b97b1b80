"""A hostile local process for the fd_to_file race test: swaps directories and symlinks.

Run as ``python swapper.py DIR NAME LINK [DIR NAME LINK ...]``: in each DIR
(opened once, so a pair still works while an outer directory is swapped),
exchange the entries NAME (a real directory) and LINK (a symlink pointing
outside) as fast as possible with ``renameat2(RENAME_EXCHANGE)``. Where the
kernel or file system lacks it, fall back to flipping LINK-like symlinks: NAME
is then itself a symlink, replaced atomically by one pointing outside and back.
On SIGTERM it puts every pair back (real directory at NAME) and prints how
many swaps it made.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

RENAME_EXCHANGE = 2


def main() -> None:
    args = sys.argv[1:]
    pairs = [(os.open(args[i], os.O_RDONLY | os.O_DIRECTORY), args[i + 1], args[i + 2])
             for i in range(0, len(args), 3)]
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    stop = False

    def on_term(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)

    def exchange(dfd: int, a: str, b: str) -> bool:
        if renameat2 is not None:
            return renameat2(dfd, a.encode(), dfd, b.encode(), RENAME_EXCHANGE) == 0
        # fallback: NAME and LINK are both symlinks; swap their targets atomically
        ta, tb = os.readlink(a, dir_fd=dfd), os.readlink(b, dir_fd=dfd)
        for name, target in ((a, tb), (b, ta)):
            os.symlink(target, name + ".new", dir_fd=dfd)
            os.replace(name + ".new", name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return True

    flips = [0] * len(pairs)
    mode = "renameat2" if renameat2 is not None else "symlink-replace"
    print(mode, flush=True)
    while not stop:
        for i, (dfd, a, b) in enumerate(pairs):
            if exchange(dfd, a, b):
                flips[i] += 1
    for i, (dfd, a, b) in enumerate(pairs):
        if flips[i] % 2:
            exchange(dfd, a, b)
    print(sum(flips), flush=True)


if __name__ == "__main__":
    main()
