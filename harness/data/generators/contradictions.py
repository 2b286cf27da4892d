"""Labelled statement pairs for conflict judges: contradicting, consistent and unrelated.

Consistent pairs are deliberately close to contradictions (the same fact in another date or
number format, a restatement with extra words, a past fact next to a present one, verbs that take
many values, an occupation next to a family or club role), so a judge that flags everything about
one subject scores badly. Some contradictions are paraphrased ("lives in" / "is based in"), which
rules keyed on the verb cannot see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
from faker import Faker

from harness.data.generators.seeded import fixed_date, seeded_faker

ROLES = ["nurse", "pilot", "teacher", "carpenter", "lawyer", "chef", "architect", "librarian", "plumber", "dentist"]
FOODS = ["tea", "coffee", "sushi", "olives", "dark chocolate", "lentil soup", "mangoes", "rye bread"]
DIETS = ["vegetarian", "left-handed", "allergic to peanuts", "colour-blind"]
RELATIONS = ["mother of three", "grandfather", "volunteer firefighter", "member of the chess club", "keen runner"]


@dataclass(frozen=True)
class LabelledPair:
    first: str
    second: str
    label: str  # "contradicting" | "consistent" | "unrelated"
    kind: str


BIRTHS = (date(1940, 1, 1), date(2005, 12, 31))
DECADE = (date(2020, 1, 1), date(2029, 12, 31))


def _two(rng: np.random.Generator, options: list[str]) -> tuple[str, str]:
    a, b = rng.choice(len(options), 2, replace=False)
    return options[a], options[b]


def _contradicting(fake: Faker, rng: np.random.Generator) -> dict[str, Callable[[], tuple[str, str]]]:
    person = fake.name
    return {
        "email": lambda: (
            lambda p: (f"{p}'s email address is {fake.email()}.", f"{p}'s email address is {fake.email()}.")
        )(person()),
        "residence": lambda: (lambda p, c: (f"{p} lives in {c[0]}.", f"{p} lives in {c[1]}."))(
            person(), (fake.city(), fake.city())
        ),
        "negated-employer": lambda: (lambda p, c: (f"{p} works at {c}.", f"{p} does not work at {c}."))(
            person(), fake.company()
        ),
        "age": lambda: (lambda p, n: (f"{p} is {n} years old.", f"{p} is {n + int(rng.integers(1, 9))} years old."))(
            person(), int(rng.integers(20, 70))
        ),
        "birth-date": lambda: (
            lambda p, d: (
                f"{p} was born on {d:%B %d, %Y}.",
                f"{p} was born on {d + timedelta(days=int(rng.integers(2, 900))):%Y-%m-%d}.",
            )
        )(person(), fixed_date(fake, *BIRTHS)),
        "budget": lambda: (
            lambda p, x: (
                f"The budget of Project {p} is {x:,} dollars.",
                f"The budget of Project {p} is {x + 1000 * int(rng.integers(1, 50)):,} dollars.",
            )
        )(fake.last_name(), 1000 * int(rng.integers(5, 500))),
        "role": lambda: (lambda p, r: (f"{p} is a {r[0]}.", f"{p} is a {r[1]}."))(person(), _two(rng, ROLES)),
        "negated-trait": lambda: (lambda p, t: (f"{p} is {t}.", f"{p} is not {t}."))(
            person(), DIETS[int(rng.integers(len(DIETS)))]
        ),
        "paraphrased-residence": lambda: (
            lambda p: (f"{p} lives in {fake.city()}.", f"{p} is based in {fake.city()}.")
        )(person()),
    }


def _consistent(fake: Faker, rng: np.random.Generator) -> dict[str, Callable[[], tuple[str, str]]]:
    person = fake.name
    return {
        "restated-residence": lambda: (lambda p, c: (f"{p} lives in {c}.", f"{p} lives in {c} with two cats."))(
            person(), fake.city()
        ),
        "date-formats": lambda: (lambda p, d: (f"{p} was born on {d:%B %d, %Y}.", f"{p} was born on {d:%Y-%m-%d}."))(
            person(), fixed_date(fake, *BIRTHS)
        ),
        "number-formats": lambda: (
            lambda p, x: (f"The budget of Project {p} is {x:,} dollars.", f"The budget of Project {p} is {x} dollars.")
        )(fake.last_name(), 1000 * int(rng.integers(5, 500))),
        "many-valued": lambda: (lambda p, f: (f"{p} likes {f[0]}.", f"{p} likes {f[1]}."))(person(), _two(rng, FOODS)),
        "other-attribute": lambda: (lambda p: (f"{p} lives in {fake.city()}.", f"{p} works at {fake.company()}."))(
            person()
        ),
        "past-and-present": lambda: (lambda p: (f"{p} lived in {fake.city()}.", f"{p} lives in {fake.city()}."))(
            person()
        ),
        "same-email": lambda: (lambda p, e: (f"{p}'s email address is {e}.", f"You can write to {p} at {e}."))(
            person(), fake.email()
        ),
        "role-and-relation": lambda: (
            lambda p: (
                f"{p} is a {ROLES[int(rng.integers(len(ROLES)))]}.",
                f"{p} is a {RELATIONS[int(rng.integers(len(RELATIONS)))]}.",
            )
        )(person()),
    }


def _unrelated(fake: Faker, rng: np.random.Generator) -> dict[str, Callable[[], tuple[str, str]]]:
    return {
        "two-people": lambda: (f"{fake.name()} lives in {fake.city()}.", f"{fake.name()} lives in {fake.city()}."),
        "two-projects": lambda: (
            f"The budget of Project {fake.last_name()} is {fake.random_int(5, 500)},000 dollars.",
            f"The deadline of Project {fake.last_name()} is {fixed_date(fake, *DECADE):%B %d}.",
        ),
        "small-talk": lambda: (fake.sentence(nb_words=8), fake.sentence(nb_words=8)),
    }


def contradiction_pairs(per_kind: int = 20, *, seed: int = 0) -> list[LabelledPair]:
    """`per_kind` pairs of every kind of every label, shuffled."""
    fake = seeded_faker(seed)
    rng = np.random.default_rng(seed)
    pairs = []
    for label, kinds in (
        ("contradicting", _contradicting(fake, rng)),
        ("consistent", _consistent(fake, rng)),
        ("unrelated", _unrelated(fake, rng)),
    ):
        for kind, make in kinds.items():
            pairs += [LabelledPair(*make(), label, kind) for _ in range(per_kind)]
    order = rng.permutation(len(pairs))
    return [pairs[i] for i in order]
