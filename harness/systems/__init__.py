"""Systems under test, each behind the adapter protocol, and the registry that names them."""
