"""Microsoft.BatchAI 2018-05-01: the API, its backend, request validation and long-running operations."""
