"""Durable state of the local service: one SQLite database in the state directory.

ARM resources (resource groups, storage accounts, workspaces, experiments, clusters, jobs, file
servers) are kept as their JSON bodies keyed by their lower-cased resource id, because ARM ids
are case-insensitive while names keep the casing they were created with. The planes' own tables
(long-running operations, cluster nodes, file metadata...) are declared with this one in
``tables.py`` and created when the database opens.

Why SQLite through the standard library: no server process and no extra dependency, one file in
the state directory, transactions that survive a crash (WAL journal), and a format anyone can
inspect with the ``sqlite3`` shell when debugging. The load is a few requests per second from one
machine, far inside what one connection serialised by a lock handles.

Every write happens in a transaction under one lock, so a handler and the job scheduler never
see half an update; :meth:`Store.update` is the read-modify-write that state transitions go
through.
"""
from __future__ import annotations

import builtins
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from .tables import ADDED_COLUMNS, SCHEMA

__all__ = ["Store", "resource_key"]


def resource_key(resource_id: str) -> str:
    """The store key of an ARM resource id: lower-cased, no trailing slash."""
    return resource_id.rstrip("/").lower()


class Store:
    """The local service's database. Safe to share between threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Made 0600 before SQLite opens it: it holds keys and passwords, and SQLite gives the
        # -wal and -shm files it creates the database file's mode.
        os.close(os.open(str(self.path), os.O_RDWR | os.O_CREAT, 0o600))
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        for table, column, kind in ADDED_COLUMNS:
            if column not in {row["name"] for row in self._db.execute(f"PRAGMA table_info({table})")}:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- raw access for the planes' own tables (declared in tables.py) ---------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run several statements atomically: ``with store.transaction() as db: db.execute(...)``."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- ARM resources -----------------------------------------------------------------------

    def get(self, resource_id: str) -> Optional[dict[str, Any]]:
        rows = self.query("SELECT body FROM resources WHERE key = ?", (resource_key(resource_id),))
        return json.loads(rows[0]["body"]) if rows else None

    def get_private(self, resource_id: str) -> dict[str, Any]:
        """What the service keeps about a resource but never answers (account keys, passwords)."""
        rows = self.query("SELECT private FROM resources WHERE key = ?", (resource_key(resource_id),))
        return json.loads(rows[0]["private"]) if rows else {}

    def put(self, resource_id: str, rtype: str, parent: str, body: dict[str, Any],
            private: Optional[dict[str, Any]] = None) -> None:
        now = time.time()
        key = resource_key(resource_id)
        with self.transaction() as db:
            row = db.execute("SELECT private, created FROM resources WHERE key = ?", (key,)).fetchone()
            kept = json.loads(row["private"]) if row else {}
            created = row["created"] if row else now
            db.execute(
                "INSERT OR REPLACE INTO resources (key, type, parent, body, private, created, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, rtype.lower(), resource_key(parent), json.dumps(body),
                 json.dumps(private if private is not None else kept), created, now))

    def update(self, resource_id: str, change: Callable[[dict[str, Any]], Optional[dict[str, Any]]]
               ) -> Optional[dict[str, Any]]:
        """Read-modify-write one resource atomically; ``change`` edits the body in place or
        returns a new one, and may raise to refuse the change. Returns None if it does not exist."""
        key = resource_key(resource_id)
        with self.transaction() as db:
            row = db.execute("SELECT body FROM resources WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            body = json.loads(row["body"])
            new = change(body)
            body = new if new is not None else body
            db.execute("UPDATE resources SET body = ?, updated = ? WHERE key = ?",
                       (json.dumps(body), time.time(), key))
            return body

    def update_private(self, resource_id: str, private: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("UPDATE resources SET private = ? WHERE key = ?",
                       (json.dumps(private), resource_key(resource_id)))

    def list(self, rtype: str, parent: Optional[str] = None) -> list[dict[str, Any]]:
        """Resources of one type, under one parent scope or (parent=None) anywhere, oldest first."""
        if parent is None:
            rows = self.query("SELECT body FROM resources WHERE type = ? ORDER BY created",
                              (rtype.lower(),))
        else:
            rows = self.query("SELECT body FROM resources WHERE type = ? AND parent = ? ORDER BY created",
                              (rtype.lower(), resource_key(parent)))
        return [json.loads(r["body"]) for r in rows]

    # builtins.list: inside this class, after ``def list``, a bare ``list`` names that method.
    def list_under(self, scope_id: str, rtype: Optional[str] = None) -> builtins.list[dict[str, Any]]:
        """Every resource whose id lies under ``scope_id`` (a resource group, a workspace...)."""
        prefix = resource_key(scope_id) + "/"
        sql = "SELECT body FROM resources WHERE substr(key, 1, ?) = ?"
        params: tuple[Any, ...] = (len(prefix), prefix)
        if rtype is not None:
            sql += " AND type = ?"
            params += (rtype.lower(),)
        return [json.loads(r["body"]) for r in self.query(sql + " ORDER BY created", params)]

    def delete(self, resource_id: str, *, recursive: bool = False) -> bool:
        """Delete a resource (and with ``recursive`` everything under it). True if it existed."""
        key = resource_key(resource_id)
        with self.transaction() as db:
            existed = db.execute("DELETE FROM resources WHERE key = ?", (key,)).rowcount > 0
            if recursive:
                prefix = key + "/"
                db.execute("DELETE FROM resources WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
            return existed
