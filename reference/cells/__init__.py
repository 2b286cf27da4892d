"""Cells in columns and what each cell carries: its scope, its episode, its entities, its turn form."""
