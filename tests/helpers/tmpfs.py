"""Real small or read-only file systems for tests: a tmpfs mounted for one test.

Tests run as root here, where ``chmod`` does not stop a write; a tmpfs
remounted read-only does, and a tmpfs of a few megabytes really fills up.
Mounting needs the right to mount (root, or CAP_SYS_ADMIN): without it the
test is skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


@contextmanager
def tmpfs(parent: Path, size: str = "5m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` under ``parent``, unmounted afterwards; skips the test if it cannot mount."""
    mnt = parent / f"tmpfs-{uuid.uuid4().hex[:8]}"
    mnt.mkdir(parents=True)
    done = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); needs root")
    try:
        yield mnt
    finally:
        _run("umount", "-l", str(mnt))


def remount_read_only(mnt: Path) -> None:
    """Make the tmpfs ``mnt`` read-only (every file on it must be closed for writing)."""
    done = _run("mount", "-o", "remount,ro", str(mnt))
    if done.returncode != 0:
        raise RuntimeError(f"could not remount {mnt} read-only: {done.stderr.strip()}")


def fill(folder: Path, leave: int) -> Path:
    """Fill the file system of ``folder`` until about ``leave`` bytes are free; return the filler file."""
    filler = folder / f"filler-{uuid.uuid4().hex[:8]}"
    with open(filler, "wb", buffering=0) as f:
        st = os.statvfs(folder)
        free = st.f_bavail * st.f_frsize
        if free > leave:
            f.write(b"\0" * (free - leave))
    return filler
