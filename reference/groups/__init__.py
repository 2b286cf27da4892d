"""Grouping: online leader clustering of cells into groups, and concepts, the layer above groups."""
