"""How a figure reads in a report's tables: never an exponent, thousands separated, as many digits as it
carries, and one format per kind of figure so that a column reads alike from row to row."""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

SIGNIFICANT = 3
"""Significant digits of a measured figure (a latency, a rate): what its timing noise lets it carry."""
MISSING = "–"
"""A figure the system does not report, or a measurement it did not make."""

Format = Callable[[Any], str]


def figure(value: Any) -> str:
    """A measured figure to `SIGNIFICANT` digits without an exponent (`0.0234`, `1.91`, `16.1`, `1,390`, `27,080`);
    whole numbers with thousands separated; text as it is."""
    if _missing(value):
        return MISSING
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if isinstance(value, Integral):
        return f"{int(value):,}"
    number = float(value)
    if math.isinf(number):
        return "∞" if number > 0 else "−∞"
    if number == 0:
        return "0"
    decimals = max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(number))))
    return f"{number:,.{decimals}f}"


def share(value: Any) -> str:
    """A share or a score in [0, 1] (recall, MRR, nDCG, ARI) to three decimals, so a column lines up."""
    return MISSING if _missing(value) else f"{float(value):.3f}" if isinstance(value, Real) else str(value)


def percent(value: Any) -> str:
    """A relative spread as a percentage."""
    return MISSING if _missing(value) else f"{float(value):.1%}" if isinstance(value, Real) else str(value)


def growth(value: Any) -> str:
    """A growth measured from outside (resident memory per cell): none seen is no reading, since what a system
    holds is never nothing."""
    return MISSING if isinstance(value, Real) and not _missing(value) and value <= 0 else figure(value)


def _missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))
