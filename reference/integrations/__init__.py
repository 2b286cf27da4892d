"""Adapters that put the engine behind other frameworks' interfaces (each an optional extra)."""
