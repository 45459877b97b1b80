"""The temp files of atomic writes: whose they are, and the ones a killed write left.

Every write of a person's file (``files.py``) goes through a temporary file
in the target's directory, named ``.selfref-h<machine>-<pid>-<hex>.tmp``. A
process killed mid-write leaves one behind, and the next write into that
folder removes those that are provably dead: written on this machine (same
host, same boot, same pid namespace — :func:`machine_tag`) by a process that
is gone, or older than :data:`STALE_TMP_S` whoever wrote them. On a shared
folder (NFS, a synced drive, a container's volume) another machine's pid says
nothing here, so its temp files are left alone until they are old.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import socket
import stat
import time

#: a temp file older than this is removed by the next write whoever wrote it: pids
#: are reused, and another machine's pids cannot be checked; an hour is far longer
#: than any one write takes, on any machine sharing the folder
STALE_TMP_S = 3600
#: ``.selfref-h<machine>-<pid>-<hex>.tmp``; older writers left out the machine or the pid
_TMP_NAME = re.compile(r"\.selfref-(?:h([0-9a-f]{8})-)?(?:(\d+)-)?[0-9a-f]+\.tmp\Z")


@functools.cache
def machine_tag() -> str:
    """Eight hex digits naming where this process's pids mean something.

    The host name alone is not enough: containers on one host may share a name
    and a folder while each has its own pids. So the tag also covers the
    kernel's boot id and this process's pid namespace, where the system has them.
    """
    parts = [socket.gethostname()]
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            parts.append(f.read().strip())
    except OSError:
        pass
    try:
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:
        pass
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()[:8]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def remove_leftovers(dir_fd: int, now: float | None = None) -> int:
    """Remove temp files a killed write left in this directory; how many were removed.

    Only regular files named like ours are touched: those this machine wrote
    (see :func:`machine_tag`) whose writer process is gone, and any older than
    ``STALE_TMP_S``. A name without our machine's tag (another machine on a
    shared folder, or a version that did not record it) waits until it is old.
    """
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(dir_fd))
    except OSError:
        return 0
    for entry in entries:
        match = _TMP_NAME.match(entry.name)
        if match is None:
            continue
        try:
            st = os.stat(entry.name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        machine, pid = match.group(1), match.group(2)
        stale = now - st.st_mtime > STALE_TMP_S
        if not stale and machine == machine_tag() and pid is not None \
                and int(pid) != os.getpid():
            stale = not _alive(int(pid))
        if stale:
            try:
                os.unlink(entry.name, dir_fd=dir_fd)
                removed += 1
            except OSError:
                pass
    return removed
