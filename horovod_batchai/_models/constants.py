"""Values every part of the SDK agrees on, each defined here once."""
from __future__ import annotations

__all__ = ["SDK_VERSION", "STDOUTERR", "DEALLOCATION_OPTIONS", "DEFAULT_POLL_INTERVAL", "LOCAL_POLL_INTERVAL", "DEFAULT_LRO_TIMEOUT",
           "DEFAULT_LOCATION", "DEFAULT_SKU", "JOB_SCHEMA_URL", "SCHEMA_BASE"]

#: this package's version (setup.py reads it from here)
SDK_VERSION = "0.1.0"

#: the output directory id of a job's stdout.txt, stderr.txt and the files its script writes beside them
STDOUTERR = "stdouterr"

#: what happens to the jobs on nodes a resize removes (Batch AI's words; requeue is its default)
DEALLOCATION_OPTIONS = ("requeue", "terminate", "waitforjobcompletion")

#: seconds between status polls on Azure: about what ``az batchai job wait`` used
DEFAULT_POLL_INTERVAL = 15.0
#: seconds between status polls on the local service, which answers in milliseconds
LOCAL_POLL_INTERVAL = 0.25

#: how long a blocking form waits for its operation unless the caller gives ``timeout``
DEFAULT_LRO_TIMEOUT = 3600.0

#: where workspaces, storage accounts and their resource groups go unless told otherwise (the tutorial's)
DEFAULT_LOCATION = "eastus"
#: a storage account's SKU unless told otherwise (the tutorial's)
DEFAULT_SKU = "Standard_LRS"

#: the Batch AI job.json schema a job's ``to_dict()`` names, and job files are checked against
SCHEMA_BASE = "https://raw.githubusercontent.com/Azure/BatchAI/master/schemas/2018-05-01/"
JOB_SCHEMA_URL = SCHEMA_BASE + "job.json"
