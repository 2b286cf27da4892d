"""Topic-clustered haystacks: short notes about a few everyday subjects, with true topic labels.

Each topic has its own vocabulary and sentence patterns; a dedicated, seeded `Faker` fills in
people, places and dates, so notes on one topic share meaning but rarely share whole phrases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.data.generators.seeded import fixed_date, seeded_faker

TOPICS: dict[str, dict[str, list[str]]] = {
    "cooking": {
        "things": [
            "the risotto",
            "a sourdough loaf",
            "the tomato sauce",
            "a lemon tart",
            "the curry",
            "fresh pasta",
            "the roast chicken",
            "a pot of soup",
        ],
        "patterns": [
            "{person} cooked {thing} for dinner in {city}",
            "{person} burned {thing} while baking on {date}",
            "The recipe for {thing} needs more garlic and salt",
            "{person} shared a recipe for {thing}",
            "Simmer {thing} slowly and season it before serving",
        ],
    },
    "astronomy": {
        "things": [
            "Jupiter",
            "the Andromeda galaxy",
            "a meteor shower",
            "the lunar eclipse",
            "Saturn's rings",
            "a distant comet",
            "the Orion nebula",
            "a red dwarf star",
        ],
        "patterns": [
            "{person} watched {thing} through a telescope in {city}",
            "Astronomers observed {thing} on {date}",
            "The night sky showed {thing} clearly",
            "{person} photographed {thing} from the observatory",
            "A new study measured the orbit of {thing}",
        ],
    },
    "football": {
        "things": [
            "the striker",
            "the home team",
            "the goalkeeper",
            "the league final",
            "a penalty kick",
            "the midfielder",
            "the derby match",
            "the coach",
        ],
        "patterns": [
            "{person} scored after {thing} lost the ball in {city}",
            "Fans cheered {thing} on {date}",
            "The referee stopped {thing} in the second half",
            "{person} criticised {thing} after the match",
            "The stadium celebrated {thing} with chants and flags",
        ],
    },
    "finance": {
        "things": [
            "the stock market",
            "interest rates",
            "the quarterly earnings",
            "the bond yields",
            "the exchange rate",
            "inflation",
            "the pension fund",
            "the bank's profits",
        ],
        "patterns": [
            "{person} warned that {thing} would fall in {city}",
            "Investors worried about {thing} on {date}",
            "Analysts revised forecasts for {thing}",
            "{person} moved savings after {thing} changed",
            "The central bank commented on {thing} today",
        ],
    },
    "gardening": {
        "things": [
            "the rose bushes",
            "tomato seedlings",
            "the vegetable patch",
            "the apple tree",
            "the compost heap",
            "tulip bulbs",
            "the herb garden",
            "the lawn",
        ],
        "patterns": [
            "{person} planted {thing} in the spring in {city}",
            "{person} watered {thing} on {date}",
            "Slugs damaged {thing} overnight",
            "Prune {thing} before the first frost",
            "The garden centre sold fertiliser for {thing}",
        ],
    },
    "medicine": {
        "things": [
            "the vaccine trial",
            "a new antibiotic",
            "the flu season",
            "the surgery",
            "blood pressure",
            "the hospital ward",
            "a rare disease",
            "the clinical study",
        ],
        "patterns": [
            "Doctor {person} discussed {thing} with patients in {city}",
            "Nurses prepared for {thing} on {date}",
            "Researchers published results on {thing}",
            "{person} asked the pharmacist about {thing}",
            "The health ministry reported on {thing}",
        ],
    },
    "travel": {
        "things": [
            "the night train",
            "a cheap flight",
            "the hotel booking",
            "the passport",
            "a road trip",
            "the ferry crossing",
            "the airport lounge",
            "a hiking tour",
        ],
        "patterns": [
            "{person} booked {thing} to {city}",
            "{person} missed {thing} on {date}",
            "The travel agent cancelled {thing}",
            "Tourists queued for {thing} at dawn",
            "{person} packed a suitcase for {thing}",
        ],
    },
    "computing": {
        "things": [
            "the database server",
            "a memory leak",
            "the compiler",
            "the login page",
            "the backup job",
            "a security patch",
            "the build pipeline",
            "the laptop battery",
        ],
        "patterns": [
            "{person} debugged {thing} late at night in {city}",
            "The team deployed {thing} on {date}",
            "Engineers rewrote {thing} in a faster language",
            "{person} filed a bug about {thing}",
            "Restart {thing} after installing updates",
        ],
    },
}


@dataclass(frozen=True)
class TopicHaystack:
    texts: list[str]
    labels: np.ndarray
    topics: list[str]


def topic_haystack(n: int, *, topics: int = len(TOPICS), seed: int = 0) -> TopicHaystack:
    """`n` notes spread evenly over the first `topics` topics, shuffled, with their topic index."""
    rng = np.random.default_rng(seed)
    fake = seeded_faker(seed)
    names = list(TOPICS)[:topics]
    labels = rng.permutation(np.arange(n) % len(names))
    texts = []
    for label in labels.tolist():
        topic = TOPICS[names[label]]
        pattern = topic["patterns"][rng.integers(len(topic["patterns"]))]
        thing = topic["things"][rng.integers(len(topic["things"]))]
        text = pattern.format(person=fake.name(), city=fake.city(), date=fixed_date(fake).isoformat(), thing=thing)
        texts.append(text[0].upper() + text[1:] + ".")
    return TopicHaystack(texts, labels, names)
