"""The read path: a search call's queries, the search pipeline, and the hits it returns."""
