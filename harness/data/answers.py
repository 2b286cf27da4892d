"""Answer files: a system's answers to a LoCoMo file's questions, to be scored without re-running the system.

Two forms: the audit's (dial481/locomo-audit), a JSON list of objects with `question_id` (`locomo_<i>_qa<n>`, or
the dataset's own `<conversation>/q<n>`), `generated_answer` and optionally `question`; or one JSON object mapping
question ids to answers. Ids are matched to questions as corrections are (`errata.match_ids`); an id that matches
no question of a conversation the dataset holds is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.data.dialogue import LocomoQuestion
from harness.data.errata import ErrataError, json_list, match_ids, read_json


def load_answers(path: Path, questions: Sequence[LocomoQuestion], what: str = "--answers") -> dict[str, str]:
    """The file's answers by the dataset's question id (`LocomoQuestion.id`)."""
    data = read_json(path)
    given: dict[str, tuple[str | None, str]] = {}
    if isinstance(data, Mapping) and data and all(isinstance(v, str) for v in data.values()):
        given = {str(key): (None, answer) for key, answer in data.items()}
    else:
        for number, item in enumerate(json_list(data, path, "answers")):
            if not isinstance(item, Mapping) or not isinstance(item.get("question_id"), str):
                raise ErrataError(
                    f"{path} answer {number}: expected an object with 'question_id' and 'generated_answer'"
                )
            if "generated_answer" not in item:
                raise ErrataError(f"{path} answer {number} ({item['question_id']}): no 'generated_answer'")
            question = item.get("question")
            given[item["question_id"]] = (None if question is None else str(question), str(item["generated_answer"]))
    matched = match_ids(questions, {key: text for key, (text, _) in given.items()}, f"{what} {path}")
    return {question.id: given[key][1] for key, question in matched.found.items()}
