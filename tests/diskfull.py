"""A small filesystem for tests of a full disk or a read-only directory: a tmpfs mounted by root."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


def mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def fill(path: Path) -> None:
    """Write zeros to ``path`` until its filesystem is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``path`` for the duration (the test is skipped when it cannot be mounted)."""
    if not mount_tmpfs(path, options):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)])


@pytest.fixture
def full_disk(tmp_path) -> Iterator[Path]:
    """A small tmpfs filled up to the last byte."""
    with tmpfs(tmp_path / "full", "size=256k") as path:
        fill(path / "filler")
        yield path


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """An empty 8 MiB tmpfs (fill it with ``fill(path / "filler")``, free it by removing the filler)."""
    with tmpfs(tmp_path / "small", "size=8m") as path:
        yield path
