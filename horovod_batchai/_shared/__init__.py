"""What the sync and the aio public classes both run without a request: their ``*Base`` classes and
pure helpers, the pollers and waits, and the drivers that run an operation written once
(:mod:`.steps`, :mod:`.steps_async`). Imports only :mod:`horovod_batchai._models`."""
