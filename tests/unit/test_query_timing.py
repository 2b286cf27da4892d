"""What a dialogue row's latency times: a system given the query's vector had it encoded before the clock started
(the encoding is its own column); a system given the text does with it what it does inside its timed search."""

from __future__ import annotations

import json
import math

from harness.data.spec import DatasetSpec
from harness.experiments.definition import RunContext
from harness.experiments.dialogue import run as dialogue
from harness.experiments.dialogue import table as dialogue_table
from harness.measure.plan import RunPlan
from harness.systems.options import with_options
from reference.encoders import MockEncoder
from tests.results_factory import results
from tests.unit.test_dialogue import LOCOMO_SAMPLE


def test_dialogue_rows_say_what_their_search_was_given_and_what_encoding_the_query_costs(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([LOCOMO_SAMPLE]))
    variant = with_options("reference", ["name='reference-named-here'", "text_queries=False"])
    systems = ("flat-numpy", "bm25", variant)
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, DatasetSpec.parse(f"locomo:{path}"), systems=systems)
    rows = dialogue(context, k=2)
    by_system = {row.system: row for row in rows if row.granularity == "turn" and row.subset == "all questions"}
    assert set(by_system) == {"flat-numpy", "bm25", "reference-named-here"}  # the adapters' names, not the specs
    assert by_system["bm25"].given == "text" and math.isnan(by_system["bm25"].query_encoding_p50_ms)
    for vectors in ("flat-numpy", "reference-named-here"):
        assert by_system[vectors].given == "vector" and by_system[vectors].query_encoding_p50_ms > 0

    (table,) = dialogue_table(results(dialogue=rows))
    headers = [c.header for c in table.columns]
    assert {"search p50 (ms)", "query given", "query encoding p50 (ms)", "questions", "subset"} <= set(headers)
    assert "`search p50`: one search call" in table.caption
    scored = next(r for r in table.rows if r["system"] == "bm25" and r["subset"] == "all questions")
    assert scored["questions"] == by_system["bm25"].scores.queries == 3  # one meaning, in the CSV and the markdown
