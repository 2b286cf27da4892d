"""Data: generated sets, real corpora and dialogue files, their encoding and cache."""
