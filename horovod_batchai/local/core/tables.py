"""Every table of the local service's database, declared in one place.

:class:`~.store.Store` creates them all when it opens the database (``CREATE ... IF NOT EXISTS``,
so opening a state directory written by an older version keeps its rows) and adds the columns
listed in :data:`ADDED_COLUMNS` where an older database lacks them. Planes read and write their own
tables through the store; none creates one. A new table is declared here, with a comment saying
which part of the service owns it.
"""
from __future__ import annotations

__all__ = ["SCHEMA", "ADDED_COLUMNS"]

SCHEMA = """
-- ARM resources of every provider (core/store.py)
CREATE TABLE IF NOT EXISTS resources (
    key      TEXT PRIMARY KEY,   -- lower-cased ARM resource id
    type     TEXT NOT NULL,      -- lower-cased resource type, e.g. microsoft.batchai/workspaces/clusters
    parent   TEXT NOT NULL,      -- key of the parent scope ('' for subscriptions' children)
    body     TEXT NOT NULL,      -- the resource as the service answers it (JSON)
    private  TEXT NOT NULL DEFAULT '{}',  -- what the service keeps but never answers (keys, passwords)
    created  REAL NOT NULL,
    updated  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS resources_parent ON resources (parent, type);

-- long-running deletions of resource groups (resources/api.py)
CREATE TABLE IF NOT EXISTS resource_group_deletions (
    id             TEXT PRIMARY KEY,   -- operation id, carried in the opaque operationresults token
    resource_group TEXT NOT NULL,      -- store key of the group
    status         TEXT NOT NULL,      -- InProgress | Succeeded | Failed
    error          TEXT,               -- why it failed (no secrets)
    started        REAL NOT NULL,
    ended          REAL
);

-- storage account create/update operations (storage/api.py)
CREATE TABLE IF NOT EXISTS storage_async_operations (
    id       TEXT PRIMARY KEY,   -- the id in the Location URL a PUT answers
    account  TEXT NOT NULL,      -- store key of the account it creates or updates
    created  REAL NOT NULL
);

-- Batch AI long-running operations (batchai/operations.py)
CREATE TABLE IF NOT EXISTS batchai_operations (
    id           TEXT PRIMARY KEY,   -- uuid4, as the service's operation ids were
    subscription TEXT NOT NULL,
    provider     TEXT NOT NULL,
    location     TEXT NOT NULL,
    resource_id  TEXT NOT NULL,      -- the ARM id of the resource the operation acts on
    kind         TEXT NOT NULL,      -- e.g. 'clusters/create', 'jobs/terminate'
    status       TEXT NOT NULL,      -- InProgress | Succeeded | Failed
    start_time   TEXT NOT NULL,
    end_time     TEXT,
    error        TEXT                -- JSON {"code", "message"} when Failed
);

-- where each job's output directories are (runner/output_dirs.py)
CREATE TABLE IF NOT EXISTS job_output_dirs (
    job        TEXT NOT NULL,     -- job store key
    dir_id     TEXT NOT NULL,     -- 'stdouterr' or an outputDirectories id, as given
    local_path TEXT NOT NULL,     -- the directory on this machine (as the job saw it)
    account    TEXT,              -- when it lies on an Azure file share or blob container: account name,
    share      TEXT,              --   share or container name,
    share_path TEXT,              --   and path inside it ('' for its root)
    PRIMARY KEY (job, dir_id)
);

-- share and file properties the file system cannot hold (files/store.py)
CREATE TABLE IF NOT EXISTS files_shares (
    account       TEXT NOT NULL,   -- lower-cased account name
    share         TEXT NOT NULL,
    quota         INTEGER NOT NULL,  -- GiB
    metadata      TEXT NOT NULL,     -- JSON object, names as the caller cased them
    etag          TEXT NOT NULL,
    last_modified REAL NOT NULL,
    PRIMARY KEY (account, share)
);
CREATE TABLE IF NOT EXISTS files_entries (
    account  TEXT NOT NULL,
    share    TEXT NOT NULL,
    path     TEXT NOT NULL,     -- '/'-joined path inside the share
    inode    INTEGER NOT NULL,  -- the inode this row describes; another inode at the path = no row
    metadata TEXT NOT NULL,     -- JSON object
    content  TEXT NOT NULL,     -- JSON: content settings (files only)
    smb      TEXT NOT NULL,     -- JSON: attributes and SMB times the caller set
    PRIMARY KEY (account, share, path)
);
-- the ranges written to a file through the Files API, which Get Ranges answers (files/store.py);
-- a file's own holes are block-sized, Azure's ranges are the bytes written
CREATE TABLE IF NOT EXISTS files_ranges (
    path     TEXT PRIMARY KEY,  -- '<account lower>/<share>/<path inside the share>'
    inode    INTEGER NOT NULL,  -- with mtime_ns: the file as the ranges describe it; else untracked
    mtime_ns INTEGER NOT NULL,
    spans    TEXT NOT NULL      -- JSON [[start, end], ...]: inclusive, sorted, apart
);
-- the last Copy File into each file (files/copy.py), answered while the inode is the one copied into
CREATE TABLE IF NOT EXISTS files_copies (
    account     TEXT NOT NULL,
    share       TEXT NOT NULL,
    path        TEXT NOT NULL,     -- '/'-joined path of the destination inside the share
    inode       INTEGER NOT NULL,  -- the destination's inode; another inode at the path = no copy
    copy_id     TEXT NOT NULL,     -- the x-ms-copy-id answered
    status      TEXT NOT NULL,     -- pending | success | aborted | failed
    source      TEXT NOT NULL,     -- x-ms-copy-source as given, its SAS signature removed
    source_ref  TEXT NOT NULL,     -- JSON {"account", "share", "path", "etag"}: what is read
    copied      INTEGER NOT NULL,  -- bytes copied so far
    total       INTEGER NOT NULL,  -- bytes to copy
    completed   REAL,              -- when it ended (success, aborted, failed)
    description TEXT,              -- why it failed or was aborted (no secrets)
    PRIMARY KEY (account, share, path)
);

-- cluster nodes and the run tags of their processes (runner/)
CREATE TABLE IF NOT EXISTS nodes (
    cluster TEXT NOT NULL,     -- cluster store key
    idx     INTEGER NOT NULL,  -- the node's index in its cluster
    node_id TEXT NOT NULL,     -- tvm-<n>_<idx+1>-<created>-p
    state   TEXT NOT NULL,     -- idle | running | preparing | leaving | unusable
    job     TEXT,              -- store key of the job it runs
    until   REAL,              -- preparing: when provisioning ends; leaving: when it is gone
    PRIMARY KEY (cluster, idx)
);
CREATE TABLE IF NOT EXISTS run_tags (
    owner TEXT PRIMARY KEY,    -- job store key, or 'setup:<cluster key>:<idx>'
    tag   TEXT NOT NULL        -- the HOROVOD_BATCHAI_RUN value its processes carry
);
"""

#: (table, column, type) added after a release: a database from before gets them on opening.
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # 'blob' for an output directory on a blob container (NULL, in older databases, for a file share).
    ("job_output_dirs", "storage", "TEXT"),
    # when a node entered its state (an auto-scale cluster lets an idle node go only after a delay).
    ("nodes", "since", "REAL"),
    # a share's access tier (NULL: the account kind's default), when it last changed, its protocol
    # (NULL: SMB) and an NFS share's root squash, settable through ARM and the data plane alike.
    ("files_shares", "access_tier", "TEXT"),
    ("files_shares", "access_tier_changed", "REAL"),
    ("files_shares", "protocols", "TEXT"),
    ("files_shares", "root_squash", "TEXT"),
)
