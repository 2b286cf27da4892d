"""Concepts: the layer above groups, found with no number of topics given."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from harness.data.generators.vectors import clustered_unit_vectors
from reference import CellularMemory, InvalidInputError, MemoryConfig
from reference.encoders import MockEncoder
from reference.groups.concepts import concept_labels

DIM = 32


@pytest.mark.parametrize(("clusters", "spread"), [(5, 0.8), (12, 1.2)])
def test_a_sleep_gathers_fragmented_groups_into_the_true_topics(clusters, spread):
    data = clustered_unit_vectors(4_000, 384, clusters=clusters, spread=spread, seed=clusters)
    with CellularMemory(encoder=MockEncoder(384)) as mem:
        ids = mem.add([f"cell {i}" for i in range(4_000)], vectors=data.vectors)
        report = mem.consolidate(labels=dict(zip(ids, data.labels.tolist())))
        concepts = mem.concepts()
        groups = mem.stats().groups
    assert groups > 2 * clusters  # groups sized for search split every topic
    assert report.ari_after is not None and report.ari_after < 0.8
    assert report.concepts == len(concepts) == clusters
    assert report.concept_ari == pytest.approx(1.0)


def test_concepts_partition_the_groups_and_the_cells():
    data = clustered_unit_vectors(3_000, DIM, clusters=4, spread=0.8, seed=7)
    with CellularMemory(encoder=MockEncoder(DIM)) as mem:
        mem.add([f"cell {i}" for i in range(3_000)], vectors=data.vectors)
        concepts = mem.concepts()
        group_ids = sorted({mem.get(cell).group_id for cell in mem.ids()})
    assert [c.id for c in concepts] == list(range(len(concepts)))
    assert sorted(g for c in concepts for g in c.groups) == group_ids
    assert [c.groups[0] for c in concepts] == sorted(c.groups[0] for c in concepts)
    assert sum(c.cells for c in concepts) == 3_000


def test_groups_beyond_the_limit_join_their_nearest_linked_concept():
    data = clustered_unit_vectors(600, DIM, clusters=4, spread=0.5, seed=3)
    centroids = np.stack([data.vectors[data.labels == t][i::15].mean(axis=0) for t in range(4) for i in range(15)])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    truth = np.repeat(np.arange(4), 15)
    sizes = np.tile(np.arange(15, 0, -1), 4)  # the 12 largest: 3 groups of each topic
    labels = concept_labels(centroids, sizes, limit=12)
    assert adjusted_rand_score(truth, labels) == pytest.approx(1.0)
    assert labels.tolist()[:1] == [0] and sorted(set(labels.tolist())) == [0, 1, 2, 3]


def test_fewer_than_three_groups_are_each_their_own_concept():
    vectors = np.eye(2, DIM, dtype=np.float32)
    assert concept_labels(vectors, np.array([3, 1]), limit=10).tolist() == [0, 1]
    assert concept_labels(vectors[:0], np.array([], dtype=np.int64), limit=10).tolist() == []


def test_concept_limit_below_three_is_refused():
    with pytest.raises(InvalidInputError, match="concept_limit"):
        MemoryConfig(concept_limit=2)
