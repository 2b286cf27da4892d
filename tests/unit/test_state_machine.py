"""A hypothesis state machine drives the engine (add, search, delete, reopen) against a plain model."""

import shutil
import tempfile

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from reference import CellularMemory, MemoryConfig, NotFoundError
from reference.encoders import MockEncoder

WORDS = ["cat", "dog", "market", "rain", "Lisbon", "falcon", "tax", "mat", "blue", "Maria", "Lopez", "code.py"]
ENCODER = MockEncoder(dim=32)
CONFIG = MemoryConfig(max_groups=6, ingest_chunk=3)  # small numbers reach the edge cases


class MemoryMachine(RuleBasedStateMachine):
    cells = Bundle("cells")

    def __init__(self) -> None:
        super().__init__()
        self.path = tempfile.mkdtemp(prefix="magbench-sm-")
        self.memory = CellularMemory(path=self.path, encoder=ENCODER, config=CONFIG)
        self.model: dict[str, str] = {}
        self.serial = 0

    @rule(
        target=cells, phrases=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=1, max_size=6)
    )
    def add(self, phrases):
        texts = []
        for words in phrases:
            self.serial += 1
            texts.append(" ".join(words) + f" #{self.serial}")
        ids = self.memory.add(texts)
        self.model.update(zip(ids, texts))
        return ids[0]

    @rule(cell=consumes(cells))
    def delete(self, cell):
        if cell in self.model:
            self.memory.delete([cell])
            del self.model[cell]
        else:
            try:
                self.memory.delete([cell])
                raise AssertionError("deleting an unknown id must fail")
            except NotFoundError:
                pass

    @rule(
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
        k=st.integers(1, 8),
        mode=st.sampled_from(["similarity", "memory"]),
    )
    def search(self, words, k, mode):
        hits = self.memory.search(" ".join(words), k=k, mode=mode)
        assert len(hits) <= k
        if mode == "similarity":
            assert len(hits) == min(k, len(self.model))
        assert len({h.id for h in hits}) == len(hits)
        assert all(h.id in self.model and h.text == self.model[h.id] for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def stored_vector_finds_itself(self, data):
        cell = data.draw(st.sampled_from(sorted(self.model)))
        vector = self.memory.get(cell).vector
        [hit] = self.memory.search(vector, k=1)
        assert hit.id == cell or np.allclose(self.memory.get(hit.id).vector, vector)

    @rule()
    def reopen(self):
        self.memory.close()
        self.memory = CellularMemory(path=self.path, encoder=ENCODER, config=CONFIG)

    @invariant()
    def count_and_ids_match_the_model(self):
        ids = self.memory.ids()
        assert len(self.memory) == len(self.model) == len(ids) == len(set(ids))
        assert set(ids) == set(self.model)

    @invariant()
    def derived_state_agrees_with_the_cells(self):
        self.memory.check_invariants()  # groups, centroids, group, entity and lexical indexes
        assert self.memory.stats().groups <= CONFIG.max_groups

    def teardown(self):
        self.memory.close()
        shutil.rmtree(self.path, ignore_errors=True)


MemoryMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=15, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestMemoryMachine = MemoryMachine.TestCase
