"""No docstring or comment of the engine, the harness or the baselines quotes a measured figure.

A timing, a recall from an experiment or a constant's old value goes stale with the next commit: it belongs in the
commit message that chose the constant, or in the report that measures it. A docstring may restate what the code
itself says (a constant's value, a bound, an example of output in quotes).

The rule. A figure (a number, or a range of two) in a docstring or comment is measured when
- it carries a unit of time, throughput or memory: `ns µs us ms s sec seconds min minutes h hours`, `KB MB GB`
  (and `KiB`…), `cells/s` or any `…/s`, `QPS`;
- or it is a ratio written with × or x against the number: "3.7×", "1.02x" (a product, "1,000 × 384", is not);
- or it follows a metric's name with at least two decimals: "recall 0.977", "recall@10 0.960", "median 0.038";
- or two or more of them, each with at least three significant digits, stand in a list: "0.6794, 0.6873", "0.970 /
  0.977";
- or it is a count of a thousand or more written with separators, a data set's or a run's size ("51,551 passages"),
  unless it is a factor of a product ("1,000 × 384");
unless the module's own code holds each of its numbers as a literal (a constant restated: `HEARTBEAT = 30.0`
read as "30 s", `MARGIN = 0.1` as "10 %"), or a bound comes right before it ("at least 25×", "up to 5×", "±10 %").
Whatever the code holds, a figure is measured when it follows a word that reports or compares one ("was 3",
"gives 8", "took 0.6 ms", "0.564 vs 0.656", "against 1.9", "moved by 28 %"), an arrow ("0.60 → 1.22"), or an
approximation ("about 65 MB", "~1 ms", "about 1%"): history and measurements, never definitions.
Text in double quotes or backticks is an example or a name, never a figure.
"""

import ast
import io
import itertools
import math
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_NUMBER = r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\.\d)"
_FIGURE = rf"{_NUMBER}(?:\s?[–-]\s?{_NUMBER})?"
_UNIT = r"(?:ns|µs|μs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hours?|[KMGT]i?B|kB|[A-Za-z]*/s|QPS|qps)(?![\w/])"
_BOUND = (
    r"(?:\b(?:at least|at most|up to|more than|less than|fewer than|no more than|below|above|under|over|within|"
    r"beyond|every)|[≥≤<>±])\s*$"
)
_METRIC = r"\b(?:recall|precision|nDCG|NDCG|MRR|ARI|NMI|F1|accuracy|p50|p95|p99|median|mean|CI|log-sds?)(?:@\d+)?"
_REPORTING = (
    r"\b(?:was|were|went|took|gave|gives?|gained|cost|costs|spent|saved|reached|measured|moved|against|vs\.?|versus)"
)
_APPROXIMATELY = r"(?:\b(?:about|around|roughly|nearly)\s+|[~≈]\s*)"

WITH_UNIT = re.compile(rf"({_FIGURE})\s?{_UNIT}")
RATIO = re.compile(rf"({_FIGURE})[×x](?![\w\d])")
METRIC_DECIMAL = re.compile(rf"{_METRIC}\s*(?:[:=]|of|is|at)?\s*((?<![\w.])\d+\.\d{{2,}}(?![\w.]))")
REPORTED = re.compile(rf"{_REPORTING}\s+(?:(?:about|roughly|nearly|only|up to|by)\s+|[~≈]\s*)*({_FIGURE})")
ARROW = re.compile(rf"({_FIGURE})\s*(?:→|->)\s*{_NUMBER}")
APPROXIMATE = re.compile(rf"{_APPROXIMATELY}({_FIGURE})\s?(?:%|{_UNIT})")
COUNT = re.compile(r"(?<![\w.×])(?<!\d,)(?<!× )(\d{1,3}(?:,\d{3})+(?:\.\d+)?)(?!\w|[.,]\d|\s?×)")
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\w]|\.\d)")
LIST_SEPARATOR = re.compile(r"\s*(?:,\s*(?:and|or)?|/|–|-|and|or)\s*")
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')


def numbers(figure: str) -> list[float]:
    """The values a figure (a number or a range) states."""
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", figure)]


def significant_digits(decimal: str) -> int:
    return len(decimal.replace(".", "").lstrip("0"))


def held_by_the_code(figure: str, literals: set[float]) -> bool:
    """Every number of the figure is a literal of the module, as written or as a percentage or a unit apart."""
    return all(
        any(math.isclose(value * scale, literal) for literal in literals for scale in (1, 1e-2, 1e-3, 1e3))
        for value in numbers(figure)
    )


def measured_figures(text: str, literals: set[float]) -> list[tuple[int, str]]:
    """(offset, figure) of each measured figure of one docstring or comment, by the rule of this module's
    docstring."""
    text = QUOTED.sub(lambda m: " " * len(m.group()), text)
    found = []
    for pattern in (WITH_UNIT, RATIO, METRIC_DECIMAL, COUNT):
        for m in pattern.finditer(text):
            bounded = re.search(_BOUND, text[: m.start(1)]) is not None
            if not bounded and not held_by_the_code(m.group(1), literals):
                found.append((m.start(), m.group()))
    for pattern in (REPORTED, ARROW, APPROXIMATE):
        found += [(m.start(), m.group()) for m in pattern.finditer(text)]
    precise = [m for m in DECIMAL.finditer(text) if significant_digits(m.group()) >= 3]
    for a, b in itertools.pairwise(precise):
        listed = LIST_SEPARATOR.fullmatch(text[a.end() : b.start()]) is not None
        if listed and not held_by_the_code(f"{a.group()} {b.group()}", literals):
            found.append((a.start(), text[a.start() : b.end()]))
    return _merged(sorted(found), text)


def _merged(found: list[tuple[int, str]], text: str) -> list[tuple[int, str]]:
    """Overlapping figures as one: the text they span together."""
    spans: list[tuple[int, int]] = []
    for start, figure in found:
        end = start + len(figure)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return [(start, text[start:end]) for start, end in spans]


def docstrings_and_comments(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string that stands as a statement (docstrings of modules, classes,
    functions and attributes)."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def constants(source: str) -> set[float]:
    """The numbers a module states as constants: in the values assigned at module or class level, and in the
    defaults of its functions' parameters (not the 1 of `i + 1`)."""
    tree = ast.parse(source)
    values: list[ast.AST] = []
    for body in [tree.body] + [node.body for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]:
        values += [node.value for node in body if isinstance(node, ast.Assign | ast.AnnAssign) and node.value]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            values += [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
    return {
        float(node.value)
        for value in values
        for node in ast.walk(value)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool)
    }


def figures_in(path: Path) -> list[str]:
    """`file:line: figure` for every measured figure in the docstrings and comments of one module."""
    source = path.read_text()
    literals = constants(source)
    return [
        f"{path.relative_to(ROOT)}:{line + text.count(chr(10), 0, offset)}: {' '.join(figure.split())}"
        for line, text in docstrings_and_comments(source)
        for offset, figure in measured_figures(text, literals)
    ]


PACKAGES = ["harness", "baselines", "reference"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_docstring_or_comment_quotes_a_measured_figure(package: str) -> None:
    found = [hit for path in sorted((ROOT / package).rglob("*.py")) for hit in figures_in(path)]
    assert found == [], "measured figures belong in commit messages and generated reports:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "took 32 ms per 600-row split here",
        "a scan took 12.9 ns a row",
        "ingest 1,082 against 1,914 cells/s with none",
        "flat-numpy, whose 79 MB never stays in cache, read 3.0–3.5 ms in all four",
        "recall@10 0.960",
        "0.6794, 0.6873, 0.6875 and 0.6916",
        "the same 0.970 / 0.977 / 0.987 twice",
        "the default was 3",
        "0.564 vs 0.656",
        "the best-of-passes ratios were 1.32 (1.28–1.33) and 1.24",
        "a speed-up of 3.7×, then 1.02x in the next run",
        "moved by up to 28 % between identical runs",
        "flat Chroma's doubled (0.60 → 1.22, every pass)",
        "a Chroma query per group costs ~1 ms",
        "about 1% more median latency",
        "# NumPy's indexed increment took 1.2 µs",
        "at least this many passages (the BEAM chats hold 51,551)",
        "estimated last at 4,000 of its 6,642 cells",
        "the cut gives 8 concepts",
    ],
)
def test_the_rule_finds_a_measured_figure(text: str) -> None:
    assert measured_figures(text, literals={1.0, 3.0, 5.0}) != []


@pytest.mark.parametrize(
    ("text", "literals"),
    [
        ("Default k = 5.", {5.0}),
        ("the first 60·k cells", {60.0}),
        ("searches filtered to 1 % and 99 % selectivity", set()),
        ("measurements over sizes spanning at least 25× (a claim about growth needs the range)", set()),
        ("a line every 30 s while a step runs", set()),
        ("A slowdown smaller than 0.05 ms is jitter", {0.05}),
        ("an indifference zone of ±10 %, its half ±5 %", set()),
        ('A speed ratio in words: "3.1× faster" or "2.5× slower"; a span as "1 h 5 min"', set()),
        ("the 95% interval is the 2.5th–97.5th percentile", set()),
        ("Spread 0.8 gives a cosine of about 0.78 to its own centre", set()),
        ("nlist = 4·sqrt(N), a block of 1,000 × 384 float32, 128 × the sum of the codes", set()),
        ("the recall target of `target_recall` 0.97, recall@10 ≥ 0.95", set()),
        ("Python 3.11, Chroma 1.5.9, e.g. \\x1b, `p50 (ms)`", set()),
        ("recall against exact search, measured at 3 sizes", set()),
        ("after more than 20 writes, or 100,000 rows written", {20.0, 100_000.0}),
        ("at most 4,096 groups, each a block of 384 × 1,024 float32", set()),
    ],
)
def test_the_rule_lets_a_definition_pass(text: str, literals: set[float]) -> None:
    assert measured_figures(text, literals) == []


def test_docstrings_and_comments_are_read_with_their_lines() -> None:
    source = '"""Module: took 3 ms."""\nX = 1  # was 2\n\n\ndef f():\n    """A\n    line: 5 MB."""\n'
    assert sorted(docstrings_and_comments(source)) == [
        (1, "Module: took 3 ms."),
        (2, "# was 2"),
        (6, "A\n    line: 5 MB."),
    ]
