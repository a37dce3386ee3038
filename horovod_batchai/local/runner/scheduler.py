"""The job scheduler: clusters' nodes, and which job runs on which of them.

A local cluster of N nodes is N slots on this machine, kept in the ``nodes`` table. One background
thread, woken by :meth:`Scheduler.notify` and by a short tick (for provisioning timers), makes
each cluster's nodes match its scale settings and starts queued jobs:

- **Provisioning**: new nodes are ``preparing`` for ``provision_delay_s``, then mount the
  cluster's volumes and run its setup task; they become ``idle``, or ``unusable`` with a cluster
  error when either fails. ``allocationState`` is ``resizing`` until the cluster has its target
  number of nodes and none is preparing or leaving, then ``steady``.
- **Shrinking** removes unusable, preparing and idle nodes first; busy nodes follow the
  ``nodeDeallocationOption``: ``requeue`` stops their jobs and queues them again, ``terminate``
  stops and fails them, ``waitforjobcompletion`` removes them once their jobs end. Removed nodes
  are ``leaving`` for ``deallocation_delay_s``.
- **Auto-scale** targets the nodes that the cluster's queued and running jobs ask for, within
  minimum and maximum (``initialNodeCount`` until the first job names the cluster); it only ever
  removes idle nodes, and a node that became idle stays for ``scale_down_delay_s`` first (the
  recorded service kept one for about ten minutes), the cluster ``steady`` meanwhile.
- **Counting**: while a cluster is ``resizing``, nodes still being added are not counted in
  ``currentNodeCount`` and ``nodeStateCounts`` (the recorded service showed 0 nodes during
  ``resizing``); they are once they are up.
- **Gang scheduling**: a job starts only when ``nodeCount`` idle nodes of its cluster are free,
  all at once. Queued jobs are taken by ``schedulingPriority`` (high, normal, low), then by
  creation time, strictly: when the job at the head does not fit yet, the jobs behind it wait too
  (no backfilling), so a large job is never starved by a stream of small ones. A job that can
  never fit the cluster's size (more nodes than its target, or than its auto-scale maximum)
  waits without holding up the others.

Once the Batch AI provider has stored a cluster (``resizing``, with no nodes) or a job
(``queued``), the scheduler is the only writer of the cluster's ``allocationState``,
``allocationStateTransitionTime``, ``currentNodeCount``, ``nodeStateCounts`` and ``errors``, and of
the job's execution state (through ``states.transition_job``); it is the only writer of node
states (through ``nodes.NodeTable``). Runs are tagged (see ``processes.py``) and the tags of live runs kept in
the ``run_tags`` table, so that a service started again after it was killed finds what its
predecessor left (:meth:`Scheduler._recover`):

- a run whose supervisor still runs, or recorded how the job ended, is re-attached: the job keeps
  its nodes and ends as its processes did, with their exit code (a job terminated by the user
  meanwhile is stopped);
- a run whose supervisor never started a process of the job is dropped and the job queued
  again, so a job whose PUT was answered runs exactly once;
- a run whose supervisor is gone without a record (killed along with the service) fails its job
  with ``LocalServiceKilled``.

Stopping the service (not killing it) stops its jobs and fails them with ``LocalServiceStopped``.
"""
from __future__ import annotations

import json
import logging
import shutil
import threading
import time
import uuid
from typing import Any, Optional

from .states import (JOB_TERMINATED, AllocationState, ExecutionState, IllegalTransition, JobGone, NodeState,
                     job_error, node_state_counts, transition_job, utc_now)
from .nodes import NodeTable
from .job_executor import JobRun, RunResult, StopReason, discard_run_secrets, run_dir_of, run_has_started
from .node_setup import NodeSlot, prepare_node
from .output_dirs import forget_output_dirs
from .resource_types import CLUSTER_TYPE, JOB_TYPE, stored_type
from .paths import cluster_dir, job_dir, node_id_for
from .processes import stop_tagged, tagged_pids
from .supervisor import EXIT_FILE
from ..core.context import ServiceContext
from ..core.store import resource_key
from ..tracking.runs import job_runs
from ..tracking.server import TrackingServerError

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

#: how often the loop looks at provisioning and deallocation timers while nodes wait on them.
TICK_S = 0.2
#: how often it looks when nothing waits on a timer (notify() wakes it at once anyway).
IDLE_TICK_S = 2.0
#: how long a terminate or delete waits for a run's processes to go.
JOIN_TIMEOUT_S = 60.0
PRIORITY_RANK = {"high": 0, "normal": 1, "low": 2}

SERVICE_KILLED = job_error("LocalServiceKilled",
                           "The local service was killed while the job ran, and the job's processes did not "
                           "survive it; the job's exit code is unknown.")


class _Unchanged(Exception):
    """Raised inside a store update to leave the document as it is."""


def _props(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("properties") or {}


def _job_cluster_key(job: dict[str, Any]) -> str:
    return resource_key(str((_props(job).get("cluster") or {}).get("id") or ""))


def _node_count(job: dict[str, Any]) -> int:
    return max(1, int(_props(job).get("nodeCount") or 1))


class Scheduler:
    """Runs the jobs of one service (see the module docstring); the Batch AI provider holds it as its
    :class:`~..batchai.scheduling.JobScheduler`."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.store = context.store
        self.nodes = NodeTable(context.store)
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._runs: dict[str, JobRun] = {}                 # job key -> its live run
        self._setups: dict[tuple[str, int], str] = {}      # (cluster key, idx) -> tag of its setup task

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._recover()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._loop, name="horovod-batchai-scheduler", daemon=True)
        self._thread.start()
        self.notify()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        with self._lock:
            runs = list(self._runs.values())
            setups = list(self._setups.values())
        _stop_and_wait(runs, setups, StopReason.SERVICE_STOP)

    def notify(self) -> None:
        """Something changed (a job was queued, a cluster created or resized); look again soon."""
        self._wake.set()

    def _recover(self) -> None:
        """What a previous service left (see the module docstring): runs re-attached, jobs that
        never started queued again, the rest failed; setup tasks killed (their nodes set up again)
        and the nodes of runs not re-attached freed. Clusters that were resizing carry on from
        their timers."""
        tags = {row["owner"]: row["tag"] for row in self.store.query("SELECT owner, tag FROM run_tags")}
        for owner, tag in tags.items():
            if owner.startswith("setup:"):
                stop_tagged(tag, [], grace=0)
        reattached: list[JobRun] = []
        for job in self.store.list(JOB_TYPE):
            state = _props(job).get("executionState")
            if state not in (ExecutionState.RUNNING.value, ExecutionState.TERMINATING.value):
                continue
            key = resource_key(job["id"])
            tag = tags.get(key)
            run_dir = run_dir_of(self.context, job["id"], tag) if tag else None
            nodes = [NodeSlot(r["idx"], r["node_id"]) for r in self.store.query(
                "SELECT idx, node_id FROM nodes WHERE job = ? ORDER BY cluster, idx", (key,))]
            if tag and run_dir and nodes and (tagged_pids(tag) or (run_dir / EXIT_FILE).exists()):
                run = JobRun.reattach(self.context, job["id"], nodes, tag, self._run_done)
                self._runs[key] = run
                reattached.append(run)
                if state == ExecutionState.TERMINATING.value:
                    run.stop(StopReason.TERMINATED)  # the user's terminate, which the dead service did not finish
                continue
            if tag:
                stop_tagged(tag, [], grace=0)
            if run_dir:
                discard_run_secrets(run_dir)
            try:
                if tag and run_dir and run_has_started(run_dir):
                    transition_job(self.store, job["id"], ExecutionState.FAILED, errors=[SERVICE_KILLED])
                    self._end_tracked_run(job["id"], "FAILED")
                elif state == ExecutionState.TERMINATING.value:
                    transition_job(self.store, job["id"], ExecutionState.FAILED, errors=[JOB_TERMINATED])
                else:  # nothing of it ran: it runs from the start, once
                    transition_job(self.store, job["id"], ExecutionState.QUEUED)
            except (IllegalTransition, JobGone):
                pass
        kept = {resource_key(run.job_id) for run in reattached}
        with self.store.transaction() as db:
            db.execute("DELETE FROM run_tags" + (f" WHERE owner NOT IN ({', '.join('?' for _ in kept)})"
                                                 if kept else ""), sorted(kept))
        self.nodes.free_after_restart(keep=kept)
        for run in reattached:
            run.start()

    # -- what the Batch AI provider asks (JobScheduler) ----------------------------------------

    def terminate_job(self, job_id: str, *, wait: bool = True) -> None:
        """Stop a job for the user: ``terminating``, its processes stopped, then ``failed``."""
        with self._lock:
            job = self.store.get(job_id)
            if job is None:
                return
            state = _props(job).get("executionState")
            run = self._runs.get(resource_key(job_id))
            try:
                if state == ExecutionState.QUEUED.value:
                    transition_job(self.store, job_id, ExecutionState.TERMINATING)
                    transition_job(self.store, job_id, ExecutionState.FAILED, errors=[JOB_TERMINATED])
                    return
                if state == ExecutionState.RUNNING.value:
                    transition_job(self.store, job_id, ExecutionState.TERMINATING)
                if run is not None:
                    run.stop(StopReason.TERMINATED)
                elif state in (ExecutionState.RUNNING.value, ExecutionState.TERMINATING.value):
                    transition_job(self.store, job_id, ExecutionState.FAILED, errors=[JOB_TERMINATED])
            except (IllegalTransition, JobGone):
                return
        if wait and run is not None:
            run.join(JOIN_TIMEOUT_S)

    def forget_job(self, job_id: str) -> None:
        """The job is about to be deleted: stop its processes (waiting for them) and free its nodes."""
        key = resource_key(job_id)
        with self._lock:
            run = self._runs.get(key)
            if run is not None:
                run.stop(StopReason.FORGET)
        if run is not None:
            run.join(JOIN_TIMEOUT_S)
        with self._lock:
            self._runs.pop(key, None)
            self._free_nodes(key)
            with self.store.transaction() as db:
                db.execute("DELETE FROM run_tags WHERE owner = ?", (key,))
        forget_output_dirs(self.context, job_id)
        shutil.rmtree(job_dir(self.context, job_id), ignore_errors=True)  # mounts are symlinks: not followed
        self.notify()

    def forget_cluster(self, cluster_id: str) -> None:
        """The cluster is about to be deleted: stop whatever still runs on it and drop its nodes."""
        key = resource_key(cluster_id)
        with self._lock:
            runs = [run for job_key, run in self._runs.items()
                    if any(r["job"] == job_key for r in self._node_rows(key))]
            setups = [tag for (cluster, _), tag in self._setups.items() if cluster == key]
        _stop_and_wait(runs, setups, StopReason.TERMINATED)
        with self._lock:
            self.nodes.forget_cluster(key)
            with self.store.transaction() as db:
                db.execute("DELETE FROM run_tags WHERE substr(owner, 1, ?) = ?",
                           (len(f"setup:{key}:"), f"setup:{key}:"))
        shutil.rmtree(cluster_dir(self.context, cluster_id), ignore_errors=True)

    def running_jobs(self, cluster_id: str) -> list[str]:
        """Ids of the jobs running or terminating on a cluster."""
        key = resource_key(cluster_id)
        return [job["id"] for job in self.store.list(JOB_TYPE)
                if _job_cluster_key(job) == key
                and _props(job).get("executionState") in (ExecutionState.RUNNING.value,
                                                          ExecutionState.TERMINATING.value)]

    # -- the loop -------------------------------------------------------------------------------

    def _loop(self) -> None:
        timers = True
        while not self._stopping.is_set():
            # Short ticks only while nodes are preparing or leaving; otherwise notify() wakes us.
            self._wake.wait(TICK_S if timers else IDLE_TICK_S)
            self._wake.clear()
            if self._stopping.is_set():
                break
            try:
                timers = self._pass()
            except Exception:  # a bug of ours must not stop every cluster for good
                log.exception("scheduler pass failed")
                timers = True

    def _active_jobs(self) -> list[dict[str, Any]]:
        """Queued, running and terminating jobs, oldest first (finished ones are not read at all)."""
        rows = self.store.query(
            "SELECT body FROM resources WHERE type = ? AND json_extract(body, '$.properties.executionState')"
            " IN (?, ?, ?) ORDER BY created",
            (stored_type(JOB_TYPE), ExecutionState.QUEUED.value, ExecutionState.RUNNING.value, ExecutionState.TERMINATING.value))
        return [json.loads(r["body"]) for r in rows]

    def _has_jobs(self, cluster_key: str) -> bool:
        """Whether any job, finished or not, names the cluster (auto-scale's initialNodeCount ends then)."""
        rows = self.store.query(
            "SELECT 1 FROM resources WHERE type = ? AND lower(json_extract(body, '$.properties.cluster.id')) = ?"
            " LIMIT 1", (stored_type(JOB_TYPE), cluster_key))
        return bool(rows)

    def _pass(self) -> bool:
        """One look at every cluster; True while some node waits on a timer."""
        with self._lock:
            clusters = {resource_key(c["id"]): c for c in self.store.list(CLUSTER_TYPE)}
            jobs_by_cluster: dict[str, list[dict[str, Any]]] = {}
            for job in self._active_jobs():
                cluster_key = _job_cluster_key(job)
                if cluster_key not in clusters and _props(job).get("executionState") == ExecutionState.QUEUED.value:
                    self._fail_orphan(job)
                    continue
                jobs_by_cluster.setdefault(cluster_key, []).append(job)
            for key, cluster in clusters.items():
                self._reconcile(cluster, jobs_by_cluster.get(key, []))
            known = set(clusters)
            for key in self.nodes.clusters() - known:
                self.nodes.forget_cluster(key, only_unheld=True)
            return self.nodes.any_waiting() or bool(self._setups)

    def _fail_orphan(self, job: dict[str, Any]) -> None:
        cluster_id = (_props(job).get("cluster") or {}).get("id")
        try:
            transition_job(self.store, job["id"], ExecutionState.FAILED, errors=[job_error(
                "ClusterNotFound", f"The job's cluster {cluster_id!r} does not exist (it was deleted before the "
                                   "job could run).")])
        except (IllegalTransition, JobGone):
            pass

    # -- one cluster ----------------------------------------------------------------------------

    def _node_rows(self, cluster_key: str) -> list[dict[str, Any]]:
        return self.nodes.of_cluster(cluster_key)

    def _target(self, cluster_key: str, props: dict[str, Any], jobs: list[dict[str, Any]],
                rows: list[dict[str, Any]], now: float) -> tuple[int, int, str]:
        """(target node count, largest size it may reach, deallocation option) of a cluster whose
        unfinished jobs are ``jobs`` and whose nodes are ``rows``."""
        scale = props.get("scaleSettings") or {}
        auto = scale.get("autoScale")
        if auto:
            low = int(auto.get("minimumNodeCount") or 0)
            high = max(low, int(auto.get("maximumNodeCount") or 0))
            needed = sum(_node_count(j) for j in jobs)
            if not jobs and not self._has_jobs(cluster_key):
                needed = int(auto.get("initialNodeCount") or 0)
            # A node that became idle lately stays for the scale-down delay, as Batch AI kept one.
            recent = now - self.context.settings.scale_down_delay_s
            kept = sum(1 for r in rows if r["state"] == NodeState.RUNNING.value
                       or (r["state"] == NodeState.IDLE.value and (r["since"] or 0) > recent))
            return min(max(needed, low, kept), high), high, "waitforjobcompletion"
        manual = scale.get("manual") or {}
        target = max(0, int(manual.get("targetNodeCount") or 0))
        return target, target, str(manual.get("nodeDeallocationOption") or "requeue").lower()

    def _reconcile(self, cluster: dict[str, Any], jobs: list[dict[str, Any]]) -> None:
        props = _props(cluster)
        if str(props.get("provisioningState", "succeeded")).lower() in ("creating", "deleting", "failed"):
            return
        cluster_id, key = cluster["id"], resource_key(cluster["id"])
        settings = self.context.settings
        now = time.time()

        # Timers: leaving nodes go, prepared nodes get mounted and set up.
        for row in self._node_rows(key):
            if row["state"] == NodeState.LEAVING.value and row["job"] is None and (row["until"] or 0) <= now:
                self.nodes.remove(key, row["idx"])
            elif (row["state"] == NodeState.PREPARING.value and (row["until"] or 0) <= now
                  and (key, row["idx"]) not in self._setups):
                self._start_node_setup(cluster_id, key, row)

        # Size: grow with preparing nodes, shrink by the deallocation option.
        rows = self._node_rows(key)
        target, capacity, deallocation = self._target(key, props, jobs, rows, now)
        live = [r for r in rows if r["state"] != NodeState.LEAVING.value]
        if len(live) < target:
            used = {r["idx"] for r in rows}
            free = (i for i in range(len(rows) + target) if i not in used)
            for _ in range(target - len(live)):
                idx = next(free)
                self.nodes.add(key, idx, node_id_for(cluster_id, idx, now), until=now + settings.provision_delay_s)
        elif len(live) > target:
            self._shrink(key, live, len(live) - target, deallocation, now)

        # Gang-schedule queued jobs on idle nodes.
        idle = [r for r in self._node_rows(key) if r["state"] == NodeState.IDLE.value]
        queued = sorted((j for j in jobs if _props(j).get("executionState") == ExecutionState.QUEUED.value),
                        key=lambda j: (PRIORITY_RANK.get(str(_props(j).get("schedulingPriority", "normal")).lower(), 1),
                                       str(_props(j).get("creationTime", ""))))
        for job in queued:
            wanted = _node_count(job)
            if wanted > capacity:
                continue  # cannot fit at this cluster size: it must not hold up the others
            if wanted > len(idle):
                break     # the head waits for nodes, and so does everything behind it
            self._start_job(job, idle[:wanted])
            idle = idle[wanted:]

        self._publish(cluster_id, key, jobs)

    def _shrink(self, key: str, live: list[dict[str, Any]], excess: int, deallocation: str, now: float) -> None:
        leave_at = now + self.context.settings.deallocation_delay_s
        order = {NodeState.UNUSABLE.value: 0, NodeState.PREPARING.value: 1, NodeState.IDLE.value: 2,
                 NodeState.RUNNING.value: 3}
        # Idle nodes go longest-idle first (the others may be inside an auto-scale delay).
        for row in sorted(live, key=lambda r: (order.get(r["state"], 4),
                                               (r["since"] or 0) if r["state"] == NodeState.IDLE.value else -r["idx"])):
            if excess <= 0:
                break
            if row["state"] == NodeState.RUNNING.value:
                if deallocation == "waitforjobcompletion":
                    continue  # removed once its job ends (it is idle then)
                run = self._runs.get(row["job"] or "")
                if run is not None:
                    run.stop(StopReason.REQUEUE if deallocation == "requeue" else StopReason.NODES_REMOVED)
                # The node leaves as soon as its job's processes are gone (see _run_done).
                self.nodes.move(key, row["idx"], NodeState.LEAVING, job=row["job"], until=leave_at)
            else:
                tag = self._setups.pop((key, row["idx"]), None)
                if tag is not None:
                    stop_tagged(tag, [], grace=0)
                self.nodes.move(key, row["idx"], NodeState.LEAVING, until=leave_at)
            excess -= 1

    def _start_node_setup(self, cluster_id: str, key: str, row: dict[str, Any]) -> None:
        idx, node = row["idx"], NodeSlot(row["idx"], row["node_id"])
        tag = f"setup-{uuid.uuid4().hex[:12]}"
        self._setups[(key, idx)] = tag
        with self.store.transaction() as db:
            db.execute("INSERT OR REPLACE INTO run_tags (owner, tag) VALUES (?, ?)", (f"setup:{key}:{idx}", tag))

        def work() -> None:
            try:
                error = prepare_node(self.context, cluster_id, node, tag)
            except Exception as exc:
                log.exception("preparing node %s failed", node.node_id)
                error = job_error("NodeSetupFailed", f"Preparing node {node.node_id} failed: {type(exc).__name__}")
            with self._lock:
                if self._setups.get((key, idx)) != tag or self._stopping.is_set():
                    return  # the node was removed (or the service is stopping) meanwhile
                del self._setups[(key, idx)]
                with self.store.transaction() as db:
                    db.execute("DELETE FROM run_tags WHERE owner = ?", (f"setup:{key}:{idx}",))
                self.nodes.move(key, idx, NodeState.UNUSABLE if error else NodeState.IDLE,
                                only_from=NodeState.PREPARING)
                if error is not None:
                    self._add_cluster_error(cluster_id, error)
            self.notify()

        if (_props(self.store.get(cluster_id) or {}).get("nodeSetup") or {}):
            threading.Thread(target=work, name=f"node-setup-{node.node_id}", daemon=True).start()
        else:
            work()  # nothing to mount or run: the node is ready now

    def _add_cluster_error(self, cluster_id: str, error: dict[str, Any]) -> None:
        def change(body: dict[str, Any]) -> None:
            errors = body.setdefault("properties", {}).setdefault("errors", [])
            if error not in errors:
                errors.append(error)
        self.store.update(cluster_id, change)

    def _publish(self, cluster_id: str, key: str, jobs: list[dict[str, Any]]) -> None:
        """Write the node counts and allocation state into the cluster document when they change.

        As the recorded service did, a node that is still being added is not counted while the
        cluster is resizing (it showed 0 nodes throughout ``resizing``); it is counted once it has
        come up (idle, running or unusable)."""
        rows = self._node_rows(key)
        now = time.time()
        live = sum(1 for r in rows if r["state"] != NodeState.LEAVING.value)
        settling = sum(1 for r in rows if r["state"] in (NodeState.PREPARING.value, NodeState.LEAVING.value))

        def change(body: dict[str, Any]) -> None:
            props = body.setdefault("properties", {})
            # The stored settings: a resize may have just landed.
            target, _, _ = self._target(key, props, jobs, rows, now)
            steady = live == target and not settling
            counted = rows if steady else [r for r in rows if r["state"] != NodeState.PREPARING.value]
            ordered = node_state_counts(NodeState(row["state"]) for row in counted)
            allocation = (AllocationState.STEADY if steady else AllocationState.RESIZING).value
            if (props.get("allocationState") == allocation and props.get("currentNodeCount") == len(counted)
                    and props.get("nodeStateCounts") == ordered):
                raise _Unchanged()
            if props.get("allocationState") != allocation:
                props["allocationState"] = allocation
                props["allocationStateTransitionTime"] = utc_now()
            props["currentNodeCount"] = len(counted)
            props["nodeStateCounts"] = ordered

        try:
            self.store.update(cluster_id, change)
        except _Unchanged:
            pass

    # -- jobs -----------------------------------------------------------------------------------

    def _start_job(self, job: dict[str, Any], nodes: list[dict[str, Any]]) -> None:
        job_id, key = job["id"], resource_key(job["id"])
        cluster_key = nodes[0]["cluster"]
        run = JobRun(self.context, job_id, [NodeSlot(r["idx"], r["node_id"]) for r in nodes], self._run_done)
        # The tag is stored before anything starts, so a service killed at any point after this
        # finds the run when it starts again (and knows from the run's directory whether it ran).
        with self.store.transaction() as db:
            db.execute("INSERT OR REPLACE INTO run_tags (owner, tag) VALUES (?, ?)", (key, run.tag))
        try:
            transition_job(self.store, job_id, ExecutionState.RUNNING, allowed_from=[ExecutionState.QUEUED])
        except (IllegalTransition, JobGone):
            with self.store.transaction() as db:
                db.execute("DELETE FROM run_tags WHERE owner = ? AND tag = ?", (key, run.tag))
            return
        self.nodes.allocate(cluster_key, [row["idx"] for row in nodes], key)
        self._runs[key] = run
        run.start()

    def _free_nodes(self, job_key: str) -> None:
        self.nodes.release(job_key)

    def _run_done(self, run: JobRun, result: RunResult) -> None:
        """Called from the run's thread once all its processes are gone."""
        key = resource_key(run.job_id)
        # The job's MLflow run ends first, so that whoever sees the job ended finds its run ended.
        self._end_tracked_run(run.job_id, _run_status(self.store.get(run.job_id), result))
        with self._lock:
            if self._runs.get(key) is run:
                del self._runs[key]
            # In this order, so that a service killed in between still finds the run when it
            # starts again, until the job's end is stored (then it has nothing left to find).
            if result.stop_reason is not StopReason.FORGET:
                self._settle(run.job_id, result)
            self._free_nodes(key)
            with self.store.transaction() as db:
                db.execute("DELETE FROM run_tags WHERE owner = ? AND tag = ?", (key, run.tag))
        self.notify()

    def _end_tracked_run(self, job_id: str, status: Optional[str]) -> None:
        """End the job's MLflow run with ``status`` (None: it goes on, the job is queued again)."""
        runs = job_runs(self.context)
        if runs is None or status is None:
            return
        try:
            runs.end(job_id, status)
        except TrackingServerError as exc:
            log.warning("the MLflow run of job %s could not be ended: %s", job_id, exc)

    def _settle(self, job_id: str, result: RunResult) -> None:
        job = self.store.get(job_id)
        if job is None:
            return
        state = _props(job).get("executionState")
        try:
            if state == ExecutionState.TERMINATING.value:
                # The user's terminate wins over however the processes ended.
                errors = result.errors if result.stop_reason is StopReason.TERMINATED else [JOB_TERMINATED]
                transition_job(self.store, job_id, ExecutionState.FAILED, exit_code=result.exit_code, errors=errors)
            elif result.state is ExecutionState.QUEUED:
                transition_job(self.store, job_id, ExecutionState.QUEUED, allowed_from=[ExecutionState.RUNNING])
            else:
                transition_job(self.store, job_id, result.state, exit_code=result.exit_code, errors=result.errors,
                               allowed_from=[ExecutionState.RUNNING])
        except (IllegalTransition, JobGone) as exc:
            log.warning("job %s ended as %s but could not be marked: %s", job_id, result.state.value, exc)


def _run_status(job: Optional[dict[str, Any]], result: RunResult) -> Optional[str]:
    """How the job's MLflow run ends, as :meth:`Scheduler._settle` will end the job (None: queued again)."""
    terminating = job is not None and _props(job).get("executionState") == ExecutionState.TERMINATING.value
    if terminating or result.stop_reason in (StopReason.TERMINATED, StopReason.FORGET):
        return "KILLED"
    if result.state is ExecutionState.QUEUED:
        return None
    return "FINISHED" if result.state is ExecutionState.SUCCEEDED else "FAILED"


def _stop_and_wait(runs: list[Any], setup_tags: list[str], reason: StopReason) -> None:
    """Signal every run and setup task first, then wait: their grace periods overlap instead of adding up."""
    for run in runs:
        run.stop(reason)
    for tag in setup_tags:
        stop_tagged(tag, [], grace=0)
    for run in runs:
        run.join(JOIN_TIMEOUT_S)
