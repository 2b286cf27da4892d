"""Entity extraction (every pattern lives here) and the exact-match entity index.

Entities are normalised to lower case. Patterns are generic kinds of names an agent's memory
refers to; none names a benchmark's content:

- e-mail addresses and URLs;
- paths (``src/app/main.py``, ``/etc/hosts``) and file names with an extension (``report.pdf``);
- identifiers mixing letters and digits (``INC-20931``, ``XK4471``, ``v2.3.1`` is not one: it starts lower-case);
- capitalised multi-word phrases (``Maria Lopez``, ``Project Falcon``), without leading
  function words (``The``, ``What``, ``Where`` …) so a sentence-initial word is never an entity.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import defaultdict

_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
_URL = r"(?:https?|ftp)://[^\s<>\"')\]]+"
_PATH = r"(?:~|\.{1,2})?(?:/[\w.-]+)+/?|[\w.-]+(?:/[\w.-]+)+"
_FILE = r"[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}"
_CODE = r"[A-Z][A-Z0-9]*(?:[-_][A-Z0-9]+)*(?:[-_]?\d+)[A-Z0-9]*(?:[-_][A-Z0-9]+)*"
_WORD = r"[A-Z](?:[a-z]|['’][A-Z])[\w'’-]*"
_PHRASE = rf"{_WORD}(?:\s+(?:(?:of|de|van|von|la|le|da|del|the)\s+)?{_WORD})+"

_KINDS = {
    "email": (_EMAIL, re.compile("@")),
    "url": (_URL, re.compile("://")),
    "path": (rf"(?<![\w@]){_PATH}", re.compile("/")),
    "file": (rf"(?<![\w@/]){_FILE}\b", re.compile(r"\.[A-Za-z]")),
    "code": (rf"\b{_CODE}\b", re.compile(r"[A-Z][A-Z0-9_-]*\d")),
    "phrase": (rf"\b{_PHRASE}", re.compile("")),
}
"""Each kind's pattern, in the order the alternation tries them, and a pattern that every text holding a
match of it matches too (a cheap test that rules the kind out)."""
_MAY_HOLD_ENTITY = re.compile(r"[A-Z@/.]")
_FUNCTION_WORDS = frozenset(
    """a an the this that these those what which who whom whose where when why how is are was were do does did
    can could should would will shall may might must has have had i you he she it we they my your his her its our
    their in on at of for from to by with and or but if then so tell show find give list please remember
    recall""".split()
)
_TRAILING = ".,;:!?)]}'\"’"


def extract_entities(text: str) -> frozenset[str]:
    """The normalised entities mentioned in `text`."""
    if not _MAY_HOLD_ENTITY.search(text):
        return frozenset()  # every pattern needs an upper-case letter, "@", "/" or "."
    found: set[str] = set()
    for match in _pattern(tuple(kind for kind, (_, needed) in _KINDS.items() if needed.search(text))).finditer(text):
        kind = match.lastgroup
        value = match.group().rstrip(_TRAILING)
        if kind == "phrase":
            value = _strip_function_words(value)
            if _at_sentence_start(text, match.start()) and value.count(" ") >= 2:
                found.add(value.split(" ", 1)[1].lower())  # "Yesterday Maria Lopez" → also "maria lopez"
        elif kind == "file" and not _looks_like_file(value):
            continue
        if value:
            found.add(value.lower())
    return frozenset(map(sys.intern, found))  # one string per entity, however many cells and scopes mention it


@functools.cache
def _pattern(kinds: tuple[str, ...]) -> re.Pattern[str]:
    """The alternation of these kinds' patterns. A text is matched only against the kinds it can hold (a
    path needs a "/", a file name a "." before a letter): the others could not match anywhere in it, so
    leaving them out changes no match, and the path and file patterns cost most of the time on prose."""
    return re.compile("|".join(f"(?P<{kind}>{_KINDS[kind][0]})" for kind in kinds))


def _at_sentence_start(text: str, position: int) -> bool:
    return not text[:position].strip() or text[:position].rstrip()[-1] in ".!?\n"


def _strip_function_words(phrase: str) -> str:
    """Drop leading function words and a trailing possessive; keep only multi-word remainders."""
    words = phrase.split()
    while words and words[0].lower() in _FUNCTION_WORDS:
        words.pop(0)
    if words:
        words[-1] = re.sub(r"['’]s$", "", words[-1])
    return " ".join(words) if len(words) >= 2 else ""


def _looks_like_file(value: str) -> bool:
    """A name with an extension, not a sentence's last word glued to the next ("end.Then")."""
    stem, _, extension = value.rpartition(".")
    return bool(stem) and (extension.islower() or extension.isupper()) and not stem.endswith(".")


class EntityIndex:
    """Exact-match index entity → rows, per scope: a scoped lookup reads its own scope's rows alone."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, set[int]]] = defaultdict(dict)
        """Entity → scope code → the rows of that scope mentioning it."""
        self._entities_of: dict[int, tuple[int, frozenset[str]]] = {}

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, row: int, entities: frozenset[str], scope: int = 0) -> None:
        if entities:
            self._entities_of[row] = (scope, entities)
            for entity in entities:
                self._rows[entity].setdefault(scope, set()).add(row)

    def remove(self, row: int) -> None:
        scope, entities = self._entities_of.pop(row, (0, frozenset()))
        for entity in entities:
            by_scope = self._rows[entity]
            by_scope[scope].discard(row)
            if not by_scope[scope]:
                del by_scope[scope]
                if not by_scope:
                    del self._rows[entity]

    def rows(self) -> set[int]:
        """Every row that has entities indexed."""
        return set(self._entities_of)

    def scope_of(self, row: int) -> int | None:
        """The scope a row with entities was indexed under (None: it has none)."""
        held = self._entities_of.get(row)
        return None if held is None else held[0]

    def matches(self, entities: frozenset[str], scope: int | None = None) -> dict[int, int]:
        """Rows (of `scope`; None: of any) mentioning any of `entities`, with how many of them each mentions."""
        counts: dict[int, int] = defaultdict(int)
        for entity in entities:
            by_scope = self._rows.get(entity, {})
            for rows in by_scope.values() if scope is None else [by_scope.get(scope, set())]:
                for row in rows:
                    counts[row] += 1
        return dict(counts)
