"""A job's ``$AZ_BATCHAI_STDOUTERR_DIR`` on Azure ML: a directory of the file share its
stdOutErrPathPrefix lies in, where the job's script writes ``metrics.csv`` and its TensorBoard
event files. Azure ML's run history does not list it; it is read from the share, through the
share's datastore (its ``listSecrets``), with azure-storage-file-share built with the target's
options.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional
from urllib.parse import quote

from azure.core.exceptions import ResourceNotFoundError

from ..._models.job_spec import HorovodJob, place_in_job_mount
from ..._models.mounts import AzureFileShareMount
from ..._models.values import OutputFile
from .command import stdouterr_under_prefix
from .conversions import DatastoreIdentity, mount_datastore

if TYPE_CHECKING:
    from ..connection import Connection

__all__ = ["StdOutErrPlace", "stdouterr_place", "list_share_directory"]


@dataclass(frozen=True)
class StdOutErrPlace:
    """Where a job's stdouterr directory is: a directory of the share behind ``datastore``."""

    datastore: str
    identity: DatastoreIdentity
    #: the directory in the share, '/'-separated
    path: str


def stdouterr_place(spec: HorovodJob, job_name: str) -> Optional[StdOutErrPlace]:
    """Where ``spec``'s stdouterr directory is on its file share; None when its
    stdOutErrPathPrefix is not on a mounted share or names a variable only the node knows."""
    found = place_in_job_mount(spec.std_out_err_path_prefix or "", spec.mounts)
    if found is None:
        return None
    mount, inside = found
    if not isinstance(mount, AzureFileShareMount) or "$" in inside:
        return None
    name, identity = mount_datastore(mount)
    path = "/".join(part for part in (inside, stdouterr_under_prefix(job_name)) if part)
    return StdOutErrPlace(name, identity, path)


def list_share_directory(connection: "Connection", file_endpoint: str, share: str, path: str,
                         credential: Any) -> List[OutputFile]:
    """The files and directories in ``path`` of ``share``, empty when there is no such
    directory (yet). Each file's ``download_url`` is its plain URL, without a credential."""
    from azure.storage.fileshare import ShareDirectoryClient
    connection.check_data_url(file_endpoint, "the datastore's file endpoint")
    client = ShareDirectoryClient(file_endpoint, share, path, credential=credential, **connection.data_plane_options())
    try:
        items = list(client.list_directories_and_files())
    except ResourceNotFoundError:
        return []
    base = f"{file_endpoint}/{quote(share)}/{quote(path)}/"
    return [OutputFile(name=str(item.name), is_directory=bool(item.is_directory),
                       size=None if item.is_directory else int(getattr(item, "size", 0) or 0),
                       download_url=None if item.is_directory else base + quote(str(item.name)))
            for item in items]
