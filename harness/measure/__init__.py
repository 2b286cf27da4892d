"""Measurement: the plan, the experiments, and the runners that build systems and time them."""
