"""The verdicts as a reader meets them: a short reading first (what held, what did not, and which of those was
the hoped-for result), the verdict tables, and, in the details, each claim's statement, source, bar and
conditions and what a verdict means. The engine's targets are read apart from the peers measured against the
same bars, and verdicts a run could not judge fold into one row per claim and reason."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from harness.output.results import RunResults, Verdict
from harness.verdicts.claims import EDGE, MEANING, UNMEASURED
from harness.verdicts.confidence import INCONCLUSIVE, MARGIN, REFUTED, SUPPORTED
from harness.verdicts.field import FIELD_CLAIMS
from harness.verdicts.field import MEANING as FIELD_MEANING

KINDS = {
    "published claims": "the cellular-memory prototype's published claims",
    "targets": "MagneticBench's targets for the reference engine",
}
FIELD = frozenset(c.id for c in FIELD_CLAIMS)


def kinds(results: RunResults) -> dict[str, list[Verdict]]:
    """The run's verdicts by kind: the published claims, the engine's targets, and the peers measured against
    those targets' bars for comparison."""
    return {
        "published claims": [v for v in results.claims if v.claim not in FIELD],
        "field claims": [v for v in results.claims if v.claim in FIELD],
        "targets": [v for v in results.targets if not v.peer],
        "peers": [v for v in results.targets if v.peer],
    }


def reading(results: RunResults) -> list[str]:
    """A few generated sentences per kind of verdict: how many held, which did not (and which of those as hoped),
    which cannot tell; their figures are in the verdict tables that follow."""
    lines = []
    verdicts = kinds(results)
    for kind, described in KINDS.items():
        mine = verdicts[kind]
        if not mine:
            continue
        held, failed = _count(mine, SUPPORTED), _count(mine, REFUTED)
        counted = [f"{held} {_verb(held, 'holds', 'hold')}", f"{failed} {_verb(failed, 'does', 'do')} not"]
        hoped = [v for v in mine if v.as_hoped]
        if hoped:
            counted[-1] += f" ({len(hoped)} of them as hoped)"
        if unsure := _count(mine, INCONCLUSIVE):
            counted.append(f"{unsure} cannot be told apart from the bar (within {MARGIN:.0%})")
        if unmeasured := _count(mine, UNMEASURED):
            counted.append(f"{unmeasured} {_verb(unmeasured, 'was', 'were')} not measured by this run")
        lines.append(f"- **{described[0].upper()}{described[1:]}**: {_plural(len(mine), 'verdict')}, {_and(counted)}.")
        lines += [f"  - As hoped, `{v.claim}` does not hold for `{v.system}`: {v.hoped}." for v in hoped]
        if refuted := [v for v in mine if v.verdict == REFUTED and not v.as_hoped]:
            lines.append(f"  - Do not hold: {_named(refuted)}.")
        if inconclusive := [v for v in mine if v.verdict == INCONCLUSIVE]:
            lines.append(f"  - Cannot tell: {_named(inconclusive)}.")
    if field := verdicts["field claims"]:
        counts = [f"{_count(field, word)} {word.lower()}" for word in FIELD_MEANING]
        lines.append(f"- **The field's published claims**: {_plural(len(field), 'verdict')}, {_and(counts)}.")
    if peers := verdicts["peers"]:
        systems = _and(sorted({f"`{v.system}`" for v in peers}))
        claims = _and(list(dict.fromkeys(f"`{v.claim}`" for v in peers)))
        lines.append(f"- {systems}, measured against the bars of {claims} for comparison: under Peers, in the details.")
    return lines or ["- Nothing to judge: this run measured no claim."]


def _named(verdicts: Sequence[Verdict]) -> str:
    """ "`claim` for `system` (at the edge of …)", each claim once with its systems."""
    systems: dict[str, list[str]] = {}
    for v in verdicts:
        edge = f" (at the edge of {' and '.join(v.neighbours)})" if v.neighbours else ""
        systems.setdefault(v.claim, []).append(f"`{v.system}`{edge}")
    return "; ".join(f"`{claim}` for {_and(named)}" for claim, named in systems.items())


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    """Claim, system, verdict and the figure it rests on; verdicts not measured for one reason fold into one row."""
    rows: list[list[str]] = []
    folded: dict[tuple[str, str], list[str]] = {}
    for v in verdicts:
        if v.verdict != UNMEASURED:
            rows.append([v.claim, v.system, v.shown, v.measured])
        elif (v.claim, v.measured) in folded:
            folded[v.claim, v.measured][1] += f", {v.system}"
        else:
            folded[v.claim, v.measured] = [v.claim, v.system, v.shown, v.measured]
            rows.append(folded[v.claim, v.measured])
    return str(tabulate(rows, headers=["claim", "system", "verdict", "measured"], tablefmt="github"))


def claim_list(verdicts: Sequence[Verdict]) -> list[str]:
    """Each claim once: its id, what it states, where it comes from, its bar and conditions."""
    seen = {v.claim: v for v in verdicts}
    return [
        f'- `{v.claim}`: "{v.statement}" ({v.source}); bar: {v.bar}; measured on: {v.condition}' for v in seen.values()
    ]


def meanings() -> list[str]:
    lines = [f"- **{verdict}**: {meaning}" for verdict, meaning in MEANING.items()]
    return [*lines, f"- **(at the edge of …)**: {EDGE}"]


def _count(verdicts: Sequence[Verdict], verdict: str) -> int:
    return sum(v.verdict == verdict for v in verdicts)


def _verb(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _and(parts: Sequence[str]) -> str:
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
