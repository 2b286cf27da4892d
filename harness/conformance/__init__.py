"""The conformance suite: SPEC.md's requirements as pytest tests, runnable against any adapter.

pytest --pyargs harness.conformance --memory-system my_pkg.module:make
magbench conformance my_pkg.module:make
"""
