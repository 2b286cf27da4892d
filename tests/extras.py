"""Tests of a system whose library is an extra not installed here skip, with the reason (the extra to install)."""

from __future__ import annotations

import pytest

from harness.systems.registry import SYSTEMS, MissingExtraError


def needs(system: str) -> None:
    """Skip the calling test when a registered system's library is not installed."""
    try:
        SYSTEMS[system].load()
    except MissingExtraError as error:
        pytest.skip(str(error))
