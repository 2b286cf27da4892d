import re
from datetime import UTC, datetime

import numpy as np
import pytest

from reference import CellularMemory
from reference.common.errors import DimensionMismatchError, InvalidInputError
from reference.common.validation import (
    MAX_DEPTH,
    MAX_EPISODE_CHARS,
    MAX_INTERVAL_S,
    MAX_SCOPE_CHARS,
    MAX_TEXT_CHARS,
    check_episode,
    check_ids,
    check_importance,
    check_interval,
    check_json_object,
    check_metadata,
    check_new_ids,
    check_result_count,
    check_same_length,
    check_scope,
    check_text,
    check_texts,
    check_texts_per_item,
    check_timestamp,
    per_item,
    unit_rows,
    unit_vector,
)


@pytest.mark.parametrize(
    "bad", ["", "   \n\t", None, 3, [""], ["ok", 5], [], ("a", b"bytes"), ["x" * (MAX_TEXT_CHARS + 1)], ["nul\x00byte"]]
)
def test_bad_texts_are_rejected(bad):
    with pytest.raises(InvalidInputError):
        check_texts(bad)


def test_unicode_and_control_characters_are_fine():
    assert check_texts(["héllo wörld ✓ \u202e\x07"]) == ["héllo wörld ✓ \u202e\x07"]


@pytest.mark.parametrize(
    "bad",
    [[[np.nan, 1.0]], [[np.inf, 1.0]], [[0.0, 0.0]], [[]], [["a", "b"]], [[1.0], [1.0, 2.0]]],
)
def test_bad_vectors_are_rejected(bad):
    with pytest.raises(InvalidInputError):
        unit_rows(bad, dim=None)


def test_wrong_dimension_has_its_own_error():
    with pytest.raises(
        DimensionMismatchError, match="dimension 3 but this memory holds 4-d vectors; use the same encoder"
    ):
        unit_rows(np.ones((2, 3)), dim=4)


def test_rows_are_normalised_even_when_huge_or_tiny():
    rows = unit_rows(np.array([[3.0, 4.0], [1e300, 1e300], [1e-300, 0.0]]), dim=2)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(rows[0], [0.6, 0.8], rtol=1e-6)
    fast = unit_rows(np.array([[3.0, 4.0], [0.0, 0.5]], dtype=np.float32), dim=2)  # float32 takes one pass
    np.testing.assert_allclose(fast, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)
    for extreme, unit in (([1e20, 1e20], [0.5**0.5, 0.5**0.5]), ([3e-20, 4e-20], [0.6, 0.8])):  # squares leave float32
        np.testing.assert_allclose(unit_rows(np.array([extreme], dtype=np.float32), dim=2), [unit], rtol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True, None])
def test_k_must_be_a_positive_integer(bad):
    with pytest.raises(InvalidInputError, match=r"^k must be a positive integer, got "):
        check_result_count(bad)


@pytest.mark.parametrize("seconds", [0.5, 60, MAX_INTERVAL_S])
def test_a_sleep_interval_in_range_is_taken_as_seconds(seconds):
    assert check_interval(seconds) == float(seconds) and isinstance(check_interval(seconds), float)


@pytest.mark.parametrize("bad", [True, "1", None, 0, -1, float("nan"), float("inf"), 2 * MAX_INTERVAL_S])
def test_a_bad_sleep_interval_is_refused_with_its_range(bad):
    with pytest.raises(InvalidInputError, match=r"the sleep interval must be a number of seconds in \(0, "):
        check_interval(bad)


def test_an_episode_name_is_bounded_and_never_looks_inferred():
    assert check_episode("x" * MAX_EPISODE_CHARS) == "x" * MAX_EPISODE_CHARS
    for bad in ("x" * (MAX_EPISODE_CHARS + 1), "@session"):
        with pytest.raises(InvalidInputError, match=f"at most {MAX_EPISODE_CHARS} characters not starting with @"):
            check_episode(bad)
    for bad in (" ", "x\ud800"):
        with pytest.raises(InvalidInputError, match=r"^episode"):
            check_episode(bad)


@pytest.mark.parametrize("value", [0, 1, 0.5])
def test_importance_takes_the_closed_unit_interval(value):
    assert check_importance(value) == value and isinstance(check_importance(value), float)


@pytest.mark.parametrize("bad", [True, "0.5", -0.01, 1.01, float("nan")])
def test_bad_importance_is_refused(bad):
    with pytest.raises(InvalidInputError, match=r"importance must be a number in \[0, 1\], got "):
        check_importance(bad)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({1: "x"}, "^metadata has the key 1; JSON keys are strings$"),
        (["x"], "^metadata must be a mapping with string keys, got list$"),
        ({"x": float("nan")}, r"^metadata\['x'\] is nan; JSON numbers are finite$"),
        ({"x": object()}, r"^metadata\['x'\] holds a object; only what JSON holds can be stored$"),
        ({"x": "\ud800"}, r"^metadata\['x'\] holds '\\ud800', which UTF-8 cannot encode$"),
        ({"n": 10**400}, r"^metadata\['n'\] is an integer outside the 64-bit range a store holds$"),
        ({"n": [{"m": -(2**63) - 1}]}, r"^metadata\['n'\]\[0\]\['m'\] is an integer outside the 64-bit range"),
        ({"n": {2: 3}}, r"^metadata\['n'\] has the key 2; JSON keys are strings$"),
        ({"n": {"m": {1}}}, r"^metadata\['n'\]\['m'\] holds a set"),
    ],
)
def test_bad_metadata_is_refused(bad, message):
    with pytest.raises(InvalidInputError, match=message):
        check_metadata(bad)


def test_a_json_object_holds_any_integer_and_nests_as_deep_as_metadata():
    deep: dict = {"leaf": 1}
    for _ in range(MAX_DEPTH - 1):
        deep = {"a": deep}
    value = {"n": 2**64, "m": -(10**40), "t": (1, "x"), "deep": deep["a"]}
    assert check_json_object(value, what="value") == {**value, "t": [1, "x"]}
    assert check_json_object(deep, what="value") == deep  # MAX_DEPTH levels, the value the first
    with pytest.raises(InvalidInputError, match=rf"^value(\['a'\]){{{MAX_DEPTH}}} nests deeper than {MAX_DEPTH}"):
        check_json_object({"a": deep}, what="value")
    with pytest.raises(InvalidInputError, match=r"^value\['x'\] is inf; JSON numbers are finite$"):
        check_json_object({"x": float("inf")}, what="value")
    with pytest.raises(InvalidInputError, match=r"^value must be a mapping with string keys, got list$"):
        check_json_object([1], what="value")


def test_a_bad_text_among_per_item_texts_is_named_by_its_argument():
    assert check_texts_per_item("context", "[May 2023]", 2) == ["[May 2023]"] * 2
    assert check_texts_per_item("context", None, 2) == ["", ""]
    with pytest.raises(InvalidInputError, match=r"^context holds"):
        check_texts_per_item("context", "\ud800", 2)
    with pytest.raises(InvalidInputError, match="context"):
        check_texts_per_item("context", ["[May 2023]", ""], 2)
    with pytest.raises(InvalidInputError, match=r"^context"):
        check_texts_per_item("context", ["[May 2023]"], 2)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "2023-05-08", True, None, 10**400, -(10**400), 1e300])
def test_a_bad_timestamp_is_refused_with_what_a_timestamp_is(bad):
    with pytest.raises(InvalidInputError, match=r"^timestamps must be datetimes or finite epoch seconds"):
        check_timestamp(bad)


@pytest.mark.parametrize("moment", [datetime.min, datetime.max, datetime.min.replace(tzinfo=UTC)])
def test_a_datetime_at_the_edge_of_the_calendar_is_a_number_or_a_typed_error(moment):
    try:
        assert isinstance(check_timestamp(moment), float)
    except InvalidInputError as error:
        assert "timestamp" in str(error)


@pytest.mark.parametrize(
    "vector",
    [
        np.array([3.0, 4.0]),
        np.array([3, 4]),
        [3.0, 4.0],
        np.array([3e30, 4e30], np.float32),
        np.array([3e-30, 4e-30], np.float32),
        np.array([3.0, 0.0, 4.0])[::2],
    ],
)
def test_a_query_vector_comes_back_as_a_float32_unit_vector(vector):
    unit = unit_vector(vector, dim=2)
    assert unit.dtype == np.float32 and unit.shape == (2,)
    np.testing.assert_allclose(unit, [0.6, 0.8], rtol=1e-6)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        (
            np.array([1.0, 2.0, 3.0]),
            DimensionMismatchError,
            r"^query vector have dimension 3 but this memory holds 2-d",
        ),
        (np.array([0.0, 0.0]), InvalidInputError, r"^query vector\[0\] is a zero vector; it has no direction$"),
        (np.array([np.nan, 1.0]), InvalidInputError, r"^query vector\[0\] contains NaN or infinity$"),
        (np.array([np.inf, 1.0]), InvalidInputError, r"^query vector\[0\] contains NaN or infinity$"),
        (np.array([1.0, np.nan], np.float32), InvalidInputError, r"^query vector\[0\] contains NaN or infinity$"),
        (np.zeros((0, 2)), InvalidInputError, r"^query vector must be a non-empty 2-D array, got shape \(0, 2\)$"),
        (["a", "b"], InvalidInputError, r"^query vector must be numeric arrays of one length"),
        (np.eye(2), InvalidInputError, r"^query vector must be one vector, got 2 rows \(shape \(2, 2\)\)$"),
        ([[3.0, 4.0], [1.0, 0.0]], InvalidInputError, r"^query vector must be one vector, got 2 rows"),
    ],
)
def test_a_bad_query_vector_is_refused_with_what_is_wrong(bad, error, message):
    with pytest.raises(error, match=message):
        unit_vector(bad, dim=2)


def test_an_update_with_several_rows_for_one_vector_is_refused_and_changes_nothing(mock_encoder):
    with CellularMemory(encoder=mock_encoder) as memory:
        [cell] = memory.add("Alice lives in Lisbon")
        before = memory.get(cell).vector.copy()
        rows = np.stack([mock_encoder.encode(["something else"])[0], before])
        with pytest.raises(InvalidInputError, match=r"^vector must be one vector, got 2 rows"):
            memory.update(cell, vector=rows)
        np.testing.assert_array_equal(memory.get(cell).vector, before)
        assert memory.update(cell, vector=rows[:1]).vector.shape == before.shape  # one row is one vector


def test_rows_are_checked_one_by_one_and_named_by_position():
    rows = np.array([[1.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    with pytest.raises(InvalidInputError, match=r"^vectors\[1\] is a zero vector"):
        unit_rows(rows, dim=2)
    np.testing.assert_allclose(unit_rows(np.array([[1e-20, 0.0], [0.0, 2.0]]), dim=None), [[1, 0], [0, 1]])
    assert unit_rows(np.array([[1, 1]], dtype=np.int64), dim=2).dtype == np.float32


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (5, r"^text must be a str, got int$"),
        ("   ", r"^text is empty or only whitespace; pass some text$"),
        ("a\x00b", r"^text contains a NUL character; remove it$"),
        ("x" * (MAX_TEXT_CHARS + 1), rf"^text has {MAX_TEXT_CHARS + 1:,} characters, above the limit of"),
    ],
)
def test_a_bad_text_is_refused_with_what_is_wrong(bad, message):
    with pytest.raises(InvalidInputError, match=message):
        check_text(bad)
    assert check_text("x" * MAX_TEXT_CHARS) == "x" * MAX_TEXT_CHARS


def test_texts_and_ids_are_named_by_position_and_checked_whole():
    assert check_texts("one") == ["one"] and check_ids("a") == ["a"]
    with pytest.raises(InvalidInputError, match=r"^texts\[1\] must be a str, got int$"):
        check_texts(["a", 1])
    for bad in ([], (), 5):
        with pytest.raises(InvalidInputError, match=r"^texts must be a non-empty string or a non-empty list"):
            check_texts(bad)
    for bad in ([], ["a", ""], ["a", 3], 7):
        with pytest.raises(InvalidInputError, match=r"^ids must be a non-empty string or a list of non-empty strings$"):
            check_ids(bad)
    with pytest.raises(InvalidInputError, match=r"^an id holds"):
        check_ids(["\ud800"])
    with pytest.raises(InvalidInputError, match=r"^ids contain duplicates"):
        check_new_ids(["a", "a"], taken=None)
    with pytest.raises(InvalidInputError, match=r"^ids already stored: \['b', 'c', 'd', 'e', 'f'\]; delete"):
        check_new_ids(list("abcdefg"), taken=dict.fromkeys("bcdefg", 1))  # five of them named
    check_new_ids(None, taken={"b": 1})


def test_a_scope_is_a_bounded_string_and_the_empty_scope_is_the_default():
    assert check_scope("") == "" and check_scope("user:alice") == "user:alice"
    assert check_scope("s" * MAX_SCOPE_CHARS) == "s" * MAX_SCOPE_CHARS
    with pytest.raises(InvalidInputError, match=r"^a scope is named by a str, got int$"):
        check_scope(3)
    with pytest.raises(InvalidInputError, match=r"^scope has 5,001 characters, above the limit of 5,000$"):
        check_scope("s" * (MAX_SCOPE_CHARS + 1))
    with pytest.raises(InvalidInputError, match=r"^scope is empty or only whitespace"):
        check_scope("  ")


def test_per_item_values_have_one_per_text():
    check_same_length("ids", None, 3)
    with pytest.raises(InvalidInputError, match=r"^ids must be a list with one item per text, got str$"):
        check_same_length("ids", "abc", 3)
    with pytest.raises(InvalidInputError, match=r"^ids has 2 items but there are 3 texts$"):
        check_same_length("ids", ["a", "b"], 3)
    assert per_item("importance", None, 2, 0.5, float) == [0.5, 0.5]
    assert per_item("importance", 1, 2, 0.5, float) == [1.0, 1.0]
    assert per_item("importance", [0, 1], 2, 0.5, float) == [0.0, 1.0]


def test_metadata_keeps_floats_and_nests_exactly_to_its_limit():
    from reference.common.validation import MAX_DEPTH

    assert check_metadata({"x": 0.5, "n": -(2**63), "m": 2**63 - 1}) == {"x": 0.5, "n": -(2**63), "m": 2**63 - 1}
    assert type(check_metadata({"x": 1.0})["x"]) is float
    deepest: object = "leaf"
    for _ in range(MAX_DEPTH):
        deepest = [deepest]
    assert check_metadata({"k": deepest[0]})["k"] == deepest[0]  # MAX_DEPTH levels in all: allowed
    where = "metadata['k']" + "[0]" * (MAX_DEPTH - 1)  # the first value past the limit
    with pytest.raises(InvalidInputError, match=rf"^{re.escape(where)} nests deeper than {MAX_DEPTH} levels$"):
        check_metadata({"k": [deepest]})
