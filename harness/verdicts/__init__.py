"""Verdicts: claims and targets as data, confidence intervals, and the comparison of two runs."""
