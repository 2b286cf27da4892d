"""Filtered search: every declaring system's cases scored against exact search over what they match."""

from harness.experiments.filtered import CASES, OWNERS, filtered_rows, owners_of


def test_owners_hold_equal_shares_in_a_seeded_order():
    owners = owners_of(1_000)
    assert {owners.count(f"o{i}") for i in range(OWNERS)} == {10}
    assert owners == owners_of(1_000) != owners_of(1_000, seed=1)


def test_each_case_is_measured_where_declared_and_a_system_that_ignores_filters_fails_its_rows():
    systems = ("reference", "flat-chroma", "flat-numpy", "tests.faults:IgnoresFilters")
    rows = filtered_rows(systems, cells=2_000, queries=20, passes=1)
    by = {(r.system, r.case): r for r in rows}
    for case in CASES:
        engine = by["reference", case.name]
        assert engine.recall_at_10 >= 0.9 and engine.outside == 0 and engine.queries == 20
        assert engine.matching == {"unfiltered": 2_000, "filter 99%": 1_980}.get(case.name, 20)
    assert by["flat-chroma", "filter 1%"].recall_at_10 >= 0.9 and by["flat-chroma", "filter 1%"].outside == 0
    assert by["flat-chroma", "scope 1%"].skipped == "no scopes"
    assert by["flat-numpy", "—"].skipped == "declares neither filters nor scopes"
    ignoring = by["flat-numpy", "filter 1%"]  # the faulty system names itself as the class it extends
    assert ignoring.outside > 0 and ignoring.recall_at_10 < 0.5
