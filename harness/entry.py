"""The `magbench` console script: checks that the harness extra is installed before the command line imports it,
so that an install of the engine alone ends in one line naming the extra instead of a traceback."""

from __future__ import annotations

import importlib.util
import sys

HARNESS_MODULES = ("tabulate", "matplotlib", "tqdm", "psutil", "readerwriterlock", "threadpoolctl")
"""What the harness imports beyond the engine: the `harness` extra of pyproject.toml."""

INSTALL_HINT = "pip install 'magnetic-bench[harness]'"


def missing_modules() -> list[str]:
    """The harness's own dependencies that this Python cannot import."""
    return [name for name in HARNESS_MODULES if importlib.util.find_spec(name) is None]


def main() -> int:
    """Run `magbench`, or end with exit status 2 if the harness extra is missing."""
    missing = missing_modules()
    if missing:
        named = ", ".join(missing)
        sys.stderr.write(f"magbench: error: the harness extra is not installed ({named}): {INSTALL_HINT}\n")
        return 2
    from harness.cli import main as run_command

    return run_command()
