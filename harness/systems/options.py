"""`KEY=VALUE` options for a system's factory, as the CLI and the conformance plugin take them, and system
specs that carry them (a variant of a system chosen on the command line)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode


class OptionError(ValueError):
    """An option that is not KEY=VALUE; the message names it."""


def parse_options(items: Iterable[str]) -> dict[str, Any]:
    """Each `KEY=VALUE` as a keyword argument: the value as a Python literal (`2`, `true` stays a string,
    `True` is a bool), else as a string."""
    options = {}
    for item in items:
        key, equals, raw = item.partition("=")
        if not key.isidentifier() or not equals:
            raise OptionError(f"option {item!r}: expected KEY=VALUE with KEY a name, e.g. persist=True")
        try:
            options[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            options[key] = raw
    return options


VARIANT = "?"
"""Between a system's spec and the options it is opened with (`with_options`); no spec holds it."""


def system_options(items: Iterable[str]) -> dict[str, list[str]]:
    """`NAME:KEY=VALUE` items (`magbench run --system-option`) as each system's `KEY=VALUE` options, by NAME (a
    registry name or a `module:factory` spec, which holds colons itself)."""
    by_system: dict[str, list[str]] = {}
    for item in items:
        head, equals, value = item.partition("=")
        name, colon, key = head.rpartition(":")
        if not (equals and colon and name):
            raise OptionError(f"system option {item!r}: expected NAME:KEY=VALUE, e.g. reference:persist=True")
        parse_options([f"{key}={value}"])  # a key that is not a name is an error here
        by_system.setdefault(name, []).append(f"{key}={value}")
    return by_system


def with_options(spec: str, options: Sequence[str]) -> str:
    """The spec of `spec` opened with these `KEY=VALUE` options: `SPEC?KEY=VALUE&...`, values quoted, so that
    every experiment that opens a system by its spec opens this variant."""
    return f"{spec}{VARIANT}{urlencode([item.partition('=')[::2] for item in options])}" if options else spec


def split_options(spec: str) -> tuple[str, dict[str, Any]]:
    """A spec's system and the options it carries (`with_options`; none for a plain spec)."""
    base, _, query = spec.partition(VARIANT)
    return base, parse_options(f"{key}={value}" for key, value in parse_qsl(query, keep_blank_values=True))
