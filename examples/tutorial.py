#!/usr/bin/env python
"""The Batch AI Horovod tutorial, step by step, through horovod_batchai's public API.

Each step is the tutorial's ``az`` command, done from Python: a resource group and workspace,
the experiment ``cifar``, the cluster ``nc6cluster`` (Standard_NC6, dedicated, generated SSH
keys) waited on until it is steady and idle, the storage account and share ``myshare`` with the
directory ``cifar``, the training script uploaded there, the job from the tutorial's
``job.json`` (kept verbatim next to this file), its ``executionState`` and the cluster's
``nodeStateCounts`` while it runs, its output files, its streamed ``stdout.txt``, the trained
model downloaded, the cluster resized to 0 and everything deleted.

    python examples/tutorial.py                  # on the local service (the default)
    python examples/tutorial.py --nodes 4        # the tutorial's node count
    python examples/tutorial.py --target azure --subscription <id> --storage-account <unique name>
    python examples/tutorial.py --target azureml --subscription <id> --resource-group <rg> \
        --workspace <Azure ML workspace> --storage-account <unique name> [--yes]

On Azure ML (``--target azureml``) the workspace must exist; the script first prints what it will
create (the cluster's size, VM size and priority, the share and its datastore) and goes on only
after ``--yes`` or, at a terminal, a "y". The job runs in the image built from the package's
Dockerfile, because job.json's TensorFlow 1.8 image cannot run ``training``.

Locally, the job runs as real ``horovodrun`` processes on this machine, training the real model
for a few epochs. Its data is real CIFAR-10 when ``--data-dir`` names it, when Keras' cache holds
it or when it can be downloaded; otherwise a small generated dataset in the official format (the
output says which). The script itself never imports TensorFlow: the job does.

Exit status: 0 when the tutorial completed, 1 when the job failed or a request did, 2 for a
mistake in the options.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Optional, Sequence

from horovod_batchai import (ClusterStatus, ExecutionState, FileShare, GpuCluster, HorovodBatchAIError, HorovodJob,
                             InvalidSpecError, Job, JobFailedError, OutputFile, Target, Workspace)

# --- The tutorial's names and settings ---------------------------------------------------------
RESOURCE_GROUP = "batchai.horovod"
LOCATION = "eastus"
WORKSPACE = "batchaidev"
EXPERIMENT = "cifar"
CLUSTER = "nc6cluster"
VM_SIZE = "Standard_NC6"
AZUREML_VM_SIZE = "Standard_NC6s_v3"   # Standard_NC6 was retired in 2023; NC6s_v3 is one V100 per node
STORAGE_ACCOUNT = "mystorageaccount"
SHARE = "myshare"
DIRECTORY = "cifar"
JOB = "cifar_distributed"
TUTORIAL_NODES = 4

HERE = Path(__file__).resolve().parent
JOB_JSON = HERE / "job.json"
TRAINING_SCRIPT = HERE.parent / "training" / "cifar_cnn_distributed.py"
SCRIPT_IN_SHARE = f"{DIRECTORY}/cifar_cnn_distributed.py"        # where job.json looks for it
MODEL_IN_SHARE = f"{DIRECTORY}/saved_models/keras_cifar10_trained_model.h5"
DATA_IN_SHARE = f"{DIRECTORY}/cifar-10-batches-py"
DATA_ON_NODE = f"$AZ_BATCHAI_JOB_MOUNT_ROOT/{SHARE}/{DATA_IN_SHARE}"  # the same directory, as a node sees it

# Real CIFAR-10: the official python archive, and where Keras keeps it once extracted.
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
CIFAR10_FILES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch", "batches.meta")

# Locally the job shares this machine's cores, so it trains briefly by default.
LOCAL_EPOCHS = 3
LOCAL_STEPS_ON_REAL_DATA = 100   # steps per epoch on real CIFAR-10 (a whole pass is 50000 / 32 / nodes)
SYNTHETIC_TRAIN, SYNTHETIC_TEST = 2000, 500
ACCURACY_LINE = re.compile(r"Test accuracy:\s*([-+0-9.eE]+)")


def machine_nodes() -> int:
    """The local node count: one node per core, up to the tutorial's 4. Each local node runs one
    Horovod process, and TensorFlow processes that outnumber the cores only slow each other down."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(TUTORIAL_NODES, cores))


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Run the Batch AI Horovod tutorial (CIFAR-10 on a GPU cluster) end to end.")
    parser.add_argument("--target", choices=("local", "azure", "azureml"),
                        default=os.environ.get("HOROVOD_BATCHAI_TARGET", "local").strip().lower() or "local",
                        help="where to run (default: $HOROVOD_BATCHAI_TARGET, else local)")
    parser.add_argument("--subscription", default=os.environ.get("AZURE_SUBSCRIPTION_ID"),
                        help="Azure subscription id (--target azure/azureml; default: $AZURE_SUBSCRIPTION_ID)")
    parser.add_argument("--resource-group", default=os.environ.get("AZURE_RESOURCE_GROUP"),
                        help="the Azure ML workspace's resource group (--target azureml; default: "
                             "$AZURE_RESOURCE_GROUP)")
    parser.add_argument("--workspace", default=os.environ.get("AZUREML_WORKSPACE_NAME"),
                        help="an existing Azure ML workspace (--target azureml; default: $AZUREML_WORKSPACE_NAME)")
    parser.add_argument("--vm-size", default=None,
                        help=f"the cluster's VM size (default: {VM_SIZE}; azureml {AZUREML_VM_SIZE}, since "
                             f"Azure retired {VM_SIZE})")
    parser.add_argument("--yes", action="store_true",
                        help="--target azureml: create the cluster and datastore without asking")
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="the local service's state directory (default: $HOROVOD_BATCHAI_STATE_DIR, "
                             "else ~/.horovod-batchai/local)")
    parser.add_argument("--nodes", type=int, default=None,
                        help=f"cluster and job node count (default: local {machine_nodes()}, one per core of "
                             f"this machine up to {TUTORIAL_NODES}; azure {TUTORIAL_NODES}, the tutorial's)")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"training epochs (default: local {LOCAL_EPOCHS}; azure the script's own)")
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help=f"optimizer steps per epoch (default: a whole pass; {LOCAL_STEPS_ON_REAL_DATA} "
                             "locally on real CIFAR-10)")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--data-dir", type=Path, default=None,
                      help="real CIFAR-10 in the official python format (data_batch_1..5, test_batch, "
                           "batches.meta), uploaded to the share for the job")
    data.add_argument("--synthetic", action="store_true",
                      help="train on a generated dataset in CIFAR-10's format, without looking for the real one")
    parser.add_argument("--storage-account", default=STORAGE_ACCOUNT,
                        help=f"storage account name (default: {STORAGE_ACCOUNT}; on Azure it must be unique)")
    parser.add_argument("--ssh-key", type=Path, default=None,
                        help="private key whose .pub the cluster's admin user accepts; generated when missing "
                             "(default: ~/.ssh/id_rsa)")
    parser.add_argument("--download-to", type=Path, default=Path("tutorial-output"),
                        help="local directory for the trained model (default: ./tutorial-output)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for the job (default: local 1800, azure 10800)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the resource group (and the local service) instead of deleting them")
    args = parser.parse_args(argv)
    if args.target in ("azure", "azureml") and not args.subscription:
        parser.error(f"--target {args.target} needs --subscription or $AZURE_SUBSCRIPTION_ID")
    if args.target == "azureml":
        for option in ("resource_group", "workspace"):
            if not getattr(args, option):
                parser.error(f"--target azureml needs --{option.replace('_', '-')}")
    args.vm_size = args.vm_size or (AZUREML_VM_SIZE if args.target == "azureml" else VM_SIZE)
    for name in ("nodes", "epochs", "steps_per_epoch"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')}: expected an integer >= 1, got {value}")
    if args.timeout is not None and not args.timeout > 0:
        parser.error(f"--timeout: expected seconds > 0, got {args.timeout}")
    # Azure's rule for account names, checked here because the account is created after the cluster.
    if not re.fullmatch(r"[a-z0-9]{3,24}", args.storage_account):
        parser.error(f"--storage-account: {args.storage_account!r} is not a storage account name; "
                     "expected 3-24 lower-case letters or digits")
    if args.data_dir is not None:  # checked before anything is created
        found = next((d for d in (args.data_dir, args.data_dir / "cifar-10-batches-py") if is_cifar10(d)), None)
        if found is None:
            parser.error(f"--data-dir: {str(args.data_dir)!r} does not hold CIFAR-10; expected a directory with "
                         f"{', '.join(CIFAR10_FILES)} (or its parent)")
        args.data_dir = found
    local = args.target == "local"
    args.nodes = args.nodes or (machine_nodes() if local else TUTORIAL_NODES)
    args.epochs = args.epochs or (LOCAL_EPOCHS if local else None)
    args.timeout = args.timeout or (1800.0 if local else 10800.0)
    return args


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


# --- Data ----------------------------------------------------------------------------------------
def is_cifar10(directory: Path) -> bool:
    return all((directory / name).is_file() for name in CIFAR10_FILES)


def keras_cache() -> Path:
    """Where ``keras.datasets.cifar10`` keeps the extracted archive."""
    base = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(base) / "datasets" / "cifar-10-batches-py"


def download_cifar10(timeout: float = 10.0) -> Optional[Path]:
    """Download and extract the official archive into Keras' cache; None when it cannot be had."""
    cache = keras_cache()
    cache.parent.mkdir(parents=True, exist_ok=True)
    archive = cache.parent / "cifar-10-python.tar.gz.partial"
    try:
        with urllib.request.urlopen(CIFAR10_URL, timeout=timeout) as response, open(archive, "wb") as fh:
            shutil.copyfileobj(response, fh, 1 << 20)
    except OSError as err:  # URLError, timeouts, refused connections
        archive.unlink(missing_ok=True)
        print(f"   could not download {CIFAR10_URL}: {getattr(err, 'reason', err)}")
        return None
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != CIFAR10_SHA256:
        archive.unlink()
        print(f"   the download from {CIFAR10_URL} is not the official archive (sha256 {digest})")
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(cache.parent, filter="data")
    archive.unlink()
    return cache if is_cifar10(cache) else None


def choose_data(args: argparse.Namespace, workdir: Path) -> tuple[Optional[Path], bool]:
    """(local directory to upload for the job, whether it is real CIFAR-10). On Azure without
    --data-dir nothing is uploaded: the job downloads CIFAR-10 itself, as the tutorial's did."""
    if args.data_dir is not None:
        print(f"   real CIFAR-10 from {args.data_dir}")
        return args.data_dir, True
    if args.target in ("azure", "azureml"):
        print("   the job downloads CIFAR-10 itself (keras.datasets.cifar10), as in the tutorial")
        return None, True
    if not args.synthetic:
        if is_cifar10(keras_cache()):
            print(f"   real CIFAR-10 from Keras' cache, {keras_cache()}")
            return keras_cache(), True
        print(f"   CIFAR-10 is not in Keras' cache ({keras_cache()}); downloading it")
        downloaded = download_cifar10()
        if downloaded is not None:
            print(f"   real CIFAR-10, downloaded to {downloaded}")
            return downloaded, True
    from training.synthetic import write_synthetic_cifar10  # numpy only; no TensorFlow
    generated = write_synthetic_cifar10(workdir / "cifar-10-batches-py", num_train=SYNTHETIC_TRAIN,
                                        num_test=SYNTHETIC_TEST)
    print(f"   NOT CIFAR-10: training on a GENERATED dataset in CIFAR-10's official format "
          f"({SYNTHETIC_TRAIN} training and {SYNTHETIC_TEST} test images of coloured stripes, 10 classes),")
    print("   so the test accuracy below says nothing about CIFAR-10. Give --data-dir for the real data.")
    return generated, False


# --- Printing what the tutorial shows ----------------------------------------------------------
def node_counts(cluster: GpuCluster) -> dict[str, int]:
    """``az batchai cluster show --query nodeStateCounts``."""
    counts = cluster.status().node_state_counts
    return {"idleNodeCount": counts.idle, "leavingNodeCount": counts.leaving,
            "preparingNodeCount": counts.preparing, "runningNodeCount": counts.running,
            "unusableNodeCount": counts.unusable}


def file_table(files: Sequence[OutputFile]) -> str:
    """``az batchai job file list --output table``."""
    rows = [(f.name, "directory" if f.is_directory else "file", "" if f.size is None else str(f.size),
             f.last_modified.isoformat() if f.last_modified else "") for f in files]
    headers = ("Name", "Type", "Size", "Modified")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i == 2 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def watch_until_started(job: Job, cluster: GpuCluster, timeout: float) -> ExecutionState:
    """Print the job's executionState and the cluster's nodeStateCounts whenever they change,
    until the job leaves the queue (``az batchai job show`` / ``cluster show``, repeated)."""
    deadline = time.monotonic() + timeout
    last: Optional[tuple[str, str]] = None
    while True:
        state = job.refresh().execution_state
        counts = node_counts(cluster)
        now = (state.value, json.dumps(counts))
        if now != last:
            print(f"   executionState: {state.value:<9} nodeStateCounts: {now[1]}", flush=True)
            last = now
        if state is not ExecutionState.QUEUED or time.monotonic() > deadline:
            return state
        time.sleep(job.target.default_poll_interval)


# --- The tutorial ------------------------------------------------------------------------------
def run(target: Target, args: argparse.Namespace, workdir: Path) -> int:
    azureml = args.target == "azureml"
    group = args.resource_group if azureml else RESOURCE_GROUP
    if azureml:
        heading(f"Azure ML workspace {args.workspace} (it must exist)")
        workspace = Workspace.get(target, group, args.workspace)
    else:
        heading(f"Resource group {RESOURCE_GROUP} and workspace {WORKSPACE}")
        workspace = Workspace.create(target, RESOURCE_GROUP, WORKSPACE, location=LOCATION)
    print(f"   {workspace.id}")

    heading(f"Experiment {EXPERIMENT}")
    experiment = workspace.create_experiment(EXPERIMENT)
    print(f"   {experiment.id}")

    heading(f"GPU cluster {CLUSTER}: {args.nodes} x {args.vm_size}, dedicated, generated SSH keys")
    cluster = workspace.create_cluster(CLUSTER, vm_size=args.vm_size, vm_priority="dedicated",
                                       target_node_count=args.nodes, generate_ssh_keys=True,
                                       ssh_key_path=args.ssh_key)
    status = cluster.status()
    if status.target_node_count != args.nodes:  # left by an earlier run (--keep) with another size
        print(f"   the cluster exists with {status.target_node_count} node(s); resizing it to {args.nodes}")
        cluster.begin_resize(args.nodes)  # started; wait_until_ready below waits for it
        status = cluster.status()
    print(status.table())
    print("   (provisioning goes on while the storage is set up)")

    heading(f"Storage account {args.storage_account}, share {SHARE}, directory {DIRECTORY}")
    share = FileShare.create(target, group, args.storage_account, SHARE,
                             location=workspace.location or LOCATION)
    share.create_directory(DIRECTORY)
    print(f"   {share.url}/{DIRECTORY}")

    heading(f"Training script -> {SHARE}/{SCRIPT_IN_SHARE}")
    uploaded = share.upload_file(TRAINING_SCRIPT, SCRIPT_IN_SHARE, progress=False)
    print(f"   {TRAINING_SCRIPT.name}: {uploaded.size} bytes")

    heading("Training data")
    data_dir, real = choose_data(args, workdir)
    if data_dir is not None:
        items = share.upload_directory(data_dir, DATA_IN_SHARE, progress=False)
        print(f"   uploaded {len(items)} files, {sum(i.size or 0 for i in items)} bytes, to {SHARE}/{DATA_IN_SHARE}")

    heading(f"Waiting for {CLUSTER} to be steady with its nodes idle")
    shown: list[str] = []

    def show(status: ClusterStatus) -> None:  # the table once, then a row per change
        lines = status.table().splitlines()
        print("\n".join(lines if not shown else lines[-1:]), flush=True)
        shown.append(lines[-1])

    cluster.wait_until_ready(timeout=900, on_status=show)

    heading(f"Job {JOB} from {JOB_JSON.name}")
    spec = HorovodJob.from_file(JOB_JSON, storage=share)
    extra: list[str] = []
    if data_dir is not None:
        extra.append(f"--data-dir={DATA_ON_NODE}")
    if args.epochs:
        extra.append(f"--epochs={args.epochs}")
    steps = args.steps_per_epoch or (LOCAL_STEPS_ON_REAL_DATA if args.target == "local" and real else None)
    if steps:
        extra.append(f"--steps-per-epoch={steps}")
    changes: dict[str, object] = {}
    if args.nodes != spec.node_count:
        print(f"   nodeCount: {spec.node_count} in {JOB_JSON.name}, {args.nodes} here (--nodes)")
        changes["node_count"] = args.nodes
        if spec.process_count is not None:
            changes["process_count"] = args.nodes
    if extra:
        print(f"   commandLineArgs: {JOB_JSON.name}'s {spec.arguments!r}, followed by {' '.join(extra)!r}")
        changes["arguments"] = " ".join([spec.arguments, *extra]).strip()
    if azureml:
        print(f"   containerSettings and jobPreparation: {JOB_JSON.name}'s TensorFlow 1.8 image cannot run training; "
              "the job runs in the image of the package's Dockerfile (TensorFlow 2.15.1, Horovod 0.28.1)")
        changes.update(container_image=None, job_preparation=None)
    if not changes:
        print(f"   exactly as {JOB_JSON.name} says")
    spec = spec.replace(**changes)
    if any(j.name == JOB for j in experiment.list_jobs()):
        print(f"   job {JOB} is left from an earlier run; deleting it first")
        experiment.get_job(JOB).delete()
    job = experiment.submit(JOB, spec, cluster=cluster)
    print(f"   submitted {job.id}")

    heading("executionState and nodeStateCounts")
    watch_until_started(job, cluster, timeout=args.timeout)

    heading("Output files so far (stdouterr)")
    print(file_table(job.list_output_files()))

    heading("stdout.txt, streamed")
    log: list[str] = []
    for text in job.stream("stdout.txt", timeout=args.timeout):  # ends once the job has ended
        sys.stdout.write(text)
        sys.stdout.flush()
        log.append(text)
    accuracies = ACCURACY_LINE.findall("".join(log))
    accuracy = accuracies[-1] if accuracies else None

    heading(f"Job {JOB} result")
    try:
        final = job.wait(timeout=60)
    except JobFailedError as err:
        print(err)
        print(f"   resizing {CLUSTER} to 0 nodes; the resources are kept so the logs can be read")
        cluster.resize(0)
        return 1
    print(f"   executionState: {final.execution_state.value}, exit code {final.exit_code}")

    heading("Output files (stdouterr)")
    print(file_table(job.list_output_files()))

    heading("Trained model")
    args.download_to.mkdir(parents=True, exist_ok=True)
    model = share.download_file(MODEL_IN_SHARE, args.download_to, progress=False)
    print(f"   {SHARE}/{MODEL_IN_SHARE} -> {model.resolve()} ({model.stat().st_size} bytes)")
    data_name = "CIFAR-10" if real else "the generated dataset (not CIFAR-10)"
    print(f"   Test accuracy: {accuracy if accuracy is not None else 'not found in stdout.txt'} on {data_name}")

    heading(f"Resizing {CLUSTER} to 0 nodes")
    print(cluster.resize(0).table())  # returns once the cluster is steady with no nodes

    if args.keep:
        heading(f"Keeping resource group {group} (--keep)")
    elif azureml:
        heading(f"Deleting cluster {CLUSTER} (the workspace, storage account and datastore are kept)")
        cluster.delete()
        print("   deleted")
    else:
        heading(f"Deleting resource group {RESOURCE_GROUP}: workspace, cluster, experiment, job, storage")
        workspace.delete(delete_resource_group=True)
        print("   deleted")
    return 0 if accuracy is not None else 1


def confirm_azureml_plan(args: argparse.Namespace) -> bool:
    """Say what will be created (and paid for) on Azure ML; go on after --yes or a "y" typed at
    a terminal."""
    print(f"On Azure ML workspace {args.workspace} (resource group {args.resource_group}) this will create:")
    print(f"  - AmlCompute cluster {CLUSTER}: {args.nodes} x {args.vm_size}, priority dedicated "
          f"(billed while its nodes run; resized to 0 and deleted at the end unless --keep)")
    print(f"  - storage account {args.storage_account} with file share {SHARE}, registered as datastore "
          f"{args.storage_account}_{SHARE} (kept)")
    print(f"  - job {JOB} in experiment {EXPERIMENT}, in an image built from the package's Dockerfile")
    if args.yes:
        return True
    if not sys.stdin.isatty():
        print("error: --yes is needed to create these when not at a terminal", file=sys.stderr)
        return False
    return input("Create them? [y/N] ").strip().lower() in ("y", "yes")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    started_service = False
    if args.target == "local":
        from horovod_batchai.local import default_state_dir, find_running
        args.state_dir = (args.state_dir or default_state_dir()).expanduser()
        started_service = find_running(args.state_dir) is None
        target = Target.local(state_dir=args.state_dir)
        print(f"Target: the local service (state in {args.state_dir}); jobs run as horovodrun processes here")
    elif args.target == "azureml":
        if not confirm_azureml_plan(args):
            return 2
        target = Target.azureml(args.subscription, args.resource_group, args.workspace)
        print(f"Target: Azure ML workspace {args.workspace} in {args.resource_group}, subscription {args.subscription}")
    else:
        target = Target.azure(args.subscription)
        print(f"Target: Azure, subscription {args.subscription}")
    try:
        with target, tempfile.TemporaryDirectory(prefix="horovod-batchai-tutorial-") as workdir:
            return run(target, args, Path(workdir))
    except InvalidSpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except HorovodBatchAIError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if started_service and not args.keep:
            from horovod_batchai.local import stop_daemon
            if stop_daemon(args.state_dir):
                print(f"\nStopped the local service this run started ({args.state_dir}).")
        elif args.target == "local":
            print(f"\nThe local service keeps running; `horovod-batchai --state-dir {args.state_dir} local stop` "
                  "stops it.")


if __name__ == "__main__":
    sys.exit(main())
