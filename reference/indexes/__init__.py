"""The indexes the read path searches (vectors per group, BM25, metadata filters), kept in step by the state."""
