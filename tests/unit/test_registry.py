"""Systems resolve by name or module:factory, and declarations are checked."""

from pathlib import Path

import pytest

from harness.protocol import SystemContext
from harness.systems.registry import SYSTEMS, SystemSpecError, check_declaration, resolve
from tests.extras import needs

CONTEXT = SystemContext(dim=8, workdir=Path("/tmp"))


class Honest:
    name = "honest"
    capabilities = frozenset({"vectors"})

    def add(self, docs):
        pass

    def search(self, query, *, k):
        return []

    def close(self):
        pass


class Boastful(Honest):
    capabilities = frozenset({"vectors", "telepathy"})


def make_honest(context, **options):
    return Honest()


def make_boastful(context, **options):
    return Boastful()


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_every_registered_name_builds_a_system_of_that_name(name, tmp_path):
    needs(name)
    system = resolve(name)(SystemContext(dim=8, workdir=tmp_path))
    try:
        check_declaration(system)
        assert system.name == name
    finally:
        system.close()


def test_external_factories_load_from_module_and_name():
    assert resolve("tests.unit.test_registry:make_honest")(CONTEXT).name == "honest"


def test_unknown_capabilities_and_non_systems_are_refused():
    with pytest.raises(TypeError, match="telepathy"):
        resolve("tests.unit.test_registry:make_boastful")(CONTEXT)
    with pytest.raises(TypeError):
        check_declaration(object())
    with pytest.raises(SystemSpecError, match="registered"):
        resolve("no-such-system")
