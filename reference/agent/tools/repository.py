"""Repository ingestion: `/ingest PATH_OR_GIT_URL`, one cell per file chunk.

Each cell starts with a `[File: relative/path]` header, so a query that names the file routes to
it through the entity index. Skipped, with the reason reported: version-control and vendored
folders, binary files (a NUL byte anywhere or undecodable text), files above `max_file_bytes`, every
symlink (never followed, so nothing outside the tree is read) and hard links (their other names may lie
outside it). A git URL is cloned with
`git clone --depth 1` (finite timeout) into a temporary folder that is removed afterwards.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...common.errors import BackendUnavailableError, InvalidInputError, MagneticError
from ...memory import CellularMemory
from .base import BaseTool, ToolResult

if TYPE_CHECKING:
    from ..agent import MemoryAgent

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "vendor",
        "third_party",
        ".venv",
        "venv",
        "__pycache__",
        "site-packages",
        "dist",
        "build",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
    }
)
SYMLINK = "symlink (never followed)"
GIT_PREFIXES = ("http://", "https://", "git@", "ssh://", "git://", "file://")


@dataclass
class IngestReport:
    source: str
    files: list[str] = field(default_factory=list)
    cells: int = 0
    skipped: dict[str, str] = field(default_factory=dict)


def ingest_repository(
    memory: CellularMemory,
    source: str,
    *,
    max_file_bytes: int = 512_000,
    chunk_chars: int = 1_500,
    clone_timeout: float = 120.0,
) -> IngestReport:
    """Ingest a local directory or a git URL into `memory`; returns what was ingested and skipped."""
    if source.startswith(GIT_PREFIXES) or source.endswith(".git"):
        with tempfile.TemporaryDirectory(prefix="magbench-clone-") as folder:
            _clone(source, Path(folder) / "repo", clone_timeout)
            return _ingest_tree(memory, Path(folder) / "repo", source, max_file_bytes, chunk_chars)
    root = Path(source).expanduser()
    if not root.is_dir():
        raise InvalidInputError(f"{source} is neither a directory nor a git URL")
    return _ingest_tree(memory, root, source, max_file_bytes, chunk_chars)


def _clone(url: str, target: Path, timeout: float) -> None:
    try:
        subprocess.run(
            ["git", "clone", "--depth", "1", "--quiet", url, str(target)],
            check=True,
            timeout=timeout,
            capture_output=True,
            text=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except subprocess.TimeoutExpired:
        raise BackendUnavailableError(f"git clone of {url} took longer than {timeout:.0f} s") from None
    except subprocess.CalledProcessError as error:
        raise BackendUnavailableError(f"git clone of {url} failed: {error.stderr.strip()}") from None
    except FileNotFoundError:
        raise BackendUnavailableError("git is not installed") from None


def _ingest_tree(memory: CellularMemory, root: Path, source: str, max_bytes: int, chunk_chars: int) -> IngestReport:
    """Walk the tree through directory descriptors (`os.fwalk`, never following a symlink) and open each
    file relative to its directory without following a symlink: a path swapped for a symlink while the
    walk runs cannot lead outside the tree."""
    report = IngestReport(source)
    texts, metadata = [], []
    for folder, dirs, files, folder_fd in os.fwalk(root, follow_symlinks=False):
        base = Path(folder).relative_to(root)
        for name in list(dirs):
            if name in SKIPPED_DIRS or stat.S_ISLNK(os.stat(name, dir_fd=folder_fd, follow_symlinks=False).st_mode):
                why = "vendored or version-control folder" if name in SKIPPED_DIRS else SYMLINK
                report.skipped[(base / name).as_posix()] = why
                dirs.remove(name)
        dirs.sort()
        for name in sorted(files):
            relative = (base / name).as_posix()
            content = _read(name, folder_fd, max_bytes, relative, report)
            if content is None:
                continue
            report.files.append(relative)
            for start_line, chunk in _chunks(content, chunk_chars):
                texts.append(f"[File: {relative}] (from line {start_line})\n{chunk}")
                metadata.append({"path": relative, "start_line": start_line, "source": source})
    if texts:
        memory.add(texts, kind="fact", metadata=metadata)
    report.cells = len(texts)
    return report


def _read(name: str, folder_fd: int, max_bytes: int, relative: str, report: IngestReport) -> str | None:
    """The file's text, or None with the reason it was skipped. What is checked is the file opened, not
    the path: a symlink (refused by O_NOFOLLOW), anything but a regular file, a hard link (its other names
    may lie outside the tree), a file too large, binary or not UTF-8."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError as error:
        report.skipped[relative] = SYMLINK if error.errno == errno.ELOOP else f"unreadable ({error.strerror})"
        return None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            report.skipped[relative] = "not a regular file"
            return None
        if found.st_nlink > 1:
            report.skipped[relative] = "a hard link (its content may live outside the repository)"
            return None
        if found.st_size > max_bytes:
            report.skipped[relative] = f"larger than {max_bytes:,} bytes ({found.st_size:,})"
            return None
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        report.skipped[relative] = f"larger than {max_bytes:,} bytes (it grew while read)"
        return None
    if b"\x00" in data:
        report.skipped[relative] = "binary"
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        report.skipped[relative] = "binary (not UTF-8 text)"
        return None
    if not text.strip():
        report.skipped[relative] = "empty"
        return None
    return text


def _chunks(text: str, size: int) -> list[tuple[int, str]]:
    """Consecutive line blocks of at most `size` characters (a longer line is cut), with first line numbers."""
    chunks: list[tuple[int, str]] = []
    lines: list[str] = []
    length, first = 0, 1
    for number, line in enumerate(text.splitlines(), 1):
        while len(line) > size:  # a minified or generated line
            chunks.append((number, line[:size]))
            line = line[size:]
        if length + len(line) > size and lines:
            chunks.append((first, "\n".join(lines)))
            lines, length = [], 0
        if not lines:
            first = number
        lines.append(line)
        length += len(line) + 1
    if lines and "\n".join(lines).strip():
        chunks.append((first, "\n".join(lines)))
    return chunks


class IngestTool(BaseTool):
    name = "ingest"
    description = "ingest a repository, one cell per file chunk: /ingest PATH_OR_GIT_URL"

    def run(self, args: str, agent: MemoryAgent) -> ToolResult:
        source = args.strip()
        if not source:
            return ToolResult(False, f"usage: {self.description}")
        try:
            report = ingest_repository(agent.memory, source)
        except MagneticError as error:
            return ToolResult(False, str(error))
        lines = [f"ingested {len(report.files)} files as {report.cells} cells from {source}"]
        lines += [f"  skipped {path}: {why}" for path, why in sorted(report.skipped.items())]
        return ToolResult(
            True, "\n".join(lines), {"files": report.files, "cells": report.cells, "skipped": report.skipped}
        )
