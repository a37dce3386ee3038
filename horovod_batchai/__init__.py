"""horovod-batchai: run the Azure Batch AI Horovod tutorial from Python -- locally, on Azure
Machine Learning, or on Batch AI's API.

Every step of the tutorial is a method here, built on Microsoft's own clients::

    from horovod_batchai import Target, Workspace, FileShare, HorovodJob

    target = Target.local()     # or Target.azureml(subscription_id, resource_group, workspace) / Target.from_env()
    ws = Workspace.create(target, "batchai.horovod", "batchaidev", location="eastus")
    cluster = ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=4)
    share = FileShare.create(target, "batchai.horovod", "mystorageaccount", "myshare")
    share.upload_file("cifar_cnn_distributed.py", "cifar/cifar_cnn_distributed.py")
    cluster.wait_until_ready(timeout=900)
    job = ws.create_experiment("cifar").submit(
        "cifar_distributed", HorovodJob.from_file("job.json", storage=share), cluster=cluster)
    for text in job.stream("stdout.txt"):
        print(text, end="")
    job.wait()
    share.download_file("cifar/saved_models/keras_cifar10_trained_model.h5", ".")
    cluster.resize(0)

This module is the whole public surface; everything else is private.
"""
from ._cluster import GpuCluster
from ._experiment import Experiment
from ._fileshare import FileShare
from ._job import Job
from ._models.cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from ._models.errors import (ClusterNotReadyError, ConflictError, HorovodBatchAIError, InvalidSpecError, JobFailedError,
                             LocalServiceDownError, MissingDependencyError, NotFoundError, ResourceError,
                             ServiceErrorDetail, StoppedError, TargetError, TransferError, WaitTimeoutError)
from ._models.job_parts import ContainerRegistry, InputDirectory, OutputDirectory
from ._models.job_spec import HorovodJob
from ._models.mounts import AzureBlobMount, AzureFileShareMount, FileServerMount, UnmanagedMount
from ._models.states import AllocationState, ClusterStatus, ExecutionState, JobStatus, NodeStateCounts
from ._models.sweep_job import (BanditPolicy, Choice, LogNormal, MedianStoppingPolicy, Normal, QLogNormal, QLogUniform,
                                QNormal, QUniform, Randint, TruncationSelectionPolicy)
from ._models.sweep_spec import LogUniform, MedianStopping, Uniform
from ._models.values import OutputFile, RemoteLogin, Usage
from ._shared.fileshare import ShareItem
from ._shared.metrics import EpochMetrics, MetricsTable
from ._shared.redaction import install_redaction as _install_redaction
from ._shared.sweep import SweepResults, SweepState, Trial, TrialResult
from ._stream import OutputStream
from ._sweep import ClientSweep, Sweep
from ._target import Target
from ._tensorboard import TensorBoard
from ._workspace import Workspace

__all__ = [
    # where to run
    "Target",
    # resources
    "Workspace", "Usage", "Experiment", "GpuCluster", "RemoteLogin", "FileShare", "ShareItem", "Job", "OutputFile",
    "OutputStream", "MetricsTable", "EpochMetrics", "TensorBoard",
    # sweeps
    "Sweep", "ClientSweep", "SweepResults", "SweepState", "Trial", "TrialResult", "Choice", "Uniform", "LogUniform",
    "Normal", "LogNormal", "QUniform", "QLogUniform", "QNormal", "QLogNormal", "Randint", "BanditPolicy",
    "MedianStoppingPolicy", "TruncationSelectionPolicy", "MedianStopping",
    # specs
    "HorovodJob", "InputDirectory", "OutputDirectory", "ContainerRegistry", "ClusterSpec", "AutoScale",
    "ImageReference", "SetupTask", "AzureFileShareMount", "AzureBlobMount", "FileServerMount", "UnmanagedMount",
    # states
    "ExecutionState", "AllocationState", "NodeStateCounts", "ClusterStatus", "JobStatus",
    # errors
    "HorovodBatchAIError", "InvalidSpecError", "TargetError", "LocalServiceDownError", "ResourceError", "NotFoundError",
    "ConflictError", "TransferError", "WaitTimeoutError", "StoppedError", "ClusterNotReadyError", "JobFailedError",
    "ServiceErrorDetail", "MissingDependencyError",
]

__version__ = "0.1.0"

# urllib3 logs request lines with their query strings (where SAS signatures travel) at DEBUG.
_install_redaction()
