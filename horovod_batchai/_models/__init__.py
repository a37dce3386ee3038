"""What the SDK is about, with no I/O: specs (jobs, clusters, mounts, sweeps) and the job.json form,
states, values, the records backends hand back, errors, checks of names and fields, constants.
Nothing here imports the layers above it (``_shared``, ``_places``, the public classes)."""
