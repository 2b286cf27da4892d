"""Seeded dataset generators (no global random state; one Faker instance per generator)."""
