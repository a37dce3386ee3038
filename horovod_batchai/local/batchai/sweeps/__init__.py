"""Sweeps the local service holds and drives: Azure ML's sweep-job shape as an extension of Batch AI
2018-05-01 (see ``docs/local_service.rst``, "Sweeps")."""
