"""A takeover fences off the previous owner's late writes by moving the namespace's collections to new ones.

Chroma addresses a collection's writes by its id and has no conditional write. A previous owner paused between
its lease check and the server receiving a write would otherwise land that write after a takeover, behind the new
owner's back: an update undoing what the new owner wrote to the same cell since, new cells the new owner never
loaded, or in the ledger (`ledger.py`) a bound lowered or a scope forgotten. So the new owner sets the cells' and
the ledger's collections aside, copies every record of each into a new collection of its name, deletes the one
set aside, and only then loads. A late write lands in a set-aside collection before its records are read (and is
loaded, as if it had come before the takeover), or is lost with that collection, or fails on the deleted id; never
after the load. The move costs one copy of every cell, once per takeover; a move cut short is finished by the next
opener.
"""

from __future__ import annotations

from typing import Any

from ..common.chroma import existing_collection, guarded
from .collection import CONFIGURATION, cells_name
from .ledger import ledger_name

SET_ASIDE = "_set_aside"
"""Suffix of a collection while a takeover moves it."""
FIELDS = ["embeddings", "documents", "metadatas"]


def hand_over(client: Any, namespace: str, *, took_over: bool) -> None:
    """After a takeover, move the namespace's collections to new ones; in any case finish a move an opener cut
    short (the lease is held)."""
    for name, configuration in ((cells_name(namespace), CONFIGURATION), (ledger_name(namespace), None)):
        if took_over and existing_collection(client, name + SET_ASIDE, f"opening {name + SET_ASIDE}") is None:
            current = existing_collection(client, name, f"opening {name}")
            if current is None:
                continue
            guarded(f"setting {name} aside", current.modify, name=name + SET_ASIDE)
        _finish(client, name, configuration)


def _finish(client: Any, name: str, configuration: dict[str, Any] | None) -> None:
    """Copy every record of the set-aside collection into `name` (made with its metadata when missing), then
    delete it. Records are copied by id, listed first: a late delete in it cannot shift what is read."""
    aside = existing_collection(client, name + SET_ASIDE, f"opening {name + SET_ASIDE}")
    if aside is None:
        return
    target = guarded(
        f"making {name} anew",
        client.get_or_create_collection,
        name,
        embedding_function=None,
        configuration=configuration,
        metadata=aside.metadata,
    )
    ids = guarded(f"listing {name + SET_ASIDE}", aside.get, include=[])["ids"]
    batch = guarded("reading the batch limit", client.get_max_batch_size)
    for start in range(0, len(ids), batch):
        found = guarded(f"reading {name + SET_ASIDE}", aside.get, ids=ids[start : start + batch], include=FIELDS)
        if found["ids"]:
            held = {field: found[field] for field in FIELDS if any(value is not None for value in found[field])}
            guarded(f"copying into {name}", target.upsert, ids=found["ids"], **held)
    guarded(f"deleting {name + SET_ASIDE}", client.delete_collection, name + SET_ASIDE)
