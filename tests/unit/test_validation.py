import numpy as np
import pytest

from reference.errors import DimensionMismatchError, InvalidInputError
from reference.validation import (
    MAX_EPISODE_CHARS,
    MAX_INTERVAL_S,
    MAX_TEXT_CHARS,
    check_episode,
    check_importance,
    check_interval,
    check_k,
    check_metadata,
    check_texts,
    check_texts_per_item,
    check_timestamp,
    unit_rows,
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
    with pytest.raises(DimensionMismatchError, match="dimension 3"):
        unit_rows(np.ones((2, 3)), dim=4)


def test_rows_are_normalised_even_when_huge_or_tiny():
    rows = unit_rows(np.array([[3.0, 4.0], [1e300, 1e300], [1e-300, 0.0]]), dim=2)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(rows[0], [0.6, 0.8], rtol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "3", True, None])
def test_k_must_be_a_positive_integer(bad):
    with pytest.raises(InvalidInputError):
        check_k(bad)


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
    with pytest.raises(InvalidInputError, match="episode"):
        check_episode(" ")


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
        ({1: "x"}, "^metadata must be a mapping with string keys$"),
        (["x"], "^metadata must be a mapping with string keys$"),
        ({"x": float("nan")}, "^metadata must be JSON-serialisable: Out of range float values"),
        ({"x": object()}, "^metadata must be JSON-serialisable: Object of type object"),
        ({"x": "\ud800"}, r"^metadata holds '\\ud800', which UTF-8 cannot encode$"),
    ],
)
def test_bad_metadata_is_refused(bad, message):
    with pytest.raises(InvalidInputError, match=message):
        check_metadata(bad)


def test_a_bad_text_among_per_item_texts_is_named_by_its_argument():
    assert check_texts_per_item("context", "[May 2023]", 2) == ["[May 2023]"] * 2
    with pytest.raises(InvalidInputError, match="context"):
        check_texts_per_item("context", ["[May 2023]", ""], 2)
    with pytest.raises(InvalidInputError, match=r"^context"):
        check_texts_per_item("context", ["[May 2023]"], 2)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "2023-05-08", True, None])
def test_a_bad_timestamp_is_refused_with_what_a_timestamp_is(bad):
    with pytest.raises(InvalidInputError, match=r"^timestamps must be datetimes or finite epoch seconds, got "):
        check_timestamp(bad)
