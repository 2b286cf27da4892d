"""Faker instances whose every value depends on the seed alone, never on today's date.

Faker's date providers default to ranges that end "now" (`date()`, `date_of_birth()`,
`date_this_decade()`), so a seeded dataset would drift from one hour to the next.
"""

from __future__ import annotations

from datetime import date

from faker import Faker


def seeded_faker(seed: int) -> Faker:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    return fake


def fixed_date(fake: Faker, start: date = date(1970, 1, 1), end: date = date(2025, 12, 31)) -> date:
    """A date drawn from a fixed range."""
    return fake.date_between_dates(start, end)
