"""A PostgreSQL server the harness starts from the machine's binaries (`initdb`, `pg_ctl`) in a folder of its own, on a
free 127.0.0.1 port, and stops again. PostgreSQL refuses to run as root: started by root, it runs as the unprivileged
user `nobody` (`runuser`), in a folder made under the system's temporary folder and handed to that user."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.measure.server_processes import free_port

INSTALL = "apt-get install postgresql (or put PostgreSQL's initdb and pg_ctl on PATH)"
UNPRIVILEGED = "nobody"


def binaries() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: on PATH, or the newest of Debian's `/usr/lib/postgresql/*/bin`."""
    found = shutil.which("initdb") and shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(versions[-1]).parent if versions else None


class PostgresServer:
    """A throwaway cluster: trust authentication on 127.0.0.1 only, no fsync (a test's data need not outlive a crash
    of the machine), user `postgres`, database `postgres`. `start` (or `with`) returns once it accepts connections."""

    def __init__(self, port: int | None = None) -> None:
        found = binaries()
        if found is None:
            raise FileNotFoundError(f"no PostgreSQL binaries found: {INSTALL}")
        self._bin = found
        self.port = port or free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="magbench-pg-"))
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.folder, UNPRIVILEGED)
        self.data = self.folder / "data"
        self._started = False

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *arguments: str) -> None:
        command = [str(self._bin / tool), *arguments]
        if self._as_root:
            command = ["runuser", "-u", UNPRIVILEGED, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> PostgresServer:
        try:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
            options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -F -c max_connections=200"
            self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self._started = True
        return self

    def stop(self) -> None:
        try:
            if self._started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            self._started = False
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
