"""Constants and helpers shared by the SDK's tests."""
from __future__ import annotations

RG = "batchai.horovod"
ACCOUNT = "mystorageaccount"
SSH_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 test@example"


import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

FLOW_SCRIPT = """\
import argparse, os, time
import horovod.tensorflow as hvd
hvd.init()
parser = argparse.ArgumentParser()
parser.add_argument("--dir")
args = parser.parse_args()
for i in range(5):
    print(f"step {i} rank {hvd.rank()} of {hvd.size()} ✓", flush=True)
    time.sleep(0.2)
if hvd.rank() == 0:
    os.makedirs(os.path.join(args.dir, "saved_models"), exist_ok=True)
    with open(os.path.join(args.dir, "saved_models", "model.h5"), "wb") as fh:
        fh.write(open(os.path.join(args.dir, "data", "weights.bin"), "rb").read()[::-1])
"""


@dataclass
class FlowRecord:
    """What a full flow produced: the texts it saw and every secret it handled."""

    streamed: str = ""
    secrets: dict[str, str] = field(default_factory=dict)
    reprs: list[str] = field(default_factory=list)


def run_full_flow(target, tmp_path: Path) -> FlowRecord:  # type: ignore[no-untyped-def]
    """The tutorial end to end through the public API, checking as it goes that nothing was
    duplicated and every file came back byte for byte."""
    from horovod_batchai import ExecutionState, FileShare, HorovodJob, Workspace

    record = FlowRecord()
    ws = Workspace.create(target, RG, "batchaidev", location="eastus")
    password = "Flow-Pa55word!"
    cluster = ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2, admin_user_name="demo",
                                admin_password=password)
    record.secrets["admin password"] = password
    key_path = tmp_path / "ssh" / "id_rsa"
    ws.create_cluster("sshcluster", vm_size="Standard_D1", target_node_count=0, admin_user_name="demo",
                      ssh_key_path=key_path)
    private = key_path.read_text()
    record.secrets["private key"] = "".join(private.strip().splitlines()[1:-1])[:64]
    share = FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")
    for key in target.storage().storage_accounts.list_keys(RG, ACCOUNT).keys_property:
        record.secrets[f"account {key.key_name}"] = key.value

    data = tmp_path / "data"
    (data / "nested").mkdir(parents=True)
    files = {"weights.bin": os.urandom(5 * 1024 * 1024 + 7), "nested/labels.txt": "ünïcode ✓\n".encode() * 100,
             "nested/empty.bin": b""}
    for rel, payload in files.items():
        (data / rel).write_bytes(payload)
    share.upload_directory(data, "cifar/data", progress=False)
    script = tmp_path / "cifar_cnn_distributed.py"
    script.write_text(FLOW_SCRIPT)
    share.upload_file(script, "cifar/cifar_cnn_distributed.py", progress=False)

    cluster.wait_until_ready(timeout=300)
    experiment = ws.create_experiment("cifar")
    spec = HorovodJob.from_file(Path(__file__).resolve().parents[2] / "examples" / "job.json",
                                storage=share).replace(node_count=2)
    job = experiment.submit("cifar_distributed", spec, cluster=cluster)
    record.streamed = "".join(job.stream("stdout.txt"))
    status = job.wait(timeout=600)
    assert status.execution_state is ExecutionState.SUCCEEDED
    for rank in (0, 1):
        assert f"step 4 rank {rank} of 2 ✓" in record.streamed
    for f in job.list_output_files():
        if f.download_url:
            signature = parse_qs(urlparse(f.download_url).query)["sig"][0]
            record.secrets[f"sas {f.name}"] = signature
            record.secrets[f"sas {f.name} (as sent)"] = quote(signature, safe="")
    token = target.credential().get_token("https://management.azure.com/.default").token
    record.secrets["bearer token signature"] = token.rsplit(".", 1)[-1]

    # everything comes back byte for byte
    assert job.download("stdout.txt", tmp_path / "stdout.txt").read_text(encoding="utf-8") == record.streamed
    copy = share.download_directory("cifar/data", tmp_path / "copy", progress=False)
    assert {p.relative_to(tmp_path / "copy").as_posix(): p.read_bytes() for p in copy} == files
    model = share.download_file("cifar/saved_models/model.h5", tmp_path / "model.h5", progress=False)
    assert model.read_bytes() == files["weights.bin"][::-1]

    # and nothing exists twice, however often a request was retried
    assert [w.name for w in Workspace.list(target)] == ["batchaidev"]
    assert sorted(c.name for c in ws.list_clusters()) == ["nc6cluster", "sshcluster"]
    assert [e.name for e in ws.list_experiments()] == ["cifar"]
    assert [j.name for j in experiment.list_jobs()] == ["cifar_distributed"]
    assert [a.name for a in target.storage().storage_accounts.list_by_resource_group(RG)] == [ACCOUNT]
    assert [s.name for s in share._service_client().list_shares()] == ["myshare"]
    record.reprs = [repr(o) for o in (target, ws, cluster, share, experiment, job, spec, share.mount(),
                                      job.list_output_files())]
    record.reprs.append(str(spec.to_dict()))

    cluster.resize(0)
    job.delete()
    cluster.delete()
    share.delete(delete_account=True)
    ws.delete(delete_resource_group=True)
    assert Workspace.list(target) == []
    return record


SECRET_SHAPES = [re.compile(r"sig=[A-Za-z0-9%+/=]{20,}"), re.compile(r"AccountKey=\S+"),
                 re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")]
