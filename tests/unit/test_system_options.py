"""`magbench run --system-option NAME:KEY=VALUE`: a system's variant, chosen on the command line, is what every
experiment opens, and a report labels it by its adapter's name."""

from __future__ import annotations

import pytest

from harness.cli import _variants
from harness.data.generated import vectors_evalset
from harness.measure.timing import Job, measure_together
from harness.protocol import SystemContext
from harness.systems.options import OptionError, split_options, system_options, with_options
from harness.systems.registry import SystemSpecError, hands_off, resolve


def test_a_variant_spec_carries_its_options_and_opens_with_them(tmp_path):
    options = system_options(["reference:text_queries=False", "reference:name=ref dense & co", "my.mod:make:x=1"])
    assert options == {"reference": ["text_queries=False", "name=ref dense & co"], "my.mod:make": ["x=1"]}
    spec = with_options("reference", options["reference"])
    assert split_options(spec) == ("reference", {"text_queries": False, "name": "ref dense & co"})
    assert with_options("reference", []) == "reference"
    data = vectors_evalset(50, queries=5, dim=16, seed=1)
    (measured,) = measure_together([Job(spec, data, "vectors")])
    assert measured.system == "ref dense & co"  # the adapter's name, as its options made it
    assert "text" not in resolve(spec)(SystemContext(dim=16, workdir=tmp_path)).capabilities


def test_a_variant_of_a_system_that_answers_on_library_threads_is_one_too():
    assert hands_off(with_options("flat-chroma", ["x=1"])) and not hands_off(with_options("flat-numpy", ["x=1"]))


@pytest.mark.parametrize("item", ["reference=1", ":persist=True", "reference:1x=2", "reference"])
def test_a_malformed_system_option_is_named(item):
    with pytest.raises(OptionError, match="expected"):
        system_options([item])


def test_each_system_of_a_run_becomes_its_variant_and_an_option_for_another_is_refused():
    variants = _variants(("flat-numpy", "bm25"), ["bm25:k1=1.2"])
    assert variants == {"flat-numpy": "flat-numpy", "bm25": with_options("bm25", ["k1=1.2"])}
    with pytest.raises(OptionError, match="bm25 is not one of --systems"):
        _variants(("flat-numpy",), ["bm25:k1=1.2"])  # (the CLI makes it exit status 2, with this line)


def test_two_systems_of_one_run_may_not_share_a_name():
    data = vectors_evalset(50, queries=5, dim=16, seed=1)
    twins = [
        Job("reference", data, "vectors"),
        Job(with_options("reference-dense", ["name='reference'"]), data, "vectors"),
    ]
    with pytest.raises(SystemSpecError, match="both named 'reference'"):
        measure_together(twins)
