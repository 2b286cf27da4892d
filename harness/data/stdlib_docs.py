"""Prints, as a JSON list, the interpreter's help topics (`pydoc_data`) and the docstrings of the standard
library's modules, their classes and functions. Run as a script in an interpreter that imports nothing else
(`python -I -S`: `corpus.load_corpus("stdlib")` does), so that no package can change them: typing_extensions,
once imported, replaces two of `typing`'s functions with its own, which have no docstrings."""

import importlib
import inspect
import json
import pydoc
import sys
import warnings

SKIP = frozenset({"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "lib2to3", "ensurepip"})


def docs() -> list[str]:
    from pydoc_data.topics import topics

    found = [topics[key] for key in sorted(topics)]
    names = sorted(m for m in sys.stdlib_module_names if not m.startswith("_") and m not in SKIP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                module = importlib.import_module(name)
            except Exception:
                continue
            found.append(pydoc.getdoc(module))
            for _, member in sorted(vars(module).items()):
                if (inspect.isclass(member) or inspect.isfunction(member)) and member.__module__ == name:
                    found.append(pydoc.getdoc(member))
    return found


if __name__ == "__main__":
    json.dump(docs(), sys.stdout)
