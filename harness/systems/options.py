"""`KEY=VALUE` options for a system's factory, as the CLI and the conformance plugin take them."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any


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
