"""Node states change only along the graph in runner/nodes.py; anything else is refused."""
from __future__ import annotations

import pytest

from horovod_batchai.local.core.store import Store
from horovod_batchai.local.runner.nodes import NODE_TRANSITIONS, IllegalNodeTransition, NodeTable
from horovod_batchai.local.runner.states import NodeState

CLUSTER = "/subscriptions/s/resourcegroups/rg/providers/microsoft.batchai/workspaces/ws/clusters/c"


@pytest.fixture
def nodes(tmp_path):
    store = Store(tmp_path / "state.db")
    yield NodeTable(store)
    store.close()


def _state(nodes: NodeTable, idx: int = 0) -> str:
    return next(r["state"] for r in nodes.of_cluster(CLUSTER) if r["idx"] == idx)


def test_a_node_walks_its_life_preparing_idle_running_idle_leaving_gone(nodes):
    nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    assert _state(nodes) == "preparing"
    assert nodes.move(CLUSTER, 0, NodeState.IDLE, only_from=NodeState.PREPARING)
    nodes.allocate(CLUSTER, [0], "job-key")
    assert _state(nodes) == "running" and nodes.of_cluster(CLUSTER)[0]["job"] == "job-key"
    nodes.release("job-key")
    assert _state(nodes) == "idle" and nodes.of_cluster(CLUSTER)[0]["job"] is None
    nodes.move(CLUSTER, 0, NodeState.LEAVING, until=1.0)
    nodes.remove(CLUSTER, 0)
    assert nodes.of_cluster(CLUSTER) == []


@pytest.mark.parametrize("start, to", [
    (start, to) for start in NodeState for to in [*NodeState, None]
    if to not in NODE_TRANSITIONS[start]])
def test_every_move_outside_the_graph_is_refused_and_changes_nothing(nodes, start, to):
    nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    path = {NodeState.PREPARING: [], NodeState.IDLE: [NodeState.IDLE],
            NodeState.RUNNING: [NodeState.IDLE, NodeState.RUNNING], NodeState.UNUSABLE: [NodeState.UNUSABLE],
            NodeState.LEAVING: [NodeState.LEAVING]}[start]
    for step in path:
        nodes.move(CLUSTER, 0, step)
    before = nodes.of_cluster(CLUSTER)
    with pytest.raises(IllegalNodeTransition):
        if to is None:
            nodes.remove(CLUSTER, 0)
        elif to is NodeState.RUNNING:
            nodes.allocate(CLUSTER, [0], "job-key")
        else:
            nodes.move(CLUSTER, 0, to)
    assert nodes.of_cluster(CLUSTER) == before


def test_a_node_cannot_be_added_twice_nor_a_missing_one_moved(nodes):
    nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    with pytest.raises(IllegalNodeTransition):
        nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    with pytest.raises(IllegalNodeTransition):
        nodes.move(CLUSTER, 7, NodeState.IDLE)


def test_a_guarded_move_from_a_state_the_node_has_left_is_skipped(nodes):
    nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    nodes.move(CLUSTER, 0, NodeState.LEAVING)  # removed while its setup task ran
    assert nodes.move(CLUSTER, 0, NodeState.IDLE, only_from=NodeState.PREPARING) is False
    assert _state(nodes) == "leaving"


def test_allocation_is_all_or_nothing(nodes):
    nodes.add(CLUSTER, 0, "tvm-1", until=0.0)
    nodes.add(CLUSTER, 1, "tvm-2", until=0.0)
    nodes.move(CLUSTER, 0, NodeState.IDLE)  # node 1 is still preparing
    with pytest.raises(IllegalNodeTransition):
        nodes.allocate(CLUSTER, [0, 1], "job-key")
    assert [r["state"] for r in nodes.of_cluster(CLUSTER)] == ["idle", "preparing"]
