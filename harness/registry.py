"""Systems by name, and `module:factory` for systems that live outside this repository.

A factory is called as `factory(context, **options)` and returns an object that follows
`harness.protocol.MemorySystem`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import Any

from .protocol import CAPABILITIES, MemorySystem, SystemContext

Factory = Callable[..., MemorySystem]


def _lazy(module: str, attribute: str, **preset: Any) -> Factory:
    """Import on first use, so an optional extra (faiss) is only needed when its system runs."""

    def factory(context: SystemContext, **options: Any) -> MemorySystem:
        return getattr(importlib.import_module(module), attribute)(context, **{**preset, **options})

    return factory


SYSTEMS: dict[str, Factory] = {
    "reference": _lazy("harness.systems.reference", "ReferenceSystem"),
    "reference-chroma": _lazy(
        "harness.systems.reference",
        "ReferenceSystem",
        name="reference-chroma",
        group_backend="chroma",
        group_size=256,
        group_size_per_sqrt_n=2.0,
        probe_per_k=30,
    ),
    "reference-persistent": _lazy(
        "harness.systems.reference", "ReferenceSystem", name="reference-persistent", persist=True
    ),
    "reference-no-entities": _lazy(
        "harness.systems.reference", "ReferenceSystem", name="reference-no-entities", use_entities=False
    ),
    "reference-dense": _lazy(
        "harness.systems.reference", "ReferenceSystem", name="reference-dense", text_queries=False
    ),
    "reference-slept": _lazy(
        "harness.systems.reference",
        "ReferenceSystem",
        name="reference-slept",
        text_queries=False,
        sleep_after_add=True,
    ),
    "reference-prototype": _lazy(
        "harness.systems.reference", "ReferenceSystem", name="reference-prototype", preset="prototype"
    ),
    "flat-numpy": _lazy("baselines.flat_numpy", "FlatNumpy"),
    "flat-chroma": _lazy("baselines.flat_chroma", "FlatChroma"),
    "kmeans": _lazy("baselines.kmeans", "KMeansGroups"),
    "faiss-ivf": _lazy("baselines.faiss_ivf", "FaissIVF"),
    "faiss-hnsw": _lazy("baselines.faiss_hnsw", "FaissHNSW"),
    "bm25": _lazy("baselines.bm25", "BM25"),
    "hybrid-rrf": _lazy("baselines.hybrid", "HybridRRF"),
}


def resolve(spec: str) -> Factory:
    """A registered name, or `package.module:factory` for an external system."""
    if spec in SYSTEMS:
        return SYSTEMS[spec]
    if ":" not in spec:
        raise KeyError(f"unknown system {spec!r}; registered: {', '.join(SYSTEMS)}; or give module:factory")
    module, _, attribute = spec.partition(":")
    return partial(_external, getattr(importlib.import_module(module), attribute))


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
