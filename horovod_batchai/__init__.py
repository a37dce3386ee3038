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
import typing as _typing

from ._shared.redaction import install_redaction as _install_redaction

if _typing.TYPE_CHECKING:  # what type checkers and IDEs read; at run time each name is imported when first used
    from ._cluster import GpuCluster
    from ._experiment import Experiment
    from ._fileshare import FileShare
    from ._job import Job
    from ._models.cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
    from ._models.errors import (ClusterNotReadyError, ConflictError, HorovodBatchAIError, InvalidSpecError,
                                 JobFailedError, LocalServiceDownError, MissingDependencyError, NotFoundError,
                                 ResourceError, ServiceErrorDetail, StoppedError, TargetError, TransferError,
                                 WaitTimeoutError)
    from ._models.job_parts import ContainerRegistry, InputDirectory, OutputDirectory
    from ._models.job_spec import HorovodJob
    from ._models.mounts import AzureBlobMount, AzureFileShareMount, FileServerMount, UnmanagedMount
    from ._models.states import AllocationState, ClusterStatus, ExecutionState, JobStatus, NodeStateCounts
    from ._models.mlflow_run import Artifact, MetricPoint
    from ._models.sweep_job import (BanditPolicy, Choice, LogNormal, MedianStoppingPolicy, Normal, QLogNormal,
                                    QLogUniform, QNormal, QUniform, Randint, TruncationSelectionPolicy)
    from ._models.sweep_spec import LogUniform, MedianStopping, Uniform
    from ._models.values import OutputFile, RemoteLogin, Usage
    from ._shared.fileshare import ShareItem
    from ._shared.metrics import EpochMetrics, MetricsTable
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
    "OutputStream", "MetricsTable", "EpochMetrics", "MetricPoint", "Artifact", "TensorBoard",
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

from ._models.constants import SDK_VERSION as __version__  # noqa: E402,F401 (the package's version)

#: the module each public name lives in (the same as the imports above): a command that shows a job
#: does not pay for importing file shares, sweeps and TensorBoard
_SOURCES = {name: module for module, names in {
    "._cluster": ["GpuCluster"], "._experiment": ["Experiment"], "._fileshare": ["FileShare"], "._job": ["Job"],
    "._models.cluster_spec": ["AutoScale", "ClusterSpec", "ImageReference", "SetupTask"],
    "._models.errors": ["ClusterNotReadyError", "ConflictError", "HorovodBatchAIError", "InvalidSpecError",
                        "JobFailedError", "LocalServiceDownError", "MissingDependencyError", "NotFoundError",
                        "ResourceError", "ServiceErrorDetail", "StoppedError", "TargetError", "TransferError",
                        "WaitTimeoutError"],
    "._models.job_parts": ["ContainerRegistry", "InputDirectory", "OutputDirectory"],
    "._models.job_spec": ["HorovodJob"],
    "._models.mounts": ["AzureBlobMount", "AzureFileShareMount", "FileServerMount", "UnmanagedMount"],
    "._models.states": ["AllocationState", "ClusterStatus", "ExecutionState", "JobStatus", "NodeStateCounts"],
    "._models.mlflow_run": ["Artifact", "MetricPoint"],
    "._models.sweep_job": ["BanditPolicy", "Choice", "LogNormal", "MedianStoppingPolicy", "Normal", "QLogNormal",
                           "QLogUniform", "QNormal", "QUniform", "Randint", "TruncationSelectionPolicy"],
    "._models.sweep_spec": ["LogUniform", "MedianStopping", "Uniform"],
    "._models.values": ["OutputFile", "RemoteLogin", "Usage"],
    "._shared.fileshare": ["ShareItem"], "._shared.metrics": ["EpochMetrics", "MetricsTable"],
    "._shared.sweep": ["SweepResults", "SweepState", "Trial", "TrialResult"], "._stream": ["OutputStream"],
    "._sweep": ["Sweep", "ClientSweep"], "._target": ["Target"], "._tensorboard": ["TensorBoard"], "._workspace": ["Workspace"],
}.items() for name in names}

if not _typing.TYPE_CHECKING:  # hidden from type checkers, which would otherwise take any name as valid
    def __getattr__(name: str) -> _typing.Any:
        """A public name, imported on first use (PEP 562) and kept, so that later uses are plain lookups."""
        module = _SOURCES.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        # `from .<module> import <name>`, through the import statement's machinery (-X importtime
        # then counts the module on its own, as it did when imported eagerly)
        value = getattr(__import__(module[1:], globals(), None, [name], 1), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))

# urllib3 logs request lines with their query strings (where SAS signatures travel) at DEBUG.
_install_redaction()
