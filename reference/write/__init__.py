"""The write path: adding cells, and cells written again (updates, upserts, supersession) with their history."""
