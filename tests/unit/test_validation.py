import numpy as np
import pytest

from reference.errors import DimensionMismatchError, InvalidInputError
from reference.validation import MAX_TEXT_CHARS, check_k, check_texts, unit_rows


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
