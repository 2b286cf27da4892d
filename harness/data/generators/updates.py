"""Multi-session dialogues in which facts change, each version labelled: knowledge-update questions as
LongMemEval asks them and MemoryAgentBench's fact consolidation scores them (the current version must win).

Two friends talk over many dated sessions. Each states facts about themself in the first person ("I work at
…"), and some sessions later states a new value in other words ("I left my old job and joined …"), some facts
changing twice. Around them: small talk, the other friend's questions and replies (which name the old value
or none), and distractors that state the same kind of fact about someone else ("my cousin lives in …"). Each
question asks for a fact in the third person, as LoCoMo's questions do; its versions are the turns that
stated the fact, oldest first: the last is the current one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from faker import Faker

from harness.data.generators.seeded import seeded_faker

CARS = ("an old Volvo estate", "a red Mini", "a Toyota Prius", "a Tesla Model 3", "a Ford pickup", "a blue Vespa")
COMMUTES = ("by bus", "by train", "on my bike", "by tram", "on foot", "by ferry")
BANDS = ("Radiohead", "Fleetwood Mac", "Arctic Monkeys", "Daft Punk", "Nina Simone", "the Beatles", "Bon Iver")


@dataclass(frozen=True)
class FactKind:
    """One kind of fact: its values, how a speaker first states it, how they state a change, how someone else
    is said to have it (a distractor) and how a question asks for it."""

    value: Callable[[Faker, np.random.Generator], str]
    stated: tuple[str, ...]
    changed: tuple[str, ...]
    about_others: tuple[str, ...]
    checked: str
    """How the other speaker asks whether a value they were told still holds."""
    asked: tuple[str, ...]


def _with_article(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _pick(options: tuple[str, ...]) -> Callable[[Faker, np.random.Generator], str]:
    return lambda fake, rng: _choice(rng, options)


KINDS: dict[str, FactKind] = {
    "residence": FactKind(
        lambda fake, rng: fake.city(),
        ("I live in {v} these days, near the old market.", "My flat in {v} is tiny, but I love living there."),
        ("I moved to {v} last month!", "Big news: we packed everything up and relocated to {v}.",
         "I'm settling into my new place in {v}."),
        ("My cousin {other} lives in {v}.", "My friend {other} just bought a house in {v}."),
        "Are you still living in {v}?",
        ("Where does {name} live?", "Which city is {name} living in?"),
    ),
    "employer": FactKind(
        lambda fake, rng: fake.company(),
        ("I work at {v}, mostly on the back office side.", "Work at {v} has been hectic lately."),
        ("I left my old job and joined {v}.", "I started a new position at {v} this week."),
        ("My brother {other} works at {v}.", "My neighbour {other} got a job at {v}."),
        "How are things at {v}?",
        ("Where does {name} work?", "Which company does {name} work for?"),
    ),
    "occupation": FactKind(
        lambda fake, rng: _with_article(fake.job().split(",")[0].lower()),
        ("I'm {v}, so my hours are long.", "Being {v} is tiring some days."),
        ("I changed careers: I'm {v} now.", "I retrained, and these days I work as {v}."),
        ("My sister {other} is {v}.", "I met {v} called {other} at the party."),
        "Do you still enjoy being {v}?",
        ("What does {name} do for a living?", "What is {name}'s job?"),
    ),
    "car": FactKind(
        _pick(CARS),
        ("I drive {v} to work.", "My car is {v}, nothing fancy."),
        ("I sold the car and bought {v}.", "Finally traded in my car: I got {v}."),
        ("My friend {other} drives {v}.", "Someone parked {v} in front of my door."),
        "Is {v} still running well?",
        ("What car does {name} drive?", "What vehicle does {name} have?"),
    ),
    "email": FactKind(
        lambda fake, rng: fake.free_email(),
        ("You can reach me at {v}.", "My email is {v} if you need it."),
        ("I changed my email address, it's {v} now.", "Please write to my new address, {v}."),
        ("My colleague {other} writes from {v}.", "I got a weird message from {v}."),
        "Did you get my message at {v}?",
        ("What is {name}'s email address?", "How can you email {name}?"),
    ),
    "gym": FactKind(
        lambda fake, rng: str(int(rng.integers(1, 7))),
        ("I go to the gym {v} times a week.", "I've been training {v} times a week."),
        ("I've changed my routine: {v} gym sessions a week now.", "These days I only manage {v} workouts a week."),
        ("My roommate {other} goes to the gym {v} times a week.", "The trainer says {v} sessions a week is plenty."),
        "Still going to the gym {v} times a week?",
        ("How many times a week does {name} go to the gym?", "How often does {name} work out?"),
    ),
    "commute": FactKind(
        _pick(COMMUTES),
        ("I get to work {v} every day.", "My commute is {v}, about forty minutes."),
        ("I've started commuting {v} instead.", "New habit: I go to the office {v} now."),
        ("My colleague {other} comes in {v}.", "Half my team travels {v}."),
        "Are you still getting to work {v}?",
        ("How does {name} get to work?", "How does {name} commute?"),
    ),
    "band": FactKind(
        _pick(BANDS),
        ("My favourite band is {v}, I listen to them all the time.", "Nothing beats {v} for me."),
        ("I've gone off my old favourites: {v} is my favourite band now.", "Lately {v} has become my top band."),
        ("My aunt {other} loves {v}.", "They played {v} at the wedding."),
        "Have you been listening to {v} lately?",
        ("What is {name}'s favourite band?", "Which band does {name} like most?"),
    ),
}  # fmt: skip

SMALL_TALK = (
    "How was your weekend?",
    "Pretty quiet, I mostly stayed in and read.",
    "Did you see the game on {day}?",
    "I tried a new recipe with {thing}, it turned out great.",
    "The weather has been awful, rain every day.",
    "I watched a documentary about {thing} last night.",
    "We should grab coffee soon.",
    "My phone keeps dying, I need a new battery.",
    "I've been reading a novel by {person}.",
    "Work was busy, lots of meetings about {thing}.",
    "Haha, that sounds like you!",
    "I'm thinking of learning to play the guitar.",
    "My plants are finally growing again.",
    "Do you have plans for {day}?",
    "I went hiking near {city} with some friends.",
    "The new cafe on the corner does great pastries.",
    "I can't believe how fast this year is going.",
    "I finally cleaned out the garage.",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
REPLIES = (
    "Wow, that's a big change! How are you finding it?",
    "Oh nice, congratulations!",
    "Really? I didn't see that coming.",
    "That sounds exciting, tell me more next time.",
)


@dataclass(frozen=True)
class Turn:
    id: str
    session: int
    speaker: str
    text: str
    time: datetime


@dataclass(frozen=True)
class FactUpdate:
    """A fact that changed: the question that asks for it and the turns that stated each of its versions,
    oldest first (the last is current)."""

    question: str
    kind: str
    speaker: str
    versions: tuple[tuple[str, ...], ...]
    values: tuple[str, ...]


@dataclass(frozen=True)
class UpdateDialogue:
    name: str
    turns: list[Turn]
    updates: list[FactUpdate]
    asked_at: datetime
    """When the questions are asked: a day after the last session."""


def update_dialogues(
    conversations: int = 4, *, sessions: int = 16, facts: int = 8, seed: int = 0
) -> list[UpdateDialogue]:
    """`conversations` dialogues of `sessions` sessions, each with `facts` facts per speaker that change once
    or twice (seeded; a dedicated Faker)."""
    fake, rng = seeded_faker(seed), np.random.default_rng(seed)
    return [_dialogue(fake, rng, f"updates-{seed}-{c}", sessions, facts) for c in range(conversations)]


def _dialogue(fake: Faker, rng: np.random.Generator, name: str, sessions: int, facts: int) -> UpdateDialogue:
    speakers = (fake.first_name(), fake.first_name())
    while speakers[1] == speakers[0]:
        speakers = (speakers[0], fake.first_name())
    planned: dict[int, list[Statement]] = {s: [] for s in range(sessions)}
    changing = []
    for speaker in speakers:
        for kind in [str(k) for k in rng.choice(list(KINDS), size=min(facts, len(KINDS)), replace=False)]:
            versions = 3 if rng.random() < 0.3 else 2
            values: list[str] = []
            while len(values) < versions:
                value = KINDS[kind].value(fake, rng)
                if value not in values:
                    values.append(value)
            when = np.sort(rng.choice(sessions, size=versions, replace=False)).tolist()
            for version, (session, value) in enumerate(zip(when, values)):
                planned[session].append(Statement(speaker, kind, value, version))
            changing.append((speaker, kind, tuple(values)))
    turns: list[Turn] = []
    stated: dict[tuple[str, str], list[str]] = {}
    told: dict[tuple[str, str], str] = {}
    """What each speaker has said of each fact so far (the other may ask whether it still holds)."""
    day = datetime(2023, 1, 2, 18, 0) + timedelta(days=int(rng.integers(0, 300)))
    for session in range(sessions):
        day += timedelta(days=int(rng.integers(4, 21)))
        for position, (speaker, text, fact) in enumerate(_session(fake, rng, planned[session], speakers, told)):
            turn = Turn(
                f"{name}/D{session + 1}:{position + 1}", session + 1, speaker, text, day + timedelta(minutes=position)
            )
            turns.append(turn)
            if fact is not None:
                stated.setdefault((fact.speaker, fact.kind), []).append(turn.id)
                told[fact.speaker, fact.kind] = fact.value
    updates = [
        FactUpdate(
            _choice(rng, KINDS[kind].asked).format(name=speaker),
            kind,
            speaker,
            tuple((turn_id,) for turn_id in stated[speaker, kind]),
            values,
        )
        for speaker, kind, values in changing
    ]
    return UpdateDialogue(name, turns, updates, turns[-1].time + timedelta(days=1))


@dataclass(frozen=True)
class Statement:
    """A planned statement of a fact: who states it, of which kind, its value, and which version it is."""

    speaker: str
    kind: str
    value: str
    version: int


def _session(
    fake: Faker,
    rng: np.random.Generator,
    facts: list[Statement],
    speakers: tuple[str, str],
    told: dict[tuple[str, str], str],
) -> list[tuple[str, str, Statement | None]]:
    """A session's turns (speaker, text, the fact it states if any): small talk with the planned statements
    spread through it, a reply after each change, now and then a distractor (someone else's fact of the same
    kind) or the other speaker asking whether a value they were told still holds."""
    events: list[tuple[str, str, Statement | None]] = []
    length = int(rng.integers(10, 19))
    slots = sorted(rng.choice(np.arange(1, length), size=min(len(facts), length - 1), replace=False).tolist())
    planned = dict(zip(slots, facts))
    for position in range(length):
        speaker = speakers[position % 2]
        if position in planned:
            fact = planned[position]
            kind = KINDS[fact.kind]
            events.append(
                (fact.speaker, _choice(rng, kind.changed if fact.version else kind.stated).format(v=fact.value), fact)
            )
            if fact.version:
                events.append((speakers[1 - speakers.index(fact.speaker)], _choice(rng, REPLIES), None))
            continue
        roll = rng.random()
        listener = speakers[1 - speakers.index(speaker)]
        known = sorted(kind for owner, kind in told if owner == listener)
        if roll < 0.12:
            kind = KINDS[_choice(rng, tuple(KINDS))]
            text = _choice(rng, kind.about_others).format(v=kind.value(fake, rng), other=fake.first_name())
        elif roll < 0.2 and known:
            asked = _choice(rng, tuple(known))
            text = KINDS[asked].checked.format(v=told[listener, asked])
        else:
            text = _choice(rng, SMALL_TALK).format(
                day=_choice(rng, DAYS), thing=fake.word(), person=fake.name(), city=fake.city()
            )
        events.append((speaker, text, None))
    return events


def _choice(rng: np.random.Generator, options: tuple[str, ...]) -> str:
    return options[int(rng.integers(len(options)))]


@dataclass(frozen=True)
class FactRelation:
    """A relation of MemoryAgentBench-style fact statements: the subject, how a fact states it, how a change is
    sometimes put instead, and the question."""

    subject: Callable[[Faker], str]
    value: Callable[[Faker, np.random.Generator], str]
    stated: str
    changed: str
    asked: str


RELATIONS: dict[str, FactRelation] = {
    "residence": FactRelation(
        lambda fake: fake.name(), lambda fake, rng: fake.city(), "{s} lives in {v}.", "{s} moved to {v}.",
        "Where does {s} live?",
    ),
    "employer": FactRelation(
        lambda fake: fake.name(), lambda fake, rng: fake.company(), "{s} works at {v}.", "{s} now works at {v}.",
        "Where does {s} work?",
    ),
    "role": FactRelation(
        lambda fake: fake.name(), lambda fake, rng: _with_article(fake.job().split(",")[0].lower()), "{s} is {v}.",
        "{s} is {v} now.", "What is {s}'s job?",
    ),
    "email": FactRelation(
        lambda fake: fake.name(), lambda fake, rng: fake.email(), "{s}'s email address is {v}.",
        "{s}'s new email address is {v}.", "What is {s}'s email address?",
    ),
    "budget": FactRelation(
        lambda fake: f"Project {fake.last_name()}", lambda fake, rng: f"{1000 * int(rng.integers(5, 900)):,}",
        "The budget of {s} is {v} dollars.", "The budget of {s} was revised to {v} dollars.",
        "What is the budget of {s}?",
    ),
    "manager": FactRelation(
        lambda fake: f"the {fake.word()} team", lambda fake, rng: fake.name(), "The manager of {s} is {v}.",
        "{v} took over as manager of {s}.", "Who manages {s}?",
    ),
    "car": FactRelation(
        lambda fake: fake.name(), _pick(CARS), "{s} drives {v}.", "{s} sold the old car and drives {v} now.",
        "What car does {s} drive?",
    ),
}  # fmt: skip


def fact_streams(streams: int = 4, *, facts: int = 300, changing: int = 40, seed: int = 0) -> list[UpdateDialogue]:
    """`streams` streams of `facts` one-sentence facts about many subjects, an hour apart (a session a day), in
    which `changing` facts are stated again later with a new value: the same sentence with the new value, or
    a change put in other words (seeded; a dedicated Faker)."""
    fake, rng = seeded_faker(seed + 1_000), np.random.default_rng(seed + 1_000)
    return [_fact_stream(fake, rng, f"facts-{seed}-{s}", facts, changing) for s in range(streams)]


def _fact_stream(fake: Faker, rng: np.random.Generator, name: str, facts: int, changing: int) -> UpdateDialogue:
    statements: list[tuple[str, str, str] | None] = [None] * facts
    """Per position: (relation, subject, text) of the changing facts' versions; None for a fact that stays."""
    changes, used = [], set()

    def subject_of(relation: str) -> str:
        """A subject no other fact of this relation has (no accidental update)."""
        while (found := RELATIONS[relation].subject(fake)) in used:
            pass
        used.add(found)
        return found

    for _ in range(changing):
        relation = _choice(rng, tuple(RELATIONS))
        kind, subject = RELATIONS[relation], subject_of(relation)
        versions = 3 if rng.random() < 0.3 else 2
        free = [i for i, s in enumerate(statements) if s is None]
        where = sorted(int(i) for i in rng.choice(free, size=versions, replace=False))
        values: list[str] = []
        while len(values) < versions:
            value = kind.value(fake, rng)
            if value not in values:
                values.append(value)
        for version, (position, value) in enumerate(zip(where, values)):
            template = kind.changed if version and rng.random() < 0.5 else kind.stated
            statements[position] = (relation, subject, template.format(s=subject, v=value))
        changes.append((relation, subject, tuple(where), tuple(values)))
    start = datetime(2024, 3, 4, 8, 0) + timedelta(days=int(rng.integers(0, 300)))
    turns = []
    for position, planned in enumerate(statements):
        if planned is None:  # a fact that never changes
            relation = _choice(rng, tuple(RELATIONS))
            kind = RELATIONS[relation]
            text = kind.stated.format(s=subject_of(relation), v=kind.value(fake, rng))
        else:
            text = planned[2]
        at = start + timedelta(hours=position)
        turns.append(Turn(f"{name}/F{position + 1}", (at - start).days + 1, "", text, at))
    updates = [
        FactUpdate(
            RELATIONS[relation].asked.format(s=subject),
            relation,
            "",
            tuple((turns[i].id,) for i in where),
            values,
        )
        for relation, subject, where, values in changes
    ]
    return UpdateDialogue(name, turns, updates, turns[-1].time + timedelta(hours=1))
