"""horovod_batchai for asyncio: the public classes with ``async`` methods, as Microsoft's
``azure.mgmt.*.aio`` and ``azure.storage.fileshare.aio`` mirror their sync clients::

    from horovod_batchai import HorovodJob
    from horovod_batchai.aio import FileShare, Target, Workspace

    async with Target.local() as target:
        ws = await Workspace.create(target, "batchai.horovod", "batchaidev", location="eastus")
        cluster = await ws.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2)
        share = await FileShare.create(target, "batchai.horovod", "mystorageaccount", "myshare")
        await share.upload_file("cifar_cnn_distributed.py", "cifar/cifar_cnn_distributed.py")
        await cluster.wait_until_ready(timeout=900)
        experiment = await ws.create_experiment("cifar")
        spec = HorovodJob.from_file("job.json", storage_account_name=share.account_name,
                                    storage_account_key=await share.get_account_key())
        job = await experiment.submit("cifar_distributed", spec, cluster=cluster)
        async for text in job.stream("stdout.txt"):
            print(text, end="")
        await job.wait()

The arguments are the sync API's; every ``begin_<verb>`` returns an azure-core
``AsyncLROPoller`` (``await poller.result(timeout)``), every blocking form awaits it. Specs,
states, values and exceptions are the sync API's own (import them from :mod:`horovod_batchai`).

Requests go through Microsoft's aio clients and azure-core's aiohttp transport
(``pip install 'horovod-batchai[aio]'``). On Azure ML, whose client azure-ai-ml has no async API,
each call runs in a worker thread and only the waits are async (see :class:`Target`).
"""
import horovod_batchai as _sync

from .._shared.twin_docs import document_twins as _document_twins
from ._cluster import GpuCluster
from ._experiment import Experiment
from ._fileshare import FileShare
from ._job import Job
from ._stream import AsyncOutputStream
from ._sweep import ClientSweep, Sweep
from ._target import Target
from ._tensorboard import TensorBoard
from ._workspace import Workspace

__all__ = ["Target", "Workspace", "Experiment", "GpuCluster", "FileShare", "Job", "AsyncOutputStream", "TensorBoard",
           "Sweep", "ClientSweep"]

# Each aio method's field list is its sync twin's (written once there).
_document_twins({Target: _sync.Target, Workspace: _sync.Workspace, Experiment: _sync.Experiment,
                 GpuCluster: _sync.GpuCluster, FileShare: _sync.FileShare, Job: _sync.Job,
                 AsyncOutputStream: _sync.OutputStream, TensorBoard: _sync.TensorBoard, Sweep: _sync.Sweep,
                 ClientSweep: _sync.ClientSweep})
