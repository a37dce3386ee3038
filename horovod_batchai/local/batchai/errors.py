"""Microsoft.BatchAI's own error codes (the ARM envelope itself, and the codes ARM and several
planes share, are ``core/arm_errors.py``)."""
from __future__ import annotations

from typing import Optional

from ..core.arm_errors import ArmError

__all__ = ["WorkspaceNotFound", "ExperimentNotFound", "ClusterNotFound", "JobNotFound", "FileServerNotFound",
           "OutputDirectoryNotFound", "DirectoryNotFound", "UnsupportedToolkit",
           "OutputDirectoryNotOnFileShare", "ClusterAlreadyExists", "JobAlreadyExists", "FileServerAlreadyExists",
           "ClusterInUse", "ClusterNotReady", "BlobStorageUnavailable", "NotFound", "AlreadyExists"]


class NotFound(ArmError):
    """A Batch AI resource that does not exist; each kind has its own code."""
    status = 404

    @classmethod
    def named(cls, what: str, name: str, *, target: Optional[str] = None) -> "NotFound":
        return cls(f"The specified {what} {name} is not found", target=target)


class WorkspaceNotFound(NotFound):
    pass


class ExperimentNotFound(NotFound):
    pass


class ClusterNotFound(NotFound):
    pass


class JobNotFound(NotFound):
    pass


class FileServerNotFound(NotFound):
    pass


class OutputDirectoryNotFound(ArmError):
    """``listOutputFiles`` names an output directory the job does not have."""
    status = 404


class DirectoryNotFound(ArmError):
    """``listOutputFiles`` names a directory that is not (yet) inside the output directory."""
    status = 404


class UnsupportedToolkit(ArmError):
    status = 400


class OutputDirectoryNotOnFileShare(ArmError):
    """An output directory outside any mounted share or container has no download links."""
    status = 400


class AlreadyExists(ArmError):
    """A PUT that would change an existing resource in a way the service cannot; each kind has its
    own code."""
    status = 409


class ClusterAlreadyExists(AlreadyExists):
    pass


class JobAlreadyExists(AlreadyExists):
    pass


class FileServerAlreadyExists(AlreadyExists):
    pass


class ClusterInUse(ArmError):
    """A cluster cannot be deleted while jobs run on it."""
    status = 409


class ClusterNotReady(ArmError):
    status = 409


class BlobStorageUnavailable(ArmError):
    """The blob endpoint (Azurite) holding a job's output directory cannot answer."""
    status = 503
