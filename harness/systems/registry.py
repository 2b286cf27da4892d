"""Systems by name, `module:factory` for systems that live outside this repository, and
`langchain:MODULE:CLASS` for any LangChain `VectorStore` (`baselines.langchain_store`).

A factory is called as `factory(context, **options)` and returns an object that follows
`harness.protocol.MemorySystem`. A peer that wraps an optional library imports it when its module is
loaded, and a missing one is a `MissingExtraError` that names the extra to install.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from harness.protocol import CAPABILITIES, MemorySystem, SystemContext
from harness.systems.options import split_options

Factory = Callable[..., MemorySystem]


class SystemSpecError(ValueError):
    """A system name or `module:factory` that cannot be used; the message says what to do."""


class MissingExtraError(SystemSpecError, ImportError):
    """A system's library is not installed; the message names the extra that installs it."""


def missing_extra(system: str, extra: str, error: ImportError) -> MissingExtraError:
    """The error a peer's module raises when its library cannot be imported."""
    library = error.name or "its library"
    return MissingExtraError(f"{system} needs {library} ({error}): pip install 'magnetic-bench[{extra}]'")


@dataclass(frozen=True)
class Lazy:
    """A registered system whose adapter module is imported on first use, so an optional extra (faiss, qdrant,
    lancedb) is only needed when its system runs."""

    module: str
    attribute: str
    preset: Mapping[str, Any] = field(default_factory=dict)
    hands_off: bool = False
    """Its searches are answered on a library's own threads (embedded Chroma's), handed between them many times
    per search: another process on the CPU delays some of its searches many-fold (`compare.HAND_OFF_PERCENTILE`)."""

    def load(self) -> Factory:
        """The adapter (its module imported: a missing extra is a `MissingExtraError`), nothing built."""
        adapter: Factory = getattr(importlib.import_module(self.module), self.attribute)
        return adapter

    def __call__(self, context: SystemContext, **options: Any) -> MemorySystem:
        return self.load()(context, **{**self.preset, **options})


def _lazy(module: str, attribute: str, **preset: Any) -> Lazy:
    return Lazy(module, attribute, preset)


def unregistered(specs: Sequence[str]) -> list[str]:
    """The systems of `specs` from outside the registry (a module:factory or a LangChain store)."""
    return [spec for spec in specs if split_options(spec)[0] not in SYSTEMS]


def hands_off(system: str) -> bool:
    """Whether a registered system's searches are answered on a library's own threads (`Lazy.hands_off`)."""
    base, _ = split_options(system)
    return base in SYSTEMS and SYSTEMS[base].hands_off


_TEXT_STAGES = {
    "episodes": ("episode_weight",),
    "neighbours": ("neighbour_weight",),
    "turn form": ("asking_penalty", "speaker_weight"),
}
"""The settings of each stage of a text query after fusion (`reference.search.pipeline`)."""


def _fusion_and(*stages: str) -> dict[str, float]:
    """An ablation of the text path: dense + BM25 fusion and only these later stages (`reference` has them all)."""
    return {name: 0 for stage, names in _TEXT_STAGES.items() if stage not in stages for name in names}


SYSTEMS: dict[str, Lazy] = {
    "reference": _lazy("harness.systems.engine", "ReferenceSystem"),
    # a Chroma query per group is a call into Chroma: fewer, larger groups, a deeper floor
    "reference-chroma": Lazy(
        "harness.systems.engine",
        "ReferenceSystem",
        {
            "name": "reference-chroma",
            "group_backend": "chroma",
            "group_size": 128,
            "group_size_per_sqrt_n": 1.0,
            "probe_per_k": 150,
            "probe_margin": 0.3,
        },
        hands_off=True,
    ),
    "reference-persistent": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-persistent", persist=True
    ),
    "reference-no-entities": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-no-entities", use_entities=False
    ),
    "reference-fusion": _lazy("harness.systems.engine", "ReferenceSystem", name="reference-fusion", **_fusion_and()),
    "reference-episodes": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-episodes", **_fusion_and("episodes")
    ),
    "reference-neighbours": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-neighbours", **_fusion_and("neighbours")
    ),
    "reference-turns": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-turns", **_fusion_and("turn form")
    ),
    "reference-undated": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-undated", date_context=False
    ),
    "reference-dense": _lazy("harness.systems.engine", "ReferenceSystem", name="reference-dense", text_queries=False),
    "reference-slept": _lazy(
        "harness.systems.engine",
        "ReferenceSystem",
        name="reference-slept",
        text_queries=False,
        sleep_after_add=True,
    ),
    "reference-concepts": _lazy(
        "harness.systems.engine",
        "ReferenceSystem",
        name="reference-concepts",
        text_queries=False,
        sleep_after_add=True,
        concept_labels=True,
    ),
    "reference-prototype": _lazy(
        "harness.systems.engine", "ReferenceSystem", name="reference-prototype", preset="prototype"
    ),
    "flat-numpy": _lazy("baselines.flat_numpy", "FlatNumpy"),
    "flat-chroma": Lazy("baselines.flat_chroma", "FlatChroma", hands_off=True),
    "kmeans": _lazy("baselines.kmeans", "KMeansGroups"),
    "faiss-ivf": _lazy("baselines.faiss_ivf", "FaissIVF"),
    "faiss-hnsw": _lazy("baselines.faiss_hnsw", "FaissHNSW"),
    "qdrant-local": _lazy("baselines.qdrant_local", "QdrantLocal"),
    "lancedb": _lazy("baselines.lancedb_table", "LanceTable"),
    "lancedb-ivfpq": _lazy("baselines.lancedb_table", "LanceTable", index="ivf_pq"),
    "bm25": _lazy("baselines.bm25", "BM25"),
    "hybrid-rrf": _lazy("baselines.hybrid", "HybridRRF"),
    # agent-memory systems in retrieval mode, on the harness's vectors (no LLM, no model loaded)
    "mem0": _lazy("baselines.mem0_memory", "Mem0Memory"),
    "mempalace": Lazy("baselines.mempalace_raw", "MemPalaceRaw", hands_off=True),
    "langmem": _lazy("baselines.langmem_store", "LangMemStore"),
    "txtai": _lazy("baselines.txtai_index", "TxtaiIndex"),
    "txtai-hybrid": _lazy("baselines.txtai_index", "TxtaiIndex", hybrid=True),
}

PEERS = ("mem0", "mempalace", "langmem", "txtai", "txtai-hybrid")
"""The agent-memory systems people choose between, each an optional extra."""


def installed(systems: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The registered systems whose libraries are installed, and for each of the others what installs it."""
    present, missing = [], []
    for system in systems:
        try:
            SYSTEMS[system].load()
        except MissingExtraError as error:
            missing.append(str(error))
        else:
            present.append(system)
    return present, missing


LANGCHAIN = "langchain:"


def resolve(spec: str) -> Factory:
    """A registered name, `package.module:factory` for an external system, or `langchain:MODULE:CLASS` for a
    LangChain vector store (checked, its library imported, not yet called); any of them with options
    (`options.with_options`), which the factory is then called with."""
    base, options = split_options(spec)
    if options:
        return partial(resolve(base), **options)
    if spec in SYSTEMS:
        SYSTEMS[spec].load()  # a missing extra is found here, before a run starts
        return SYSTEMS[spec]
    if spec.startswith(LANGCHAIN):
        from baselines.langchain_store import LangChainStore, store_class

        return partial(LangChainStore, store_class(spec.removeprefix(LANGCHAIN)))
    if ":" not in spec:
        raise SystemSpecError(f"unknown system {spec!r}; registered: {', '.join(SYSTEMS)}; or give module:factory")
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemSpecError(
            f"cannot import {module_name!r} ({error}); an adapter module must be importable: put its folder on "
            "PYTHONPATH (tox passes it on) or install it as a package"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise SystemSpecError(f"{module_name} has no factory {attribute!r}")
    try:
        inspect.signature(factory).bind(None)
    except TypeError:
        raise SystemSpecError(
            f"{spec}: a factory is called as factory(context, **options); this one is {attribute}"
            f"{inspect.signature(factory)}: add the context parameter (a harness.protocol.SystemContext)"
        ) from None
    except ValueError:  # a builtin without a signature: let the call decide
        pass
    return partial(_external, factory)


def _external(factory: Factory, context: SystemContext, **options: Any) -> MemorySystem:
    system = factory(context, **options)
    check_declaration(system)
    return system


def check_declaration(system: Any) -> None:
    """A system must name itself and declare known capabilities."""
    if not isinstance(system, MemorySystem):
        raise TypeError(f"{system!r} does not follow harness.protocol.MemorySystem (name, capabilities, add, search)")
    unknown = set(system.capabilities) - CAPABILITIES
    if unknown:
        raise TypeError(f"{system.name}: unknown capabilities {sorted(unknown)}; known: {sorted(CAPABILITIES)}")
    if "scoped_only" in system.capabilities and "scopes" not in system.capabilities:
        raise TypeError(f"{system.name}: 'scoped_only' declares that searches need a scope: declare 'scopes' too")
