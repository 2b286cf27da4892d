"""Dialogue-memory datasets: LoCoMo and LongMemEval files that the user supplies, one memory per
conversation, one document per turn, questions judged against their evidence turns.

How a turn becomes text is explicit (`TurnFormat`), because the published setups differ: LoCoMo's
paper embeds `"speaker: text"` with image captions, others prefix the session date. Every loader
checks the format and names the file and the record it cannot read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.data.beir import DatasetFormatError
from harness.data.evalset import Conversation, EvalSet
from harness.data.spec import DatasetSpec
from harness.protocol import Document, Query

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = "adversarial"
KNOWLEDGE_UPDATE = "knowledge-update"
"""LongMemEval's category of questions about a fact that changed."""
EVIDENCE_ID = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class TurnFormat:
    """What a turn's text holds: `speaker: ` first, the session date in brackets, image captions."""

    speaker: bool = True
    date: bool = False
    captions: bool = True

    def render(self, text: str, *, speaker: str = "", date: str = "", caption: str = "") -> str:
        parts = [f"[{date}] " if self.date and date else "", f"{speaker}: " if self.speaker and speaker else "", text]
        if self.captions and caption:
            parts.append(f" [shares a photo: {caption}]")
        return "".join(parts)

    @classmethod
    def parse(cls, spec: str) -> TurnFormat:
        """`speaker,date,captions` (any subset, or `plain`) as given on the command line."""
        words = {w.strip() for w in spec.split(",") if w.strip()} - {"plain"}
        unknown = words - {"speaker", "date", "captions"}
        if unknown:
            raise ValueError(f"unknown turn format {sorted(unknown)}; use speaker, date, captions or plain")
        return cls("speaker" in words, "date" in words, "captions" in words)


SPEAKER_CAPTIONS = TurnFormat()
"""`"speaker: text [shares a photo: caption]"`, LoCoMo's own retrieval setup."""


@dataclass(frozen=True)
class DialogueSet:
    """The conversations of one file, each an `EvalSet` (docs = turns, queries = questions).

    Each set's `conversation` holds `session_of` (doc id → session id) and `category` (query id → name).
    """

    name: str
    path: Path
    sha256: str
    conversations: list[EvalSet]
    unscored: int = 0
    """Questions left out: their evidence names no turn of the conversation (LoCoMo), so they cannot be scored."""


def load_dialogue(
    spec: DatasetSpec,
    turn_format: TurnFormat = SPEAKER_CAPTIONS,
    evidence: Mapping[str, Sequence[str]] | None = None,
) -> DialogueSet:
    """`locomo:FILE` or `longmemeval:FILE` (a `.json` file, or for LoCoMo a folder of them). `evidence` replaces
    the evidence turns of LoCoMo questions by query id (the corrected key, `harness.data.errata`)."""
    if spec.kind not in ("locomo", "longmemeval"):
        raise DatasetFormatError(f"{spec}: give locomo:FILE or longmemeval:FILE")
    kind = spec.kind
    digest = hashlib.sha256()
    conversations, asked = [], 0
    for file, raw, data in _read_files(spec):
        digest.update(raw)
        try:
            if kind == "locomo":
                conversations += list(_locomo_conversations(file, data, turn_format, evidence or {}))
            else:
                conversations += list(_longmemeval_conversations(file, data, turn_format))
            asked += _questions(kind, data)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as error:  # a value of the wrong shape
            raise DatasetFormatError(f"{file}: not a {kind} file: {type(error).__name__}: {error}") from None
    if not conversations:
        raise DatasetFormatError(f"{spec.location}: no conversation with questions")
    loaded = sum(len(c.queries) for c in conversations)
    return DialogueSet(f"{kind}-{spec.location.stem}", spec.location, digest.hexdigest(), conversations, asked - loaded)


def _questions(kind: str, data: Any) -> int:
    """How many questions a file asks, before any is left out."""
    samples = data if isinstance(data, list) else [data]
    return len(samples) if kind == "longmemeval" else sum(len(sample["qa"]) for sample in samples)


def _read_files(spec: DatasetSpec) -> Iterator[tuple[Path, bytes, Any]]:
    """Each `.json` file of a dataset (the file, or a folder's files by name): its path, bytes and JSON."""
    path = spec.location
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise DatasetFormatError(f"{path}: no such file (or no .json files in this folder)")
    for file in files:
        raw = file.read_bytes()
        try:
            yield file, raw, json.loads(raw)
        except json.JSONDecodeError as error:
            raise DatasetFormatError(f"{file}: not JSON ({error})") from None


@dataclass(frozen=True)
class LocomoQuestion:
    """One LoCoMo question with its key: where it stands (its conversation, that sample's position in its file,
    the file's sample count, its place in the `qa` list) and its answer, evidence and category code."""

    conversation: str
    position: int
    samples: int
    index: int
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int

    @property
    def id(self) -> str:
        """The question's query id, as the dialogue sets name it."""
        return f"{self.conversation}/q{self.index}"

    @property
    def category_name(self) -> str:
        return LOCOMO_CATEGORIES.get(self.category, str(self.category))


def locomo_questions(spec: DatasetSpec) -> list[LocomoQuestion]:
    """Every question of a LoCoMo file (or folder), in file order, with its answer key; category 5 questions
    (no answer in the dialogue) keep their `adversarial_answer` as their answer."""
    if spec.kind != "locomo":
        raise DatasetFormatError(f"{spec}: answers are scored on locomo:FILE")
    questions = []
    for file, _, data in _read_files(spec):
        samples = data if isinstance(data, list) else [data]
        for number, sample in enumerate(samples):
            if not isinstance(sample, Mapping) or not isinstance(sample.get("qa"), list):
                raise DatasetFormatError(f"{file} sample {number}: a LoCoMo sample is an object with 'qa'")
            name = _sample_name(file, sample, number, len(samples))
            for index, qa in enumerate(sample["qa"]):
                if not isinstance(qa, Mapping) or "question" not in qa:
                    raise DatasetFormatError(f"{file} sample {number} qa {index}: expected an object with 'question'")
                answer = qa.get("answer", qa.get("adversarial_answer", ""))
                evidence = tuple(e for item in qa.get("evidence", []) for e in EVIDENCE_ID.findall(str(item)))
                code = qa.get("category")
                questions.append(
                    LocomoQuestion(
                        name,
                        number,
                        len(samples),
                        index,
                        str(qa["question"]),
                        str(answer),
                        evidence,
                        code if isinstance(code, int) else -1,
                    )
                )
    return questions


def _sample_name(file: Path, sample: Mapping[str, Any], number: int, samples: int) -> str:
    return str(sample.get("sample_id", f"{file.stem}" + (f"-{number}" if samples > 1 else "")))


def _locomo_conversations(
    file: Path, data: Any, fmt: TurnFormat, corrected: Mapping[str, Sequence[str]]
) -> Iterator[EvalSet]:
    """LoCoMo: a list of samples (`locomo10.json`) or one sample; a sample holds `conversation`
    (or the conversation's keys at its top level) and `qa`. `corrected`: evidence by query id."""
    samples = data if isinstance(data, list) else [data]
    for number, sample in enumerate(samples):
        where = f"{file} sample {number}"
        if not isinstance(sample, Mapping) or "qa" not in sample:
            raise DatasetFormatError(f"{where}: a LoCoMo sample is an object with 'qa' and the sessions")
        conversation = sample.get("conversation", sample)
        name = _sample_name(file, sample, number, len(samples))
        docs, session_of = _locomo_turns(conversation, fmt, where)
        known = {d.id for d in docs}
        queries, qrels, category = [], {}, {}
        for index, qa in enumerate(sample["qa"]):
            if not isinstance(qa, Mapping) or "question" not in qa:
                raise DatasetFormatError(f"{where} qa {index}: expected an object with 'question' and 'evidence'")
            query_id = f"{name}/q{index}"
            cited = corrected.get(query_id, qa.get("evidence", []))
            evidence = [e for item in cited for e in EVIDENCE_ID.findall(str(item)) if e in known]
            if not evidence:
                continue  # a question whose evidence names no turn cannot be scored
            queries.append(Query(query_id, str(qa["question"])))
            qrels[query_id] = dict.fromkeys(evidence, 1.0)
            code = qa.get("category")
            category[query_id] = LOCOMO_CATEGORIES.get(code, str(code)) if isinstance(code, int) else str(code)
        if queries:
            yield EvalSet(name, docs, queries, qrels, conversation=Conversation(session_of, category))


def _locomo_turns(
    conversation: Mapping[str, Any], fmt: TurnFormat, where: str
) -> tuple[list[Document], dict[str, str]]:
    sessions = sorted(
        (int(key.removeprefix("session_")), key)
        for key in conversation
        if re.fullmatch(r"session_\d+", key) and isinstance(conversation[key], list)
    )
    if not sessions:
        raise DatasetFormatError(f"{where}: no session_<n> lists of turns")
    docs, session_of = [], {}
    for number, key in sessions:
        date = str(conversation.get(f"{key}_date_time", ""))
        for position, turn in enumerate(conversation[key]):
            try:
                turn_id, text, speaker = str(turn["dia_id"]), str(turn["text"]), str(turn["speaker"])
            except (KeyError, TypeError):
                raise DatasetFormatError(f"{where} {key} turn {position}: needs dia_id, speaker and text") from None
            text = fmt.render(text, speaker=speaker, date=date, caption=str(turn.get("blip_caption") or ""))
            docs.append(Document(turn_id, text, metadata=turn_metadata(f"S{number}", date, speaker)))
            session_of[turn_id] = f"S{number}"
    return docs, session_of


def _longmemeval_conversations(file: Path, data: Any, fmt: TurnFormat) -> Iterator[EvalSet]:
    """LongMemEval (`_s`, `_m`, `_oracle`): one haystack per question; evidence is the turns with
    `has_answer`, or the answer sessions when no turn is marked. Abstention questions (`_abs`)
    keep their category so they are reported apart. A knowledge-update question whose marked turns lie in
    several dated sessions has them as versions, by session date: the latest is current."""
    if not isinstance(data, list):
        raise DatasetFormatError(f"{file}: LongMemEval files are a JSON list of questions")
    for index, item in enumerate(data):
        where = f"{file} question {index}"
        try:
            question_id, question = str(item["question_id"]), str(item["question"])
            sessions, session_ids = item["haystack_sessions"], item["haystack_session_ids"]
            dates = item.get("haystack_dates") or [""] * len(sessions)
            answer_sessions = set(map(str, item.get("answer_session_ids", [])))
        except (KeyError, TypeError):
            raise DatasetFormatError(
                f"{where}: needs question_id, question, haystack_sessions and haystack_session_ids"
            ) from None
        docs, session_of, marked = [], {}, []
        session_time: dict[str, float] = {}
        for session_id, date, turns in zip(map(str, session_ids), dates, sessions):
            started = _longmemeval_time(str(date))
            if started is not None:
                session_time[session_id] = started
            for position, turn in enumerate(turns):
                if not isinstance(turn, Mapping) or "content" not in turn:
                    raise DatasetFormatError(f"{where} session {session_id} turn {position}: needs role and content")
                turn_id = f"{session_id}#{position}"
                role = str(turn.get("role", ""))
                text = fmt.render(str(turn["content"]), speaker=role, date=str(date))
                at = None if started is None else started + 60.0 * position
                docs.append(Document(turn_id, text, metadata=turn_metadata(session_id, str(date), role, at)))
                session_of[turn_id] = session_id
                if turn.get("has_answer"):
                    marked.append(turn_id)
        evidence = marked or [d.id for d in docs if session_of[d.id] in answer_sessions]
        category = str(item.get("question_type", "unknown")) + ("-abstention" if question_id.endswith("_abs") else "")
        if not docs:
            raise DatasetFormatError(f"{where}: an empty haystack")
        qrels = {question_id: dict.fromkeys(evidence, 1.0)} if evidence else {question_id: {}}
        versions = _versions(marked, session_of, session_time) if category == KNOWLEDGE_UPDATE else ()
        yield EvalSet(
            question_id,
            docs,
            [Query(question_id, question)],
            qrels,
            conversation=Conversation(
                session_of,
                {question_id: category},
                {question_id: versions} if versions else {},
                _longmemeval_time(str(item.get("question_date", ""))),
            ),
        )


def _versions(
    marked: list[str], session_of: Mapping[str, str], session_time: Mapping[str, float]
) -> tuple[tuple[str, ...], ...]:
    """The marked turns grouped by session, sessions by date (none unless at least two dated sessions)."""
    by_session: dict[str, list[str]] = {}
    for turn in marked:
        by_session.setdefault(session_of[turn], []).append(turn)
    if len(by_session) < 2 or not all(s in session_time for s in by_session):
        return ()
    return tuple(tuple(by_session[s]) for s in sorted(by_session, key=lambda s: session_time[s]))


def _longmemeval_time(date: str) -> float | None:
    """A LongMemEval date ("2023/05/20 (Sat) 02:21") as epoch seconds (UTC), or None."""
    try:
        return (
            datetime.strptime(re.sub(r"\s*\(\w+\)", "", date).strip(), "%Y/%m/%d %H:%M").replace(tzinfo=UTC).timestamp()
        )
    except ValueError:
        return None


def unanswerable(category: str) -> bool:
    """Questions with no answer in the memory (LoCoMo's adversarial, LongMemEval's abstention)."""
    return category == ADVERSARIAL or category.endswith("-abstention")


def turn_metadata(session: str, date: str, speaker: str, timestamp: float | None = None) -> dict[str, str | float]:
    """A turn's session, which is also its episode (systems that take episodes get it), its date, its
    speaker (the engine's `speaker_key`) and, where known, its time (epoch seconds)."""
    return (
        {"session": session, "episode": session}
        | ({"date": date} if date else {})
        | ({"speaker": speaker} if speaker else {})
        | ({"timestamp": timestamp} if timestamp is not None else {})
    )
