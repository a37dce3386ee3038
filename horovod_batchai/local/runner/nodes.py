"""The nodes of local clusters, and the only way a node's state changes.

A node is a row of the ``nodes`` table: its cluster, its index, its id, its :class:`NodeState`,
the job it runs and, while ``preparing`` or ``leaving``, when that ends. Every change goes through
:class:`NodeTable`, which refuses moves the service never makes::

    (new)      → preparing
    preparing  → idle | unusable | leaving
    idle       → running | leaving
    running    → idle (its job ended) | leaving (its cluster shrank)
    unusable   → leaving
    leaving    → (gone)

Two bulk moves sit outside that graph on purpose: :meth:`NodeTable.free_after_restart` (a service
that died left nodes ``running`` jobs that ended or never started) and :meth:`NodeTable.forget_cluster` (a
deleted cluster's nodes go whatever their state).
"""
from __future__ import annotations

import sqlite3
import time
from typing import Any, Iterable, Optional

from ..core.store import Store
from .states import NodeState

__all__ = ["NodeTable", "IllegalNodeTransition", "NODE_TRANSITIONS"]

NODE_TRANSITIONS: dict[Optional[NodeState], frozenset[Optional[NodeState]]] = {
    None: frozenset({NodeState.PREPARING}),
    NodeState.PREPARING: frozenset({NodeState.IDLE, NodeState.UNUSABLE, NodeState.LEAVING}),
    NodeState.IDLE: frozenset({NodeState.RUNNING, NodeState.LEAVING}),
    NodeState.RUNNING: frozenset({NodeState.IDLE, NodeState.LEAVING}),
    NodeState.UNUSABLE: frozenset({NodeState.LEAVING}),
    NodeState.LEAVING: frozenset({None}),
}


class IllegalNodeTransition(RuntimeError):
    """A node was asked to move between two states the service never moves it between."""

    def __init__(self, cluster: str, idx: int, current: Optional[str], wanted: Optional[NodeState]) -> None:
        super().__init__(f"node {idx} of {cluster} cannot move from {current or 'nothing'!r} to "
                         f"{wanted.value if wanted else 'gone'!r}")
        self.current = current
        self.wanted = wanted


def _check(cluster: str, idx: int, current: Optional[str], wanted: Optional[NodeState]) -> None:
    state = NodeState(current) if current is not None else None
    if wanted not in NODE_TRANSITIONS[state]:
        raise IllegalNodeTransition(cluster, idx, current, wanted)


class NodeTable:
    """Guarded reads and writes of the ``nodes`` table of one store."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- reads ----------------------------------------------------------------------------------

    def of_cluster(self, cluster_key: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.store.query("SELECT * FROM nodes WHERE cluster = ? ORDER BY idx",
                                                  (cluster_key,))]

    def clusters(self) -> set[str]:
        return {row["cluster"] for row in self.store.query("SELECT DISTINCT cluster FROM nodes")}

    def any_waiting(self) -> bool:
        """Whether some node waits on a timer (preparing or leaving)."""
        return bool(self.store.query("SELECT 1 FROM nodes WHERE state IN (?, ?) LIMIT 1",
                                     (NodeState.PREPARING.value, NodeState.LEAVING.value)))

    # -- guarded moves --------------------------------------------------------------------------

    def _current(self, db: sqlite3.Connection, cluster_key: str, idx: int) -> Optional[str]:
        row = db.execute("SELECT state FROM nodes WHERE cluster = ? AND idx = ?", (cluster_key, idx)).fetchone()
        return row["state"] if row is not None else None

    def add(self, cluster_key: str, idx: int, node_id: str, *, until: float) -> None:
        """A new node, ``preparing`` until ``until``."""
        with self.store.transaction() as db:
            _check(cluster_key, idx, self._current(db, cluster_key, idx), NodeState.PREPARING)
            db.execute("INSERT INTO nodes (cluster, idx, node_id, state, job, until, since) "
                       "VALUES (?, ?, ?, ?, NULL, ?, ?)",
                       (cluster_key, idx, node_id, NodeState.PREPARING.value, until, time.time()))

    def move(self, cluster_key: str, idx: int, to: NodeState, *, job: Optional[str] = None,
             until: Optional[float] = None, only_from: Optional[NodeState] = None) -> bool:
        """Move one node to ``to``. With ``only_from``, a node found in another state is left as it is
        (and False returned): a node removed or moved meanwhile by someone else is not an error."""
        with self.store.transaction() as db:
            current = self._current(db, cluster_key, idx)
            if only_from is not None and current != only_from.value:
                return False
            _check(cluster_key, idx, current, to)
            db.execute("UPDATE nodes SET state = ?, job = ?, until = ?, since = ? WHERE cluster = ? AND idx = ?",
                       (to.value, job, until, time.time(), cluster_key, idx))
        return True

    def allocate(self, cluster_key: str, indexes: Iterable[int], job_key: str) -> None:
        """Idle nodes start running ``job_key``, all at once."""
        with self.store.transaction() as db:
            for idx in indexes:
                _check(cluster_key, idx, self._current(db, cluster_key, idx), NodeState.RUNNING)
                db.execute("UPDATE nodes SET state = ?, job = ?, since = ? WHERE cluster = ? AND idx = ?",
                           (NodeState.RUNNING.value, job_key, time.time(), cluster_key, idx))

    def release(self, job_key: str) -> None:
        """The job's processes are gone: its running nodes become idle; leaving nodes keep leaving,
        no longer held by the job."""
        with self.store.transaction() as db:
            db.execute("UPDATE nodes SET state = ?, job = NULL, since = ? WHERE job = ? AND state = ?",
                       (NodeState.IDLE.value, time.time(), job_key, NodeState.RUNNING.value))
            db.execute("UPDATE nodes SET job = NULL WHERE job = ?", (job_key,))

    def remove(self, cluster_key: str, idx: int) -> None:
        """A node that has finished leaving."""
        with self.store.transaction() as db:
            _check(cluster_key, idx, self._current(db, cluster_key, idx), None)
            db.execute("DELETE FROM nodes WHERE cluster = ? AND idx = ?", (cluster_key, idx))

    # -- bulk moves outside the graph -----------------------------------------------------------

    def free_after_restart(self, keep: Iterable[str] = ()) -> None:
        """Nodes a dead service left ``running`` jobs it no longer runs become idle and no node is
        held, except by the jobs in ``keep`` (runs the new service re-attached to)."""
        kept = sorted(set(keep))
        marks = ", ".join("?" for _ in kept)
        spare = f" AND (job IS NULL OR job NOT IN ({marks}))" if kept else ""
        with self.store.transaction() as db:
            db.execute("UPDATE nodes SET state = ?, job = NULL, since = ? WHERE state = ?" + spare,
                       (NodeState.IDLE.value, time.time(), NodeState.RUNNING.value, *kept))
            db.execute("UPDATE nodes SET job = NULL WHERE 1 = 1" + spare, kept)

    def forget_cluster(self, cluster_key: str, *, only_unheld: bool = False) -> None:
        """Drop a deleted cluster's nodes (with ``only_unheld``, those no job holds yet)."""
        with self.store.transaction() as db:
            db.execute("DELETE FROM nodes WHERE cluster = ?" + (" AND job IS NULL" if only_unheld else ""),
                       (cluster_key,))
