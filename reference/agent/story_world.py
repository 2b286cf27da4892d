"""A story world's consistency registry: characters' attributes and traits, world rules, event outcomes.

`WorldRegistry.record(text)` files each sentence and returns the typed conflicts it creates:

- ``attribute`` — a character's attribute given two values (facts read by the offline judge's
  parser); severity high for fixed attributes (birth, eyes, age, height), medium otherwise;
- ``trait`` — a character given opposite traits ("brave" then "cowardly"): medium;
- ``rule`` — an event that breaks a world rule ("Magic is forbidden" then "Mira used magic"): high;
- ``outcome`` — an event given two different outcomes ("won" by two sides): high.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..judges.offline import parse_facts, same_value

OPPOSITES = {
    "brave": "cowardly",
    "kind": "cruel",
    "honest": "dishonest",
    "loyal": "treacherous",
    "generous": "greedy",
    "calm": "hot-tempered",
    "wise": "foolish",
    "humble": "arrogant",
    "patient": "impatient",
    "cheerful": "gloomy",
}
OPPOSITES.update({v: k for k, v in OPPOSITES.items()})
FIXED_ATTRIBUTES = ("born", "eye", "age", "# years old", "height", "birth")
_RULE = re.compile(
    r"^(?:(?P<act>[\w ]+?) is (?:forbidden|banned|impossible)|(?:no one|nobody) (?:can|may) (?P<verb>[\w ]+?))"
    r"(?: in [\w ]+)?$",
    re.I,
)
_WIN = re.compile(r"^(?P<who>.+?) (?P<verb>won|lost) (?P<event>the [\w ]+?)$", re.I)
_WON_BY = re.compile(r"^(?P<event>the [\w ]+?) was (?P<verb>won|lost) by (?P<who>.+?)$", re.I)
_TRAIT = re.compile(r"^(?P<who>[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*) (?:is|was|seems|became) (?:very )?(?P<trait>[\w-]+)$")


@dataclass(frozen=True)
class WorldConflict:
    kind: str
    severity: str
    subject: str
    detail: str
    statements: tuple[str, str]


@dataclass
class WorldRegistry:
    attributes: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    traits: dict[str, dict[str, str]] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)
    conflicts: list[WorldConflict] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)

    def record(self, text: str) -> list[WorldConflict]:
        """File every sentence of `text`; returns the conflicts it adds."""
        found = []
        for sentence in (s.strip().rstrip(".!?").strip() for s in re.split(r"(?<=[.!?])\s+", text)):
            if sentence:
                self.statements.append(sentence)
                found += self._rule(sentence) or self._outcome(sentence) or self._trait(sentence)
                found += self._attributes(sentence) + self._violations(sentence)
        self.conflicts += found
        return found

    def summary(self) -> str:
        lines = [f"{len(self.statements)} statements; rules: {', '.join(self.rules) or 'none'}"]
        for who, traits in sorted(self.traits.items()):
            lines.append(f"- {who}: {', '.join(sorted(traits))}")
        lines += [f"- {event}: {winner} won" for event, (winner, _) in sorted(self.outcomes.items())]
        return "\n".join(lines)

    def _rule(self, sentence: str) -> list[WorldConflict] | None:
        match = _RULE.match(sentence)
        if not match:
            return None
        act = (match["act"] or match["verb"]).lower().strip()
        self.rules[act.split()[-1]] = sentence
        return []

    def _violations(self, sentence: str) -> list[WorldConflict]:
        if _RULE.match(sentence):
            return []
        words = set(re.findall(r"[a-z]+", sentence.lower()))
        return [
            WorldConflict("rule", "high", keyword, f"breaks the rule: {rule}", (rule, sentence))
            for keyword, rule in self.rules.items()
            if keyword in words
        ]

    def _outcome(self, sentence: str) -> list[WorldConflict] | None:
        match = _WIN.match(sentence) or _WON_BY.match(sentence)
        if not match:
            return None
        event, who = match["event"].lower(), match["who"].strip()
        winner = who if match["verb"].lower() == "won" else f"not {who}"
        if event in self.outcomes and self.outcomes[event][0] != winner:
            earlier = self.outcomes[event]
            return [WorldConflict("outcome", "high", event, f"{earlier[0]} vs {winner}", (earlier[1], sentence))]
        self.outcomes.setdefault(event, (winner, sentence))
        return []

    def _trait(self, sentence: str) -> list[WorldConflict]:
        match = _TRAIT.match(sentence)
        if not match or match["trait"].lower() not in OPPOSITES:
            return []
        who, trait = match["who"], match["trait"].lower()
        known = self.traits.setdefault(who, {})
        opposite = OPPOSITES[trait]
        known[trait] = sentence
        if opposite in known:
            return [WorldConflict("trait", "medium", who, f"{opposite} vs {trait}", (known[opposite], sentence))]
        return []

    def _attributes(self, sentence: str) -> list[WorldConflict]:
        found = []
        for fact in parse_facts(sentence):
            if not fact.functional or fact.negated or (fact.attribute.startswith("be ") and fact.value in OPPOSITES):
                continue
            key = (fact.subject, fact.attribute)
            if key in self.attributes and not same_value(self.attributes[key][0], fact.value):
                earlier = self.attributes[key]
                severity = "high" if any(a in fact.attribute for a in FIXED_ATTRIBUTES) else "medium"
                found.append(
                    WorldConflict(
                        "attribute",
                        severity,
                        fact.subject,
                        f"{fact.attribute}: {earlier[0]} vs {fact.value}",
                        (earlier[1], sentence),
                    )
                )
            self.attributes.setdefault(key, (fact.value, sentence))
        return found
