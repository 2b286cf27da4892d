"""The multi-tenant runbook (`harness/measure/tenants.py`): its workload as data, and a run that checks every answer."""

from collections import defaultdict

import pytest

from harness.measure.checking import ContractViolation
from harness.measure.tenants import run_tenants, scope_name, tenant_data, tenant_runbook
from harness.protocol import Query, SearchHit
from harness.systems.engine import ReferenceSystem


def test_every_cell_is_written_once_in_turns_of_one_to_five_each_scope_in_order_the_scopes_interleaved():
    book = tenant_runbook(40, 30, probed=6)
    written = defaultdict(list)
    for scope, first, end in book.turns:
        assert 1 <= end - first <= 5
        written[scope].append((first, end))
    for turns in written.values():
        assert [first for first, _ in turns] == [0, *(end for _, end in turns[:-1])] and turns[-1][1] == 30
    assert len(written) == 40 and len(set(book.probed)) == 6
    first_scopes = [scope for scope, _, _ in book.turns[:40]]
    assert sorted(first_scopes) == list(range(40)) and first_scopes != sorted(first_scopes)  # every scope, shuffled
    data = tenant_data(book)
    assert len(data.docs) == 1_200 and data.docs[75].scope == scope_name(2)
    assert [q.scope for q in data.queries] == [scope_name(scope) for scope in book.probed]


def test_a_run_times_each_scope_shared_and_alone_and_measures_its_recall():
    book = tenant_runbook(12, 40, probed=3, passes=2)
    [row, skipped] = run_tenants(book, tenant_data(book), ["reference", "flat-numpy"], "vectors")
    assert row.recall_at_10 == 1.0 and row.write_p50_ms > 0
    assert {kind: len(times) for kind, times in row.searches_ns.items()} == dict.fromkeys(
        ["text_shared", "text_alone", "vector_shared", "vector_alone"], 6
    )
    assert row.row()["cells"] == 480 and row.shared_over_alone("text") > 0
    assert skipped.skipped == "cannot keep scopes apart"


class LeakingScopes(ReferenceSystem):
    """Answers a scoped search from every scope: what the runbook must catch."""

    def search(self, query: Query, *, k: int, mode="similarity") -> list[SearchHit]:
        return super().search(Query(query.id, query.text, query.vector), k=k)


def make_leaking(context, **options):
    return LeakingScopes(context, name="leaking", **options)


def test_a_hit_from_another_scope_fails_the_run():
    book = tenant_runbook(12, 40, probed=3, passes=1)
    with pytest.raises(ContractViolation, match="another scope"):
        run_tenants(book, tenant_data(book), [f"{__name__}:make_leaking"], "vectors")
