"""``horovod-batchai``: the tutorial's ``az batchai`` and ``az storage`` verbs, for pipelines.

The tutorial, one command per step::

    horovod-batchai workspace create -g batchai.horovod -n batchaidev
    horovod-batchai experiment create -g batchai.horovod -w batchaidev -n cifar
    horovod-batchai cluster create -g batchai.horovod -w batchaidev -n nc6cluster \\
        --vm-size Standard_NC6 --vm-priority dedicated --target 4 --generate-ssh-keys --wait
    horovod-batchai share create -g batchai.horovod --account-name mystorageaccount --share-name myshare
    horovod-batchai directory create -g batchai.horovod --account-name mystorageaccount \\
        --share-name myshare --path cifar
    horovod-batchai file upload -g batchai.horovod --account-name mystorageaccount --share-name myshare \\
        --source cifar_cnn_distributed.py --path cifar
    horovod-batchai job create -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed \\
        --cluster nc6cluster --config-file job.json --storage-account-name mystorageaccount
    horovod-batchai job show -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed \\
        --query executionState
    horovod-batchai job stream -g batchai.horovod -w batchaidev -e cifar -n cifar_distributed

It runs on the local service unless told otherwise (``--target azureml`` for Azure Machine
Learning, with ``-g``/``-w`` naming the Azure ML workspace; ``--target azure`` for Batch AI's API;
or ``HOROVOD_BATCHAI_TARGET``); locally the service is started on first use and found again
through its state directory. ``--output json`` prints what every show / list / create returns as
JSON; ``--query PATH`` picks one value from it (``nodeStateCounts.runningNodeCount``).

Exit status, for pipelines: 0 success; 1 a job or an operation failed; 2 a usage or input
mistake (nothing was changed); 3 not found; 4 a wait timed out; 5 a conflict (the resource exists
with other settings, e.g. a job resubmitted with another job.json). Mistakes are reported in one line
naming the option or field and its valid form, never with a traceback; secrets (keys, passwords,
download links) are never printed.
"""
from .context import EXIT_CONFLICT, EXIT_FAILED, EXIT_NOT_FOUND, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from .run import build_parser, main

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_NOT_FOUND", "EXIT_TIMEOUT",
           "EXIT_CONFLICT"]
