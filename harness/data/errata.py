"""LoCoMo's corrected key: the corrections of an audit (dial481/locomo-audit's `errors.json` format) applied to the
questions of a LoCoMo file the user supplies.

The audit names a question `locomo_<i>_qa<n>`: `<i>` its conversation's position in the canonical `locomo10.json`,
`<n>` its place in that conversation's `qa` list, and gives the question's text. A file of one conversation (or a
folder of them) has no such position, so an id is matched by its place in the `qa` list and its text; the position
decides only between conversations that ask the same question at the same place (the canonical file). An id that
matches no question of a conversation the file holds is refused with the reason: a correction must never be lost
silently. Corrections for conversations the file does not hold are counted, not applied.

Usage (the retrieval tables and the answers experiment read the same corrected key)::

    corrections = load_errata(Path("errors.json"))
    corrected = apply_errata(locomo_questions(spec), corrections)
    dialogue = load_dialogue(spec, turn_format, evidence=corrected.evidence)  # qrels on the corrected key
    corrected.changed                                                          # questions the corrections changed

The retrieval experiments rank each question once and score the ranking on both keys (`keyed_dialogue`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.data.beir import DatasetFormatError
from harness.data.dialogue import (
    EVIDENCE_ID,
    SPEAKER_CAPTIONS,
    DialogueSet,
    LocomoQuestion,
    TurnFormat,
    load_dialogue,
    locomo_questions,
)
from harness.data.evalset import Conversation, EvalSet
from harness.data.spec import DatasetSpec

AUDIT_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
"""The audit's question id: the conversation's position in `locomo10.json` and the question's place in its `qa`."""


ORIGINAL, CORRECTED = "original", "corrected"
"""The keys a LoCoMo figure is scored on: the file's own, and the file's with the corrections of `--errata`."""


class ErrataError(DatasetFormatError):
    """A corrections (or answers) file that cannot be read, or an id that matches no question."""


@dataclass(frozen=True)
class Correction:
    """One corrected question: its id (and text, which the audit gives), its corrected answer and evidence (None:
    unchanged) and the audit's kind of error."""

    question_id: str
    question: str | None
    answer: str | None
    evidence: tuple[str, ...] | None
    error_type: str = ""


@dataclass(frozen=True)
class Corrected:
    """Every question of a file with the corrections applied, and how many of them changed."""

    questions: list[LocomoQuestion]
    answers_changed: int
    evidence_changed: int
    changed: int
    """Questions whose answer or evidence the corrections changed."""
    not_loaded: int
    """Corrections for conversations the file does not hold (not applied)."""

    @property
    def evidence(self) -> dict[str, tuple[str, ...]]:
        """Each question's evidence by query id: what `load_dialogue(..., evidence=…)` takes."""
        return {q.id: q.evidence for q in self.questions}


@dataclass(frozen=True)
class Keyed:
    """A dialogue set whose conversations ask every question scored on some key, and each key's evidence turns by
    query id (a question whose evidence names no turn on a key is scored on the other only)."""

    data: DialogueSet
    evidence: dict[str, dict[str, list[str]]]
    """Key (`ORIGINAL`, `CORRECTED`) → query id → evidence turn ids."""
    unscored: dict[str, int]
    """Key → questions left out on it: their evidence names no turn."""
    corrections: str = ""
    """What the corrections changed, and from which file (empty: no corrections)."""


def keyed_dialogue(spec: DatasetSpec, turn_format: TurnFormat = SPEAKER_CAPTIONS, errata: Path | None = None) -> Keyed:
    """The dialogue set on its original key and, with `errata`, on the corrected key too: one set of questions to
    rank, each ranking scored against both evidence lists."""
    original = load_dialogue(spec, turn_format)
    evidence = {ORIGINAL: _evidence(original)}
    if errata is None:
        return Keyed(original, evidence, {ORIGINAL: original.unscored})
    corrected = apply_errata(locomo_questions(spec), load_errata(errata))
    fixed = load_dialogue(spec, turn_format, evidence=corrected.evidence)
    evidence[CORRECTED] = _evidence(fixed)
    merged = {c.name: c for c in original.conversations}
    for conversation in fixed.conversations:
        merged[conversation.name] = (
            _union(merged[conversation.name], conversation) if conversation.name in merged else conversation
        )
    return Keyed(
        DialogueSet(original.name, original.path, original.sha256, list(merged.values()), original.unscored),
        evidence,
        {ORIGINAL: original.unscored, CORRECTED: fixed.unscored},
        f"{corrected.changed} questions changed ({corrected.answers_changed} answers, {corrected.evidence_changed} "
        f"evidence lists) by {errata}",
    )


def _evidence(data: DialogueSet) -> dict[str, list[str]]:
    return {q.id: turns for c in data.conversations for q, turns in zip(c.queries, c.relevant())}


def _union(original: EvalSet, fixed: EvalSet) -> EvalSet:
    """One conversation asking the questions of both keys (the original's first; qrels: the original's where it has
    them)."""
    assert original.conversation is not None and fixed.conversation is not None
    asked = {q.id for q in original.queries}
    extra = [q for q in fixed.queries if q.id not in asked]
    category = {**fixed.conversation.category, **original.conversation.category}
    return replace(
        original,
        queries=[*original.queries, *extra],
        qrels={**fixed.qrels, **original.qrels},
        conversation=Conversation(original.conversation.session_of, category),
    )


def load_errata(path: Path) -> list[Correction]:
    """The corrections of an `errors.json`-format file: a JSON list (or an object with an `errors` list) of objects
    with `question_id` and `correct_answer` and/or `correct_evidence`."""
    items = json_list(read_json(path), path, "errors")
    corrections = []
    for number, item in enumerate(items):
        where = f"{path} correction {number}"
        if not isinstance(item, Mapping) or not isinstance(item.get("question_id"), str):
            raise ErrataError(f"{where}: expected an object with 'question_id'")
        if "correct_answer" not in item and "correct_evidence" not in item:
            raise ErrataError(f"{where} ({item['question_id']}): gives neither 'correct_answer' nor 'correct_evidence'")
        evidence = item.get("correct_evidence")
        if evidence is not None and not isinstance(evidence, list):
            raise ErrataError(f"{where} ({item['question_id']}): 'correct_evidence' is a list of ids like D1:14")
        corrections.append(
            Correction(
                item["question_id"],
                None if item.get("question") is None else str(item["question"]),
                None if item.get("correct_answer") is None else str(item["correct_answer"]),
                None if evidence is None else tuple(e for x in evidence for e in EVIDENCE_ID.findall(str(x))),
                str(item.get("error_type", "")),
            )
        )
    return corrections


def apply_errata(questions: Sequence[LocomoQuestion], corrections: Sequence[Correction]) -> Corrected:
    """The questions with their corrections applied; raises `ErrataError` naming every correction that matches no
    question of a conversation the questions hold (or when none matches at all)."""
    matched = match_ids(questions, {c.question_id: c.question for c in corrections}, "--errata")
    by_id = {q.id: q for q in questions}
    answers = evidence = changed = 0
    for correction in corrections:
        question = matched.found.get(correction.question_id)
        if question is None:
            continue
        current = by_id[question.id]
        new = replace(
            current,
            answer=current.answer if correction.answer is None else correction.answer,
            evidence=current.evidence if correction.evidence is None else correction.evidence,
        )
        answers += new.answer != current.answer
        evidence += new.evidence != current.evidence
        changed += new != current
        by_id[question.id] = new
    return Corrected([by_id[q.id] for q in questions], answers, evidence, changed, len(matched.not_loaded))


@dataclass(frozen=True)
class Matched:
    found: dict[str, LocomoQuestion]
    """Each id's question."""
    not_loaded: list[str]
    """Ids of conversations the questions do not hold."""


def match_ids(questions: Sequence[LocomoQuestion], wanted: Mapping[str, str | None], what: str) -> Matched:
    """Each of `wanted`'s ids (the audit's `locomo_<i>_qa<n>`, or a question's own id `<conversation>/q<n>`), with
    its question's text where known, matched to one of `questions` (see the module's docstring)."""
    own = {q.id: q for q in questions}
    at_place: dict[int, list[LocomoQuestion]] = defaultdict(list)
    for question in questions:
        at_place[question.index].append(question)
    candidates: dict[str, list[LocomoQuestion]] = {}
    holds: dict[int, set[str]] = defaultdict(set)  # an audit position: the loaded conversations its ids matched
    for question_id, text in wanted.items():
        if question_id in own:
            candidates[question_id] = [own[question_id]]
            continue
        position, place = _audit_id(question_id, what)
        found = [
            q
            for q in at_place[place]
            if (_same(q.question, text) if text is not None else q.samples > 1 and q.position == position)
        ]
        if len(found) > 1:  # the canonical file asks the same question in two conversations: its position decides
            found = [q for q in found if q.samples > 1 and q.position == position] or found
        candidates[question_id] = found
        if len(found) == 1:
            holds[position].add(found[0].conversation)
    claimed: dict[str, set[int]] = defaultdict(set)
    for position, conversations in holds.items():
        if len(conversations) > 1:
            raise ErrataError(
                f"{what}: the ids of conversation {position} (locomo_{position}_qa…) match questions of several "
                f"conversations ({', '.join(sorted(conversations))}): give the file they were written for"
            )
        claimed[next(iter(conversations))].add(position)
    for conversation, positions in claimed.items():
        if len(positions) > 1:
            raise ErrataError(
                f"{what}: ids of conversations {', '.join(map(str, sorted(positions)))} all match questions of "
                f"{conversation}: they cannot all be its corrections"
            )
    canonical = {q.position: q.conversation for q in questions if q.samples > 1}  # by position in locomo10.json
    found_ids: dict[str, LocomoQuestion] = {}
    not_loaded, refused = [], []
    for question_id, found in candidates.items():
        position = _audit_id(question_id, what)[0] if question_id not in own else -1
        if len(found) == 1:
            found_ids[question_id] = found[0]
        elif found:
            refused.append(f"{question_id} matches {len(found)} questions ({', '.join(q.id for q in found)})")
        elif holds.get(position) or position in canonical:
            conversation = next(iter(holds[position])) if holds.get(position) else canonical[position]
            place = _audit_id(question_id, what)[1]
            asked = next((q.question for q in at_place[place] if q.conversation == conversation), None)
            refused.append(
                f"{question_id} ({wanted[question_id]!r}) matches no question of {conversation}: its question "
                + (f"{place} asks {asked!r}" if asked is not None else f"list has no place {place}")
            )
        else:
            not_loaded.append(question_id)
    if refused:
        shown = "; ".join(refused[:5]) + (f"; and {len(refused) - 5} more" if len(refused) > 5 else "")
        raise ErrataError(f"{what}: {len(refused)} id(s) match no single question: {shown}")
    if wanted and not found_ids:
        raise ErrataError(
            f"{what}: none of its {len(wanted)} ids matches a question of this dataset (ids like locomo_0_qa1 with the "
            "question's text, or the dataset's own ids like conv-26/q1)"
        )
    return Matched(found_ids, not_loaded)


def _audit_id(question_id: str, what: str) -> tuple[int, int]:
    match = AUDIT_ID.fullmatch(question_id)
    if match is None:
        raise ErrataError(
            f"{what}: {question_id!r} is neither an audit id (locomo_<i>_qa<n>) nor a question of this dataset"
        )
    return int(match[1]), int(match[2])


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def read_json(path: Path) -> Any:
    """A corrections or answers file's JSON; an unreadable file is an `ErrataError`."""
    try:
        return json.loads(path.read_bytes())
    except json.JSONDecodeError as error:
        raise ErrataError(f"{path}: not JSON ({error})") from None
    except OSError as error:
        raise ErrataError(f"{path}: cannot be read ({error.strerror})") from None


def json_list(data: Any, path: Path, key: str) -> list[Any]:
    """A file's list: the file is the list, or an object holding it under `key`."""
    if isinstance(data, Mapping) and isinstance(data.get(key), list):
        data = data[key]
    if not isinstance(data, list):
        raise ErrataError(f"{path}: expected a JSON list (or an object with a '{key}' list)")
    return data
