"""Batch AI (api-version 2018-05-01) through azure-mgmt-batchai: the local service and Azure.
Its operations are written once (:mod:`.operations`); :mod:`.backend` and :mod:`.backend_async`
run them with Microsoft's sync and aio clients."""
