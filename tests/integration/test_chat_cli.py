"""`magbench chat` driven as a user would: a subprocess, commands typed on stdin."""

import subprocess
import sys

import pytest


def chat(lines: list[str], *args: str, env_host: str, expect_failure: bool = False) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "chat", "--encoder", "mock", "--timeout", "5", *args],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=180,
        env={**__import__("os").environ, "OLLAMA_HOST": env_host},
    )
    if expect_failure:
        assert done.returncode != 0
        return done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_every_memory_command_works_without_a_model(tmp_path, dead_port):
    out = chat(
        [
            "/remember --fact Maria Lopez lives in Lisbon.",
            "/remember --fact Maria Lopez lives in Porto.",
            "/remember I had coffee with Maria Lopez",
            "/search where does Maria Lopez live",
            "/sleep",
            "/conflicts",
            "hello there",
            "/behavior list",
            "/story new a lighthouse at the end of the world",
            "/ingest /no/such/folder",
            "/bogus",
            "/status",
            "/clean",
            "no",
            "/clean",
            "yes",
            "/status",
            "/quit",
            "/status",
        ],
        "--db",
        str(tmp_path / "db"),
        env_host=f"http://127.0.0.1:{dead_port}",
    )
    assert out.count("No language model reachable") == 1
    assert out.count("remembered (fact)") == 2 and "remembered (episodic)" in out
    assert "Maria Lopez lives in Lisbon" in out.split("/search")[0] or "lives in" in out
    assert "found 1 new conflicts" in out
    assert "Maria Lopez lives in Lisbon.  ✗  Maria Lopez lives in Porto." in out
    assert "(not sent: no language model)" in out
    assert "assistant:" in out and "A new world" in out and "neither a directory" in out
    assert "unknown command /bogus" in out
    assert "cells 4 ·" in out  # 3 memories + the story world
    assert "kept everything" in out and "deleted 4 memories" in out and "cells 0 ·" in out
    assert out.count("cells ") == 2  # nothing runs after /quit


def test_memories_persist_between_sessions(tmp_path, dead_port):
    host = f"http://127.0.0.1:{dead_port}"
    chat(["/remember --fact The wifi password is hunter2"], "--db", str(tmp_path / "db"), env_host=host)
    out = chat(["/search wifi password"], "--db", str(tmp_path / "db"), env_host=host)
    assert "The wifi password is hunter2" in out


@pytest.mark.parametrize("line", ["What is my name?"])
def test_chat_lines_reach_the_model(ollama_standin, line):
    out = chat([line], env_host=ollama_standin.url)
    assert "No language model reachable" not in out
    assert f"You said: {line}" in out


def test_hostile_input_is_data_on_the_terminal_and_never_a_crash(tmp_path, dead_port):
    """Escape sequences stored in a memory are printed escaped; a byte that is not text under the C locale,
    and sleep intervals of nan and inf, get answers, not tracebacks."""
    lines = [
        b"/remember the screen \x1b[2J\x1b]0;pwned\x07 was cleared",
        b"/search screen cleared",
        b"/remember caf\xff au lait",
        b"/sleep start nan",
        b"/sleep start inf",
        b"/status",
        b"/quit",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "chat", "--encoder", "mock", "--timeout", "5", "--db", str(tmp_path)],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=180,
        env={**__import__("os").environ, "OLLAMA_HOST": f"http://127.0.0.1:{dead_port}", "LC_ALL": "C"},
    )
    out = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"\x1b" not in done.stdout and "\\x1b[2J" in out
    assert out.count("remembered (episodic)") == 2
    assert out.count("error: the sleep interval must be a number of seconds") == 2 and "sleep off" in out
