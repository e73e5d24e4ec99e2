"""logtide's own version, read from the installed package metadata (``pyproject.toml``)."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed logtide version (``0+unknown`` when run from a tree that was never installed)."""
    try:
        return metadata.version("logtide")
    except metadata.PackageNotFoundError:
        return "0+unknown"
