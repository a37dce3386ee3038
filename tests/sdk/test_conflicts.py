"""Creating a job or cluster under a name that exists: the same settings return what exists; other
settings -- secrets, keys and passwords included, which the service never shows -- are a
ConflictError naming the differing fields and never their values."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from horovod_batchai import ConflictError, Experiment, FileShare, GpuCluster, HorovodJob, Target, Workspace

from sdk_support import ACCOUNT, RG, SSH_KEY

BASE = Path(__file__).resolve().parent / "good_job_json" / "base.json"


@pytest.fixture
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("conflicts")


def _spec(share: FileShare, **changes: object) -> HorovodJob:
    spec = HorovodJob(script="$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/sleep.py", mounts=(share.mount(),),
                      secrets={"TOKEN": "first-S3cret"}, environment_variables={"EPOCHS": "2"})
    return spec.replace(**changes) if changes else spec


def test_the_same_job_again_returns_it(experiment: Experiment, cluster: GpuCluster, share: FileShare) -> None:
    job = experiment.submit("same", _spec(share), cluster=cluster)
    again = experiment.submit("same", _spec(share), cluster=cluster)
    assert again == job and again.status.creation_time == job.status.creation_time
    assert [j.name for j in experiment.list_jobs()] == ["same"]


@pytest.mark.parametrize("changes, named", [
    ({"secrets": {"TOKEN": "second-S3cret"}}, "secrets (values)"),
    ({"environment_variables": {"EPOCHS": "3"}}, "environment_variables"),
    ({"priority": "high"}, "priority"),
    ({"node_count": 2}, "node_count"),
])
def test_a_job_with_other_settings_is_a_conflict_naming_them(changes: dict, named: str, experiment: Experiment,
                                                             cluster: GpuCluster, share: FileShare) -> None:
    job = experiment.submit("taken", _spec(share), cluster=cluster)
    with pytest.raises(ConflictError) as info:
        experiment.submit("taken", _spec(share, **changes), cluster=cluster)
    message = str(info.value)
    assert named in message and "first-S3cret" not in message and "second-S3cret" not in message, message
    assert info.value.resource == job.id
    assert [j.name for j in experiment.list_jobs()] == ["taken"]
    assert job.spec.environment_variables == {"EPOCHS": "2"}  # nothing stored changed


def test_a_job_mounting_with_another_account_key_is_a_conflict(target: Target, experiment: Experiment,
                                                               cluster: GpuCluster, share: FileShare) -> None:
    keys = [k.value for k in target.storage().storage_accounts.list_keys(RG, ACCOUNT).keys_property]
    assert len(keys) == 2 and share.mount().account_key == keys[0]
    experiment.submit("keyed", _spec(share), cluster=cluster)
    other_key = _spec(share, mounts=(share.mount().__class__.for_share(ACCOUNT, "myshare", account_key=keys[1]),))
    with pytest.raises(ConflictError) as info:  # key2 is valid too: only the service can see it differs
        experiment.submit("keyed", other_key, cluster=cluster)
    assert "mounts (account_key)" in str(info.value) and keys[0] not in str(info.value)
    assert keys[1] not in str(info.value)


def test_a_job_json_conflict_names_the_property(tmp_path: Path, experiment: Experiment, cluster: GpuCluster,
                                                share: FileShare) -> None:
    document = json.loads(BASE.read_text())
    spec = HorovodJob.from_dict(document, storage=share, source="job.json")
    experiment.submit("from-file", spec, cluster=cluster)
    document["properties"]["horovodSettings"]["commandLineArgs"] += " --epochs 3"
    with pytest.raises(ConflictError, match=r"properties\.horovodSettings\.commandLineArgs"):
        experiment.submit("from-file", HorovodJob.from_dict(document, storage=share, source="job.json"),
                          cluster=cluster)


def test_the_same_cluster_again_returns_it_and_another_password_is_a_conflict(workspace: Workspace) -> None:
    first = workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                                     admin_password="First-Pa55word")
    assert workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                                    admin_password="First-Pa55word") == first
    # the size is not part of it: it changes through resize
    assert workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=1, admin_user_name="demo",
                                    admin_password="First-Pa55word") == first
    with pytest.raises(ConflictError) as info:
        workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                                 admin_password="Second-Pa55word")
    message = str(info.value)
    assert "admin_password" in message and "Pa55word" not in message, message
    with pytest.raises(ConflictError, match="admin_user_name"):
        workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=0, admin_user_name="other",
                                 admin_password="First-Pa55word")
    with pytest.raises(ConflictError, match="ssh_public_key"):
        workspace.create_cluster("pw", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                                 admin_password="First-Pa55word", ssh_public_key=SSH_KEY)
    assert workspace.list_clusters() == [first]
