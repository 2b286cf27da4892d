"""The experiments of the harness, one module each (mteb's shape): a module defines one `Experiment`
(`definition.py`) with its workload, systems, time estimate, report tables and figures, and the registry
(`registry.py`) finds it there. Adding an experiment is adding a module."""
