"""The engine on real all-MiniLM-L6-v2 embeddings (the packaged model, offline)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, homogeneity_score

from harness.data.generators.needles import needle_set
from harness.data.generators.topics import topic_haystack
from reference import CellularMemory, MemoryConfig

pytestmark = pytest.mark.minilm


def test_minilm_vectors_are_unit_length_and_semantic(minilm_encoder):
    a, b, c = minilm_encoder.encode(["A cat sleeps on the sofa", "The kitten naps on the couch", "Bond yields rose"])
    np.testing.assert_allclose(np.linalg.norm([a, b, c], axis=1), 1.0, rtol=1e-5)
    assert a @ b > 0.5 > a @ c


def test_the_seed_threshold_makes_pure_groups(minilm_encoder):
    haystack = topic_haystack(400, seed=1)
    with CellularMemory(encoder=minilm_encoder, config=MemoryConfig.prototype()) as mem:
        ids = mem.add(haystack.texts)
        groups = np.asarray([mem.get(i).group_id for i in ids])
        stats = mem.stats()
    shuffled = np.random.default_rng(0).permutation(groups)
    # groups are (nearly) single-topic, far more so than the same group sizes at random …
    assert homogeneity_score(haystack.labels, groups) > 0.9 > homogeneity_score(haystack.labels, shuffled) + 0.3
    # … and they do group: most cells share their group with others
    assert stats.groups < 0.5 * stats.cells
    assert adjusted_rand_score(haystack.labels, groups) > 0.1


@pytest.mark.parametrize("seed", range(3))
def test_five_needles_in_the_top_3_of_a_200_document_haystack(minilm_encoder, seed):
    needles = needle_set(200, 5, seed=seed)
    with CellularMemory(encoder=minilm_encoder, config=MemoryConfig()) as mem:
        ids = mem.add(needles.texts)
        for needle in needles.needles:
            top3 = [hit.id for hit in mem.search(needle.question, k=3)]
            assert ids[needle.position] in top3, needle.question
