"""Seeded generators give the same texts whatever the date: a dataset must not drift with the clock."""

from datetime import datetime

import faker.providers.date_time as faker_dates
import pytest

from harness.data.generators.contradictions import contradiction_pairs
from harness.data.generators.needles import needle_set
from harness.data.generators.topics import topic_haystack

GENERATORS = {
    "topics": lambda: topic_haystack(300, seed=3).texts,
    "needles": lambda: needle_set(200, 5, seed=3).texts,
    "contradictions": lambda: [(p.first, p.second) for p in contradiction_pairs(5, seed=3)],
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
