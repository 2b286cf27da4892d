"""One `where` grammar for the engine and every baseline: a malformed filter (too deep, a number past 64 bits) is
a `ValueError` everywhere, never a `RecursionError` or a filter some store answers and another refuses."""

from __future__ import annotations

import pytest

from harness.protocol import SystemContext
from harness.systems.registry import SYSTEMS
from reference.common.errors import InvalidInputError
from tests import peer_filters
from tests.extras import needs
from where_syntax import MAX_NESTING, check_where

DIM = 8


def test_nesting_up_to_the_limit_is_accepted_and_one_level_more_is_refused():
    assert check_where(peer_filters.nested(MAX_NESTING)) == peer_filters.nested(MAX_NESTING)
    with pytest.raises(ValueError, match="deeper than"):
        check_where(peer_filters.nested(MAX_NESTING + 1))


@pytest.mark.parametrize("number", [2**63 - 1, -(2**63)])
def test_the_64_bit_range_is_inclusive(number):
    assert check_where({"rank": {"$lte": number}}) == {"rank": {"$lte": number}}
    assert check_where({"rank": number}) == {"rank": number}


def test_the_error_class_is_the_callers():
    with pytest.raises(InvalidInputError, match="64-bit"):
        check_where({"rank": 2**63}, error=InvalidInputError)


@pytest.mark.parametrize("name", [name for name in SYSTEMS if not name.startswith("reference-")])
def test_every_filtering_system_refuses_a_malformed_filter_with_a_value_error(name, tmp_path):
    needs(name)
    system = SYSTEMS[name](SystemContext(dim=DIM, workdir=tmp_path))
    try:
        if "filters" not in system.capabilities:
            pytest.skip(f"{name} takes no filters")
        system.add(peer_filters.documents(DIM))
        for where in peer_filters.MALFORMED:
            with pytest.raises(ValueError):
                peer_filters.found(system, where, DIM)
    finally:
        system.close()
