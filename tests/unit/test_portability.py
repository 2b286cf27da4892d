"""The engine imports and works where the POSIX-only parts of the standard library and a loadable C library are
missing (Windows): nothing of them may be needed at import, and a write falls back to not trimming the heap."""

import subprocess
import sys
import textwrap

import pytest

WITHOUT_POSIX = textwrap.dedent(
    """
    import ctypes, sys
    for name in ("resource", "fcntl", "termios"):
        sys.modules[name] = None  # an import of it now raises ImportError, as on Windows

    load_library = ctypes.CDLL

    def without_process_symbols(name, *args, **kwargs):
        if name is None:  # the process's own symbols (libc's among them) cannot be loaded, as on Windows
            raise OSError("no dynamic loader for the process's symbols")
        return load_library(name, *args, **kwargs)

    ctypes.CDLL = without_process_symbols

    from reference import CellularMemory
    from reference.config import MemoryConfig
    from reference.encoders.mock import MockEncoder
    from reference.index import chroma_capacity

    with CellularMemory(encoder=MockEncoder(dim=64), config=MemoryConfig(ingest_chunk=64)) as memory:
        ids = memory.add([f"note {i} about topic {i % 7}" for i in range(300)])
        hit = memory.search("note 5 about topic 5", k=1)[0]
    print(len(ids), hit.text, chroma_capacity())
    """
)


@pytest.mark.embedded
def test_the_engine_imports_and_writes_without_posix_modules_or_a_c_library() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_POSIX], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    count, *_, capacity = done.stdout.split()
    assert count == "300"
    assert "note 5 about topic 5" in done.stdout
    assert int(capacity) >= 4
