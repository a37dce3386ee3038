"""Microsoft.BatchAI 2018-05-01: the API, its resource provider, request validation and long-running operations."""
