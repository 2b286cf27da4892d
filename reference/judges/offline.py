"""A deterministic conflict judge: subject / attribute / value facts, negation, numbers and dates.

Each sentence is read as one fact when it has one of these shapes (case-insensitive):

- ``S's A is V`` and ``The A of S is V`` (also was / are / were; "is not", "is no longer");
- ``S <verb> [preposition] V`` with S a capitalised name ("Maria Lopez lives in Lisbon"), negated by
  "does not", "did not", "never", "no longer" … , an adverb such as "just" allowed before the verb; the
  verb's tense is part of the attribute, so "lived in Paris" does not contradict "lives in Lisbon";
- ``S is [a] V`` with S a capitalised name ("Ana is a nurse", "Ana is 34 years old"); a relational
  role ("a mother of three", "a member of …") coexists with any other role.

A statement with a speaker (a dialogue turn) is read in the third person: "I" is the speaker, "my" the
speaker's ("V is my A" too), and a leading "Speaker: " is dropped. Clauses after a colon are read on their own.

Two facts with the same subject and attribute contradict when one negates the other, or when their
values differ — numbers compared as numbers (with their units), dates as dates. Different values
conflict only for a relation that holds one value at a time (`STATES`: where one lives, works, what
one works as or drives; `SINGLE_PARTICIPLES`: where or when one was born, whom one is married to …); other
verbs (likes, visited, went, is excited to …) take many values. A change of state
("moved to", "relocated to") names the state it leads to, in the present ("moved to Berlin"
contradicts "lives in Paris"); "is based in" is where one lives, "works as" the role one is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from itertools import combinations

from dateutil import parser as dateparser

from .base import Conflict, Statement, ordered

_COPULA = r"(?:is|are|was|were|has been|have been)"
_NEGATION = r"(?:not|no longer|never)"
_VERB_NEGATION = r"(?:does not|doesn't|do not|don't|did not|didn't|never|no longer|has not|hasn't|have not)"
_NAME = r"[A-Z][\w'’.-]*(?:\s+(?:of|de|van|von|da|del)?\s*[A-Z][\w'’.-]*)*"
_POSSESSIVE = re.compile(rf"^(?P<s>.+?)['’]s (?P<a>[^,]+?) {_COPULA}(?P<neg> {_NEGATION})? (?P<v>.+)$", re.I)
_OF_FORM = re.compile(rf"^the (?P<a>[^,]+?) of (?P<s>.+?) {_COPULA}(?P<neg> {_NEGATION})? (?P<v>.+)$", re.I)
_NAMED_COPULA = re.compile(rf"^(?P<s>{_NAME}) (?P<cop>{_COPULA})(?P<neg> {_NEGATION})? (?P<v>.+)$")
_ADVERB = r"(?:just|recently|finally|now|also|still|actually|already|really|eventually|officially)"
_NAMED_VERB = re.compile(
    rf"^(?P<s>{_NAME}) (?:(?P<neg>{_VERB_NEGATION}) )?(?:{_ADVERB} )?(?P<verb>[a-z]+)(?P<rest>(?: .+)?)$"
)
_PREPOSITIONS = ("in", "at", "to", "for", "from", "on", "with", "as", "into", "by")
_VALUE_END = re.compile(
    r",(?!\s?\d)| and | but | since | until | because | with | after | before | last | this | next | if | so "
    r"| ago\b| yesterday| today| now\b| these days| nowadays| anymore| in (?:19|20)\d\d\b",
    re.I,
)
_INTERJECTION = re.compile(r"^(?:oh|well|so|actually|anyway|by the way|also|and|but|yeah|yes|hey|wow)\b[,!]?\s+", re.I)
_FIRST_PERSON = (
    (re.compile(r"^(?:I'm|I’m|I am)\b"), "{} is"),
    (re.compile(r"^(?:I've|I’ve|I have)\b"), "{} has"),
    (re.compile(r"^I\b(?!['’])"), "{}"),
    (re.compile(r"^[Mm]y\b"), "{}'s"),
)
_INVERTED = re.compile(r"^(?P<v>.+?) (?P<cop>is|are|was|were) (?:now )?my (?P<a>[^,]+)$", re.I)
""""Radiohead is my favourite band": the speaker's attribute, named last."""
_ARTICLES = re.compile(r"^(?:a|an|the)\s+", re.I)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
_IRREGULAR = {
    "has": "have",
    "have": "have",
    "had": "have:past",
    "is": "be",
    "are": "be",
    "was": "be:past",
    "were": "be:past",
    "does": "do",
    "did": "do:past",
    "went": "go:past",
    "goes": "go",
    "bought": "buy:past",
    "sold": "sell:past",
    "left": "leave:past",
    "met": "meet:past",
    "paid": "pay:past",
    "made": "make:past",
    "born": "bear:past",
}
STATES = {
    "live in": "live in",
    "reside in": "live in",
    "move to": "live in",
    "relocate to": "live in",
    "based in": "live in",
    "employed at": "work at",
    "employed by": "work at",
    "work at": "work at",
    "work for": "work at",
    "work as": "be a",
    "drive": "drive",
}
"""Verbs (with their preposition) that name a relation holding one value at a time, by the relation they name."""
CHANGES = frozenset({"move to", "relocate to"})
SINGLE_PARTICIPLES = frozenset({"born on", "born in", "married to", "engaged to", "located in", "headquartered in"})
"""Passives ("was born on …") of one value; others ("is excited to …", "is interested in …") take many."""
PRONOUNS = frozenset(
    "it this that these those what which who whom whose there here he she they we you i one everything everyone "
    "something someone nothing nobody anything anyone all both each".split()
)
"""Subjects that name nothing by themselves: "It was a blast" says nothing about a subject to compare."""
"""Changes of state: in any tense they name the state they lead to, now."""
RELATIONAL = frozenset(
    "mother father parent grandmother grandfather grandparent son daughter sister brother wife husband partner "
    "friend neighbour neighbor member fan volunteer runner student citizen resident owner supporter".split()
)
"""Roles that coexist with an occupation: "a nurse" and "a mother of three" do not contradict."""
_PARTICIPLES = frozenset("born made paid sold built held given taken written known seen".split())


@dataclass(frozen=True)
class Fact:
    subject: str
    attribute: str
    value: str
    negated: bool
    functional: bool


class OfflineJudge:
    """Rule-based and deterministic: CI's judge. See the module docstring for the rules."""

    name = "offline"

    def judge(self, statements: Sequence[Statement]) -> list[Conflict]:
        by_key: dict[tuple[str, str], list[tuple[Statement, Fact]]] = defaultdict(list)
        for statement in statements:
            for fact in parse_facts(statement.text, speaker=statement.speaker):
                by_key[fact.subject, fact.attribute].append((statement, fact))
        conflicts: dict[tuple[str, str], Conflict] = {}
        for (subject, attribute), facts in by_key.items():
            for (first, a), (second, b) in combinations(facts, 2):
                reason = _contradiction(a, b)
                if reason and first.id != second.id:
                    conflict = ordered(first, second, f"{subject} / {attribute}: {reason}", self.name)
                    conflicts.setdefault((conflict.first, conflict.second), conflict)
        return list(conflicts.values())


def parse_facts(text: str, *, speaker: str = "") -> list[Fact]:
    """The facts of every sentence (and clause after a colon) of `text` that has a recognised shape; with a
    `speaker`, first-person sentences are read as the speaker's."""
    name = speaker.strip()
    name = name[:1].upper() + name[1:]
    text = text.strip()
    if name and text.lower().startswith(f"{name.lower()}:"):
        text = text[len(name) + 1 :]
    facts = []
    for sentence in re.split(r"(?<=[.!?;])\s+|:\s+", text.strip()):
        sentence = _INTERJECTION.sub("", sentence.strip().rstrip(".!?;").strip())
        fact = _parse_sentence(_third_person(sentence, name) if name else sentence)
        if fact is not None:
            facts.append(fact)
    return facts


def _third_person(sentence: str, speaker: str) -> str:
    """A first-person sentence with the speaker as its subject ("I moved" → "Ana moved", "my car" → "Ana's car")."""
    for pattern, replacement in _FIRST_PERSON:
        if pattern.match(sentence):
            return pattern.sub(replacement.format(speaker), sentence, count=1)
    inverted = _INVERTED.match(sentence)
    if inverted:
        return f"{speaker}'s {_value(inverted['a'])} {inverted['cop']} {inverted['v']}"
    return sentence


def _parse_sentence(sentence: str) -> Fact | None:
    for pattern in (_POSSESSIVE, _OF_FORM):
        match = pattern.match(sentence)
        if match:
            return _fact(match["s"], match["a"].lower(), match["v"], bool(match["neg"]), functional=True)
    match = _NAMED_COPULA.match(sentence)
    if match:
        past = ":past" if match["cop"].lower() in ("was", "were") else ""
        words = match["v"].split(" ")
        if len(words) > 1 and (words[0].endswith("ed") or words[0] in _PARTICIPLES):  # passive: "was born on …"
            attribute, rest = words[0], words[1:]
            if rest[0].lower() in _PREPOSITIONS and len(rest) > 1:
                attribute, rest = f"{attribute} {rest[0].lower()}", rest[1:]
            functional = attribute in STATES or attribute in SINGLE_PARTICIPLES
            attribute = STATES.get(attribute, attribute) + past
            return _fact(match["s"], attribute, " ".join(rest), bool(match["neg"]), functional=functional)
        value = _value(match["v"])
        if _NUMBER.search(value):
            unit = _NUMBER.sub("#", value)
            return _fact(match["s"], f"be{past} {unit}", value, bool(match["neg"]), functional=True)
        if _ARTICLES.match(match["v"]):
            relational = bool(RELATIONAL & set(re.findall(r"[a-z]+", value)))
            attribute = f"be{past} a {value}" if relational else f"be{past} a"
            return _fact(match["s"], attribute, value, bool(match["neg"]), functional=not relational)
        return _fact(match["s"], f"be{past} {value}", value, bool(match["neg"]), functional=False)
    match = _NAMED_VERB.match(sentence)
    if match and match["rest"]:
        stem, past = _lemma(match["verb"], negated_with=match["neg"] or "")
        rest = match["rest"].strip()
        preposition = rest.split(" ", 1)[0].lower()
        verb = stem
        if preposition in _PREPOSITIONS and " " in rest:
            verb, rest = f"{stem} {preposition}", rest.split(" ", 1)[1]
        state = _STATE_STEMS.get(verb)
        if state is None:
            return _fact(match["s"], verb + past, rest, bool(match["neg"]), functional=False)
        tense = "" if verb in _CHANGE_STEMS else past
        return _fact(match["s"], state + tense, rest, bool(match["neg"]), functional=True)
    return None


def _fact(subject: str, attribute: str, value: str, negated: bool, *, functional: bool) -> Fact | None:
    subject = _ARTICLES.sub("", subject.strip()).lower()
    if subject.split(" ", 1)[0] in PRONOUNS:  # whom it names is in another sentence
        return None
    return Fact(subject, attribute.strip(), _value(value), negated, functional)


def _value(raw: str) -> str:
    cut = _VALUE_END.search(raw, 1)
    value = raw[: cut.start()] if cut else raw
    return _ARTICLES.sub("", value.strip().strip("\"'“”")).lower()


def _lemma(verb: str, *, negated_with: str) -> tuple[str, str]:
    """A verb's stem and its tense mark (":past" or "")."""
    verb = verb.lower()
    if verb in _IRREGULAR:
        stem, _, tense = _IRREGULAR[verb].partition(":")
        return stem, f":{tense}" if tense else ""
    past = ":past" if verb.endswith("ed") or negated_with.lower().startswith("did") else ""
    for suffix in ("ied", "ed", "ies", "es", "s", "e", "d"):
        if verb.endswith(suffix) and len(verb) - len(suffix) >= 3:
            return verb[: -len(suffix)] + ("y" if suffix in ("ied", "ies") else ""), past
    return verb, past


def _stem_of(phrase: str) -> str:
    """A verb phrase of `STATES` ("live in") as parsing stems it ("liv in")."""
    verb, _, preposition = phrase.partition(" ")
    stem = _lemma(verb, negated_with="")[0]
    return f"{stem} {preposition}" if preposition else stem


_STATE_STEMS = {_stem_of(phrase): state for phrase, state in STATES.items()}
_CHANGE_STEMS = frozenset(_stem_of(phrase) for phrase in CHANGES)


def _contradiction(a: Fact, b: Fact) -> str | None:
    same = same_value(a.value, b.value)
    if same and a.negated != b.negated:
        return f"'{a.value}' is both stated and negated"
    if not same and a.functional and not a.negated and not b.negated:
        return f"'{a.value}' vs '{b.value}'"
    return None


def same_value(a: str, b: str) -> bool:
    if a == b:
        return True
    numbers_a, numbers_b = _NUMBER.findall(a), _NUMBER.findall(b)
    if numbers_a and numbers_b and _NUMBER.sub("#", a) == _NUMBER.sub("#", b):
        return [float(n.replace(",", "")) for n in numbers_a] == [float(n.replace(",", "")) for n in numbers_b]
    date_a, date_b = _date(a), _date(b)
    return date_a is not None and date_a == date_b


def _date(value: str) -> date | None:
    if not re.search(r"\d", value):
        return None
    try:
        found: date = dateparser.parse(value, fuzzy=False, default=None).date()
        return found
    except (ValueError, OverflowError, TypeError, AttributeError):
        return None
