"""Ranking rules: the memory-mode score and the fusion of dense and lexical candidates."""
