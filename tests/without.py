"""Run ``logtide`` as on an install without some optional packages (the compression codecs, Cython)."""

from __future__ import annotations

import textwrap


def logtide_without(*packages: str) -> str:
    """Code for ``python -c CODE ARGS``: ``logtide ARGS`` with ``packages`` impossible to import, as when
    they are not installed (a finder that refuses them first, which compiled importers obey too)."""
    return textwrap.dedent(f"""
        import sys
        class NotInstalled:
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in {packages!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, NotInstalled())
        from logtide.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
