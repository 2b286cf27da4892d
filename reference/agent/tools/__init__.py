"""Built-in agent tools and plugin discovery (entry-point group `magnetic_bench.tools`)."""
