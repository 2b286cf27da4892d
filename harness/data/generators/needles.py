"""Needle sets: facts that carry entities, hidden at chosen depths in a topic haystack.

Every needle is answerable: its question names the needle's subject (a person, a project, a
document, a service…) or asks for its content in other words, and exactly one document — the
needle — holds the answer. Kinds cover e-mail addresses, URLs, file names, codes and places.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from faker import Faker

from harness.data.generators.seeded import seeded_faker
from harness.data.generators.topics import topic_haystack


@dataclass(frozen=True)
class Needle:
    text: str
    question: str
    answer: str
    kind: str
    position: int


@dataclass(frozen=True)
class NeedleSet:
    texts: list[str]
    needles: list[Needle]


def _email(fake: Faker) -> tuple[str, str, str]:
    person = fake.name()
    email = fake.email()
    return f"{person}'s email address is {email}.", f"What is the email address of {person}?", email


def _url(fake: Faker) -> tuple[str, str, str]:
    project = f"Project {fake.word().capitalize()} {fake.word().capitalize()}"
    url = f"https://{fake.domain_name()}/{fake.uri_path()}"
    return f"The design documents for {project} are published at {url}.", f"Where are the {project} documents?", url


def _file(fake: Faker) -> tuple[str, str, str]:
    subject = fake.bs()
    name = fake.file_name(extension=fake.random_element(["xlsx", "pdf", "csv", "docx"]))
    return f"The spreadsheet about how to {subject} is saved as {name}.", f"Which file is about how to {subject}?", name


def _code(fake: Faker) -> tuple[str, str, str]:
    code = fake.bothify("??-####", letters="ABCDEFGHJKLMNPQRSTUVWXYZ")
    system = fake.catch_phrase().lower()
    return (
        f"The access code for the {system} system is {code}.",
        f"What is the access code of the {system} system?",
        code,
    )


def _place(fake: Faker) -> tuple[str, str, str]:
    person = fake.name()
    city = fake.city()
    return f"{person} moved to {city} last winter.", f"Where did {person} move to?", city


KINDS: dict[str, Callable[[Faker], tuple[str, str, str]]] = {
    "email": _email,
    "url": _url,
    "file": _file,
    "code": _code,
    "place": _place,
}


def needle_set(
    haystack_size: int = 200,
    needles: int = 5,
    *,
    depths: Sequence[float] | None = None,
    kinds: Sequence[str] | None = None,
    seed: int = 0,
) -> NeedleSet:
    """A shuffled topic haystack of `haystack_size` documents, `needles` of which are needles.

    `depths` (fractions in [0, 1]) place the needles; by default they are spread evenly.
    """
    fake = seeded_faker(seed + 10_007)
    kinds = list(kinds or KINDS)
    depths = list(depths) if depths is not None else list(np.linspace(0.05, 0.95, needles))
    if len(depths) != needles:
        raise ValueError("give one depth per needle")
    texts = topic_haystack(haystack_size - needles, seed=seed).texts
    placed: list[Needle] = []
    for index, depth in enumerate(depths):
        text, question, answer = KINDS[kinds[index % len(kinds)]](fake)
        position = min(round(depth * len(texts)), len(texts))
        texts.insert(position, text)
        placed = [Needle(n.text, n.question, n.answer, n.kind, n.position + (n.position >= position)) for n in placed]
        placed.append(Needle(text, question, answer, kinds[index % len(kinds)], position))
    for needle in placed:
        assert texts[needle.position] == needle.text
    return NeedleSet(texts, placed)
