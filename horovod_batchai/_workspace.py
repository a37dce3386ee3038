"""Workspaces: where clusters, experiments and jobs live (Batch AI workspace or Azure ML workspace)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union, cast

from azure.core.polling import LROPoller

from ._cluster import GpuCluster
from ._experiment import Experiment
from ._models.cluster_spec import AutoScale, ClusterSpec, ImageReference, SetupTask
from ._models.constants import DEFAULT_LRO_TIMEOUT
from ._models.mounts import Mount
from ._models.names import check_batchai_name, check_resource_group
from ._models.records import ClusterRef
from ._models.values import Usage
from ._shared.lro import (MappedPoller, accepted, background_poller, check_polling, check_timeout, resume_token)
from ._shared.resource_ids import names_from_id
from ._shared.workspace import (WorkspaceBase, check_cluster_spec, check_workspace_args, cluster_spec_from_options,
                                scale_text)

if TYPE_CHECKING:
    from ._places.base import Backend
    from ._target import Target

__all__ = ["Workspace", "Usage"]

log = logging.getLogger(__name__)


class Workspace(WorkspaceBase):
    """A workspace. Build one with :meth:`create` (get-or-create), :meth:`get` or :meth:`from_id`;
    its experiments and clusters are created, got and listed from it (``create_experiment``,
    ``get_cluster``, ...).

    ``location`` is the one last fetched (None until then); it never makes a request. It may be
    shared between threads, and pickles as a reference (its target and names; see
    :class:`Target`): the receiving process fetches what it needs afresh.
    """

    target: "Target"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Workspace, (self.target, self.resource_group, self.name))

    @classmethod
    def from_id(cls, target: "Target", resource_id: str) -> "Workspace":
        """The existing workspace whose ARM id is ``resource_id`` (as :attr:`id` gives it); an id
        of another form is an :class:`InvalidSpecError` stating the valid one.

        :param Target target: where the workspace is.
        :param str resource_id: the workspace's ARM id.
        :returns: the :class:`Workspace`, fetched.
        :raises InvalidSpecError: for an id of another form.
        :raises NotFoundError: when there is no such workspace."""
        names = names_from_id(target, resource_id, "workspace")
        return cls.get(target, names["resource group"], names["workspace"])

    @property
    def _backend(self) -> "Backend":
        return self.target.backend

    def refresh(self) -> "Workspace":
        """Fetch the workspace again; returns the workspace itself.

        :returns: the workspace itself.
        :raises NotFoundError: when the workspace is gone."""
        self._record = self._backend.get_workspace(self.resource_group, self.name)
        return self

    # -- create / get / list / delete -----------------------------------------------------------
    @classmethod
    def begin_create(cls, target: "Target", resource_group: str, name: str, *, location: Optional[str] = None,
                     continuation_token: Optional[str] = None, polling: bool = True,
                     polling_interval: Optional[float] = None) -> "LROPoller[Workspace]":
        """Start get-or-create of the workspace ``name`` in ``resource_group``, creating the group
        (in ``location``) and the workspace when missing; the poller's result is the
        :class:`Workspace`. Batch AI defaults ``location`` to eastus; creating an Azure ML
        workspace needs it given. ``continuation_token`` (from a poller's
        ``continuation_token()``) resumes an earlier call instead of starting one.

        :param Target target: where the workspace is.
        :param str resource_group: its resource group (created when missing).
        :param str name: the workspace's name.
        :keyword str location: the Azure region of what is created.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is the workspace, not fetched); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`Workspace`.
        :raises InvalidSpecError: for a bad argument, before anything is sent."""
        location = check_workspace_args(resource_group, name, location)
        interval = check_polling(polling, polling_interval)
        backend = target.backend
        poller = MappedPoller(backend.begin_create_workspace(resource_group, name, location,
                                                             continuation_token=continuation_token,
                                                             polling_interval=interval),
                              lambda r: cls(target, resource_group, name, _record=r), action="creating workspace",
                              resource=backend.workspace_id(resource_group, name), same_token=True)
        return poller if polling else accepted(poller, cls(target, resource_group, name))

    @classmethod
    def create(cls, target: "Target", resource_group: str, name: str, *, location: Optional[str] = None,
               timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> "Workspace":
        """:meth:`begin_create`, waiting at most ``timeout`` seconds (None: no limit); calling it
        again returns the same workspace.

        :param Target target: where to create it.
        :param str resource_group: its resource group (created when missing).
        :param str name: the workspace's name.
        :keyword str location: the Azure region of what is created (Batch AI's default: eastus).
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`Workspace`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises WaitTimeoutError: when ``timeout`` is spent (the creation goes on)."""
        check_timeout(timeout)
        return cls.begin_create(target, resource_group, name, location=location).result(timeout)

    @classmethod
    def get(cls, target: "Target", resource_group: str, name: str) -> "Workspace":
        """The existing workspace; :class:`NotFoundError` when there is none.

        :param Target target: where the workspace is.
        :param str resource_group: its resource group.
        :param str name: the workspace's name.
        :returns: the :class:`Workspace`, fetched.
        :raises NotFoundError: when there is none."""
        return cls(target, resource_group, name).refresh()

    @classmethod
    def list(cls, target: "Target", resource_group: Optional[str] = None) -> List["Workspace"]:
        """Workspaces in ``resource_group``, or in the whole subscription.

        :param Target target: where to list.
        :param str resource_group: the resource group; None: the whole subscription.
        :returns: the workspaces, fetched.
        :raises InvalidSpecError: for a bad resource group name."""
        if resource_group is not None:
            check_resource_group(resource_group)
        return [cls(target, r.resource_group, r.name, _record=r)
                for r in target.backend.list_workspaces(resource_group)]

    def begin_delete(self, *, delete_resource_group: bool = False, continuation_token: Optional[str] = None,
                     polling: bool = True, polling_interval: Optional[float] = None) -> "LROPoller[None]":
        """Start deleting the workspace (with its clusters, experiments and jobs) -- and, only when
        asked, its resource group with everything in it; finishes at once when already gone.

        :keyword bool delete_resource_group: delete the resource group too, once the workspace is gone.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (with ``delete_resource_group``, both deletes are sent at once); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is None.
        :raises InvalidSpecError: for a bad option or a token of another operation."""
        interval = check_polling(polling, polling_interval)
        backend, group = self._backend, self.resource_group
        if not delete_resource_group:
            poller = backend.begin_delete_workspace(group, self.name, continuation_token=continuation_token, polling_interval=interval)
            return poller if polling else accepted(poller, None)
        # Two operations, one after the other; the token says which one was running, and its token.
        action, resource = "deleting workspace and resource group", self.id
        step, inner = "workspace", ""
        if continuation_token is not None:
            saved = resume_token(continuation_token, action=action, resource=resource) or "group:"
            step, _, inner = saved.partition(":")
        if step == "workspace":
            first = backend.begin_delete_workspace(group, self.name, continuation_token=inner or None, polling_interval=interval)
        else:
            first = backend.begin_delete_resource_group(group, continuation_token=inner or None, polling_interval=interval)
        if not polling:
            if step == "workspace":
                backend.begin_delete_resource_group(group, polling_interval=interval)
            return accepted(first, None)
        running = [(step, first)]

        def work() -> None:
            running[0][1].result(None)
            if running[0][0] == "workspace":
                running[0] = ("group", backend.begin_delete_resource_group(group, polling_interval=interval))
                running[0][1].result(None)

        def token() -> str:
            now_step, poller = running[0]
            return f"{now_step}:{poller.continuation_token()}"

        return background_poller(work, action=action, resource=resource, token=token)

    def delete(self, *, delete_resource_group: bool = False, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> None:
        """Delete the workspace (with its clusters, experiments and jobs) -- and, only when asked,
        its resource group with everything in it -- waiting at most ``timeout`` seconds for both.
        Succeeds when already gone.

        :keyword bool delete_resource_group: also delete the resource group and everything in it.
        :keyword float timeout: seconds to wait; None: no limit.
        :raises WaitTimeoutError: when ``timeout`` is spent (the deletion goes on)."""
        check_timeout(timeout)
        self.begin_delete(delete_resource_group=delete_resource_group).result(timeout)

    def usages(self) -> List[Usage]:
        """Quotas and their use in the workspace's region.

        :returns: one :class:`Usage` per quota."""
        location = self.location or self.refresh().location
        return self._backend.usages(str(location))

    # -- experiments ----------------------------------------------------------------------------
    def begin_create_experiment(self, name: str, *, continuation_token: Optional[str] = None, polling: bool = True,
                                polling_interval: Optional[float] = None) -> "LROPoller[Experiment]":
        """Start get-or-create of the experiment ``name``; the poller's result is the
        :class:`Experiment`.

        :param str name: the experiment's name.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is the experiment); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`Experiment`.
        :raises InvalidSpecError: for a bad name or option, before anything is sent."""
        interval = check_polling(polling, polling_interval)
        experiment = Experiment(self, name)
        poller = MappedPoller(self._backend.begin_create_experiment(self.resource_group, self.name, name,
                                                                    continuation_token=continuation_token,
                                                                    polling_interval=interval),
                              lambda _: experiment, action="creating experiment", resource=experiment.id,
                              same_token=True)
        return poller if polling else accepted(poller, experiment)

    def create_experiment(self, name: str, *, timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> Experiment:
        """The experiment ``name`` (get-or-create): :meth:`begin_create_experiment`, waiting at most
        ``timeout`` seconds (None: no limit).

        :param str name: the experiment's name.
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`Experiment`.
        :raises InvalidSpecError: for a bad name, before anything is sent."""
        check_timeout(timeout)
        return self.begin_create_experiment(name).result(timeout)

    def _experiment(self, name: str) -> Experiment:
        """The experiment ``name`` of this workspace, not fetched (``from_id`` of a job starts here)."""
        return Experiment(self, name)

    def get_experiment(self, name: str) -> Experiment:
        """The existing experiment; :class:`NotFoundError` when there is none.

        :param str name: the experiment's name.
        :returns: the :class:`Experiment`.
        :raises NotFoundError: when there is none."""
        return Experiment(self, name).refresh()

    def list_experiments(self) -> List[Experiment]:
        """The workspace's experiments.

        :returns: the experiments."""
        return [Experiment(self, name) for name in self._backend.list_experiments(self.resource_group, self.name)]

    # -- clusters -------------------------------------------------------------------------------
    def begin_create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                             vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                             auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                             admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                             admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                             ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                             setup_task: Optional[SetupTask] = None, mounts: Sequence[Mount] = (),
                             continuation_token: Optional[str] = None, polling: bool = True,
                             polling_interval: Optional[float] = None) -> "LROPoller[GpuCluster]":
        """Start creating the cluster ``name`` (get-or-create), from ``spec`` or from the keyword
        options; the poller's result is the :class:`GpuCluster` once the service accepted it.

        Without ``ssh_public_key`` or ``admin_password``, ``generate_ssh_keys`` uses
        ``~/.ssh/id_rsa.pub`` (or ``ssh_key_path + '.pub'``), creating the pair when missing.
        When the cluster exists, what is compared depends on the target: on Batch AI (local or
        Azure), other settings -- its VM size, admin user, password, key, image, setup task or
        mounts -- are a :class:`ConflictError` naming them, and another scale (node count or
        auto-scale bounds, say after :meth:`GpuCluster.resize`) is set to the one asked for; on
        Azure ML only another VM size is a conflict, and the existing AmlCompute keeps its own
        scale and admin user. Fields the target cannot
        express are refused here, before any request. ``continuation_token`` resumes an earlier
        call (the other arguments but ``name`` are then not used).

        :param str name: the cluster's name.
        :param ClusterSpec spec: the whole cluster, instead of the keyword options.
        :keyword str continuation_token: a poller's ``continuation_token()``: resume that call.
        :keyword bool polling: False: the poller is done once the service has accepted the request
            (its result is the cluster, not fetched); True follows the operation to its end.
        :keyword float polling_interval: seconds between polls (default: the target's).
        :returns: an ``LROPoller`` whose result is the :class:`GpuCluster`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: when the cluster exists with other settings.
        :keyword str vm_size: the nodes' VM size.
        :keyword str vm_priority: ``'dedicated'`` or ``'lowpriority'``.
        :keyword int target_node_count: a fixed number of nodes (not with ``auto_scale``).
        :keyword auto_scale: an :class:`AutoScale` or ``(minimum, maximum)`` node counts.
        :keyword str admin_user_name: the nodes' admin user.
        :keyword str ssh_public_key: the admin user's public key (OpenSSH text).
        :keyword str admin_password: the admin user's password.
        :keyword bool generate_ssh_keys: use (or create) the local key pair when no key or password is given.
        :keyword ssh_key_path: the private key's path for ``generate_ssh_keys`` (default ``~/.ssh/id_rsa``).
        :keyword ImageReference image: the nodes' VM image.
        :keyword SetupTask setup_task: a command run on each node as it starts.
        :keyword mounts: the file systems mounted on every node.
        """
        check_batchai_name(name, "cluster")
        interval = check_polling(polling, polling_interval)
        backend = self._backend
        ref = ClusterRef(self.resource_group, self.name, name)
        action, cluster_id = "creating cluster", backend.cluster_id(ref)
        if continuation_token is not None:
            resumed = MappedPoller(backend.begin_create_cluster(ref, cast(ClusterSpec, spec),
                                                                continuation_token=continuation_token, polling_interval=interval),
                                   lambda r: GpuCluster(self, name, _record=r), action=action, resource=cluster_id,
                                   same_token=True)
            return resumed if polling else accepted(resumed, GpuCluster(self, name))
        if spec is None:
            spec = cluster_spec_from_options(
                vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count, auto_scale=auto_scale,
                admin_user_name=admin_user_name, ssh_public_key=ssh_public_key, admin_password=admin_password,
                generate_ssh_keys=generate_ssh_keys, ssh_key_path=ssh_key_path, image=image, setup_task=setup_task,
                mounts=mounts)
        spec = check_cluster_spec(spec, backend)
        existing = backend.find_cluster(ref)
        if existing is not None:
            started = backend.begin_reuse_cluster(ref, spec, existing, polling_interval=interval)
            log.info("cluster %s exists with these settings; using it", cluster_id)
        else:
            log.info("creating cluster %s (%s, %s)", cluster_id, spec.vm_size, scale_text(spec))
            started = backend.begin_create_cluster(ref, spec, polling_interval=interval)
        poller = MappedPoller(started, lambda r: GpuCluster(self, name, _record=r), action=action, resource=cluster_id,
                              same_token=True)
        return poller if polling else accepted(poller, GpuCluster(self, name))

    def create_cluster(self, name: str, spec: Optional[ClusterSpec] = None, *, vm_size: str = "Standard_NC6",
                       vm_priority: str = "dedicated", target_node_count: Optional[int] = None,
                       auto_scale: Optional[Union[AutoScale, tuple[int, int]]] = None,
                       admin_user_name: Optional[str] = None, ssh_public_key: Optional[str] = None,
                       admin_password: Optional[str] = None, generate_ssh_keys: bool = True,
                       ssh_key_path: Optional[Union[str, Path]] = None, image: Optional[ImageReference] = None,
                       setup_task: Optional[SetupTask] = None, mounts: Sequence[Mount] = (),
                       timeout: Optional[float] = DEFAULT_LRO_TIMEOUT) -> GpuCluster:
        """:meth:`begin_create_cluster`, waiting at most ``timeout`` seconds (None: no limit) for
        the service to accept the cluster; :meth:`GpuCluster.wait_until_ready` then waits for its
        nodes.

        :param str name: the cluster's name.
        :param ClusterSpec spec: the whole cluster, instead of the keyword options.
        :keyword str vm_size: the nodes' VM size.
        :keyword str vm_priority: ``'dedicated'`` or ``'lowpriority'``.
        :keyword int target_node_count: a fixed number of nodes (not with ``auto_scale``).
        :keyword auto_scale: an :class:`AutoScale` or ``(minimum, maximum)`` node counts.
        :keyword str admin_user_name: the nodes' admin user.
        :keyword str ssh_public_key: the admin user's public key (OpenSSH text).
        :keyword str admin_password: the admin user's password.
        :keyword bool generate_ssh_keys: use (or create) the local key pair when no key or password is given.
        :keyword ssh_key_path: the private key's path for ``generate_ssh_keys`` (default ``~/.ssh/id_rsa``).
        :keyword ImageReference image: the nodes' VM image.
        :keyword SetupTask setup_task: a command run on each node as it starts.
        :keyword mounts: the file systems mounted on every node.
        :keyword float timeout: seconds to wait; None: no limit.
        :returns: the :class:`GpuCluster`.
        :raises InvalidSpecError: for a bad argument, before anything is sent.
        :raises ConflictError: when the cluster exists with other settings.
        :raises WaitTimeoutError: when ``timeout`` is spent (the creation goes on)."""
        check_timeout(timeout)
        return self.begin_create_cluster(
            name, spec, vm_size=vm_size, vm_priority=vm_priority, target_node_count=target_node_count,
            auto_scale=auto_scale, admin_user_name=admin_user_name, ssh_public_key=ssh_public_key,
            admin_password=admin_password, generate_ssh_keys=generate_ssh_keys, ssh_key_path=ssh_key_path,
            image=image, setup_task=setup_task, mounts=mounts).result(timeout)

    def get_cluster(self, name: str) -> GpuCluster:
        """The existing cluster; :class:`NotFoundError` when there is none.

        :param str name: the cluster's name.
        :returns: the :class:`GpuCluster`, fetched.
        :raises NotFoundError: when there is none."""
        return GpuCluster(self, name).refresh()

    def list_clusters(self) -> List[GpuCluster]:
        """The workspace's clusters (on Azure ML, its AmlCompute clusters).

        :returns: the clusters, fetched."""
        return [GpuCluster(self, r.name, _record=r)
                for r in self._backend.list_clusters(self.resource_group, self.name)]




