"""``horovod-batchai local``: start, stop, status, az-env and mlflow-ui of the local service."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .context import EXIT_FAILED, EXIT_NOT_FOUND, Context, UsageError, local_state_dir
from .parser import _Commands
from .views import Result, Table, service_data, service_table


def _local_only(ctx: Context) -> Path:
    if ctx.args.target != "local":
        raise UsageError("local: these commands manage the local service; drop --target azure")
    from ..local import default_state_dir
    return local_state_dir(ctx.args) or default_state_dir()


def local_start(ctx: Context) -> Result:
    """Start the service (or find it running); ``--node-runtime`` names the Python environment its
    jobs run with, and a service already running with another one is reported, not replaced."""
    from ..local import NodeRuntimeMismatch, ensure_running
    state_dir = _local_only(ctx)
    try:
        info = ensure_running(state_dir, node_runtime=ctx.args.node_runtime)
    except ValueError as err:
        raise UsageError(f"--node-runtime: {err}") from None
    except NodeRuntimeMismatch as err:
        running = _running_data(state_dir)
        return Result(running, service_table(running) if running else None, EXIT_FAILED, str(err))
    except OSError as err:
        said = _disk_trouble(err, state_dir)
        if said is None:
            raise
        return Result(quiet=True, exit_code=EXIT_FAILED, error=said)
    data = service_data(info)
    return Result(data, service_table(data))


def _disk_trouble(err: OSError, state_dir: Path) -> Optional[str]:
    """One line for a state directory the service cannot write (read-only or full): what is
    wrong and what to do; None for any other error."""
    from ..local.core.disk import disk_problem
    problem = disk_problem(err, state_dir)
    if problem is None:
        return None
    if problem.read_only:
        return (f"cannot start the local service: its state directory {state_dir} is on a read-only file "
                f"system ({problem.path}); give a writable one with --state-dir or $HOROVOD_BATCHAI_STATE_DIR")
    return (f"cannot start the local service: no space left for its state directory {state_dir} "
            f"({problem.path}); free some space, or give another directory with --state-dir or "
            "$HOROVOD_BATCHAI_STATE_DIR")


def _running_data(state_dir: Path) -> Optional[dict[str, Any]]:
    from ..local import find_running
    info = find_running(state_dir)
    return service_data(info) if info is not None else None


def local_stop(ctx: Context) -> Result:
    from ..local import stop_daemon
    state_dir = _local_only(ctx)
    stopped = stop_daemon(state_dir)
    return Result({"stopped": stopped, "stateDir": str(state_dir)},
                  Table(["Stopped", "State Directory"], [[str(stopped).lower(), str(state_dir)]]))


def local_status(ctx: Context) -> Result:
    from ..local import find_running
    state_dir = _local_only(ctx)
    info = find_running(state_dir)
    if info is None:
        data = {"running": False, "stateDir": str(state_dir)}
        return Result(data, service_table(data), EXIT_NOT_FOUND, f"no local service is running for {state_dir}")
    data = service_data(info)
    return Result(data, service_table(data))


def local_az_env(ctx: Context) -> Result:
    """The shell lines that point an installed Azure CLI at the local service (started if need be):
    ``eval "$(horovod-batchai local az-env)"``, then the tutorial's az commands."""
    from ..local import ensure_running
    from ..local.az_env import az_env_lines
    info = ensure_running(_local_only(ctx))
    try:
        lines = az_env_lines(info, storage_account=ctx.args.storage_account)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print("\n".join(lines))
    return Result(quiet=True)


def local_mlflow_ui(ctx: Context) -> Result:
    """MLflow's UI on the local service's runs, until Ctrl-C: a loopback HTTP server of this process
    that forwards to the service's authenticated front; the URL it prints carries a key that only
    the calling user sees (see local/tracking/ui.py)."""
    import json

    from ..local import ensure_running
    from ..local.tracking.ui import MlflowUiProxy
    info = ensure_running(_local_only(ctx))
    credential = info.credential()
    proxy = MlflowUiProxy(info.endpoint, info.ca_cert,
                          lambda: credential.get_token("https://management.azure.com/.default").token,
                          port=ctx.args.port)
    try:
        status, body = proxy.health()
        if status != 200:
            try:
                said = json.loads(body).get("message") or body
            except ValueError:
                said = body
            return Result({"status": status}, None, EXIT_FAILED, f"the local MLflow tracking server is not "
                                                                 f"available: {said}")
        print(f"MLflow UI of the local runs: {proxy.login_url}", flush=True)
        print("(the link carries a key for you alone; Ctrl-C stops the UI)", flush=True)
        try:
            proxy.serve_forever()
        except KeyboardInterrupt:
            pass
    finally:
        proxy.stop()
    return Result(quiet=True)


def register(c: _Commands, sub: Any) -> None:
    p = c.command(sub, "start", local_start, "start the local service in the background (reused if running)")
    p.add_argument("--node-runtime", default=None, metavar="PATH",
                   help="the Python environment jobs run with: its interpreter or its directory (default "
                        "$HOROVOD_BATCHAI_NODE_RUNTIME, else this Python); it needs TensorFlow 2.15, Keras 2.15 and "
                        "Horovod 0.28.1. A service already running with another one is an error (stop it first)")
    c.command(sub, "stop", local_stop, "stop the local service")
    c.command(sub, "status", local_status, "say whether the local service runs; exit 3 if not")
    p = c.command(sub, "az-env", local_az_env, "print the shell lines that point the Azure CLI at the local service: "
                                             'eval "$(horovod-batchai local az-env)"')
    p.add_argument("--storage-account", default="mystorageaccount",
                   help="the storage account az storage commands use (default: the tutorial's mystorageaccount)")
    p = c.command(sub, "mlflow-ui", local_mlflow_ui, "serve MLflow's UI on the local runs at a loopback URL for "
                                                     "you alone, until Ctrl-C")
    p.add_argument("--port", type=int, default=0, help="loopback port of the UI (default: a free one)")
