"""Seeded generators give the same texts whatever the date: a dataset must not drift with the clock."""

from datetime import datetime

import faker.providers.date_time as faker_dates
import pytest

from harness.data.generators.contradictions import contradiction_pairs
from harness.data.generators.needles import needle_set
from harness.data.generators.topics import topic_haystack
from harness.data.generators.updates import fact_streams, update_dialogues

GENERATORS = {
    "topics": lambda: topic_haystack(300, seed=3).texts,
    "needles": lambda: needle_set(200, 5, seed=3).texts,
    "contradictions": lambda: [(p.first, p.second) for p in contradiction_pairs(5, seed=3)],
    "updates": lambda: [t.text for d in update_dialogues(2, seed=3) for t in d.turns],
    "fact streams": lambda: [t.text for d in fact_streams(2, seed=3) for t in d.turns],
}


class Later(datetime):
    """A clock fifteen years ahead, as Faker's date providers see it."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2041, 6, 1, 12, 0, tzinfo=tz)


@pytest.mark.parametrize("name", GENERATORS)
def test_a_seeded_dataset_does_not_depend_on_the_date(name, monkeypatch):
    today = GENERATORS[name]()
    monkeypatch.setattr(faker_dates, "datetime", Later)
    assert GENERATORS[name]() == today


def test_facts_that_change_have_versions_in_time_order_with_new_values_and_a_question_naming_them():
    for memory in [*update_dialogues(2, seed=4), *fact_streams(2, facts=120, changing=15, seed=4)]:
        turns = {turn.id: turn for turn in memory.turns}
        assert memory.updates and memory.asked_at > max(turn.time for turn in memory.turns)
        for update in memory.updates:
            times = [turns[turn_id].time for (turn_id,) in update.versions]
            assert len(update.versions) >= 2 and times == sorted(times) and len(set(update.values)) == len(times)
            for (turn_id,), value in zip(update.versions, update.values):
                assert value in turns[turn_id].text and turns[turn_id].speaker == update.speaker
            assert (update.speaker or update.question.split(" ")[-1].rstrip("?")) in update.question
