"""``python -m horovod_batchai.local serve|start|stop|status``.

``serve --host 127.0.0.1 --port PORT --state-dir DIR`` runs the service in the foreground and
prints its endpoints; other tools call exactly this command. ``--node-runtime PATH`` (``serve``
and ``start``) names the Python environment jobs run with; it wins over
``$HOROVOD_BATCHAI_NODE_RUNTIME``, which wins over the service's own Python.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Optional, Sequence

from .core.context import ServiceSettings, default_state_dir
from .core.disk import WholeLineLogHandler
from .runner.node_runtime import NODE_RUNTIME_ENV
from .service import LocalService
from .daemon import ServiceAlreadyRunning, ensure_running, find_running, is_loopback, stop_daemon

RUNTIME_HELP = ("the Python environment jobs run with: its interpreter or its directory (default $" + NODE_RUNTIME_ENV
                + ", else this Python); it needs TensorFlow 2.15, Keras 2.15 and Horovod 0.28.1")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m horovod_batchai.local",
                                     description="The local stand-in for Azure Batch AI and Azure Files.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the service in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default)")
    serve.add_argument("--state-dir", type=Path, default=None, help="where state is kept")
    serve.add_argument("--provision-delay", type=float, default=ServiceSettings.provision_delay_s,
                       help="seconds a cluster spends resizing (default %(default)s)")
    serve.add_argument("--fault-rate", type=float, default=0.0, help="fraction of requests to fail (tests)")
    serve.add_argument("--fault-seed", type=int, default=0)
    serve.add_argument("--quiet", action="store_true", help="log warnings only")
    serve.add_argument("--node-runtime", default=None, metavar="PATH", help=RUNTIME_HELP)
    for name, text in (("start", "start a background service (reused if running)"),
                       ("stop", "stop the background service"), ("status", "say whether one is running")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--state-dir", type=Path, default=None)
        if name == "start":
            p.add_argument("--node-runtime", default=None, metavar="PATH",
                           help=RUNTIME_HELP + "; a running service with another one is an error")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    state_dir = args.state_dir or default_state_dir()
    if args.command == "serve":
        if not is_loopback(args.host):  # the same rule as LocalService's
            print(f"error: --host must be a loopback address (127.0.0.1, localhost or ::1), got {args.host!r}",
                  file=sys.stderr)
            return 2
        # One write per line: on a full disk a line is dropped whole, never torn (see core/disk.py).
        handler = WholeLineLogHandler(sys.stderr.fileno())
        logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=[handler])
        try:
            settings = ServiceSettings(provision_delay_s=args.provision_delay, fault_rate=args.fault_rate,
                                       fault_seed=args.fault_seed)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        # Everything the daemon and its jobs create (shares, outputs, logs) is this user's only.
        os.umask(0o077)
        try:
            service = LocalService(state_dir, host=args.host, port=args.port, settings=settings,
                                   node_runtime=args.node_runtime)
        except ValueError as exc:
            print(f"error: --node-runtime: {exc}", file=sys.stderr)
            return 2
        try:
            service.start()
        except (ServiceAlreadyRunning, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        info = service.info
        print(f"Management endpoint: {info.endpoint}", flush=True)
        print(f"Files endpoint:      {info.endpoint}/<account>", flush=True)
        print(f"CA certificate:      {info.ca_cert}", flush=True)
        print(f"State directory:     {info.state_dir}", flush=True)
        print(f"Node runtime:        {service.node_runtime.describe()}", flush=True)
        blob = service.context.blob if service.context is not None else None
        if blob is not None and blob.available:
            print(f"Blob endpoint:       {blob.url}/<account>  (Azurite, started at the first blob request)",
                  flush=True)
        else:
            print(f"Blob endpoint:       none: {blob.problem if blob is not None else 'not started'}", flush=True)
        tracking = service.context.tracking if service.context is not None else None
        print(f"MLflow tracking:     {tracking.describe(info.endpoint) if tracking is not None else 'off'}", flush=True)
        # Wait in short slices: a signal may be delivered to any thread, and only the main thread
        # runs Python's handlers -- when it next wakes up, which an untimed wait never does.
        while not stopping.wait(0.2):
            pass
        service.stop()
        return 0
    if args.command == "start":
        try:
            info = ensure_running(state_dir, node_runtime=args.node_runtime)
        except ValueError as exc:
            print(f"error: --node-runtime: {exc}", file=sys.stderr)
            return 2
        except (OSError, RuntimeError) as exc:  # an unusable --state-dir, or a daemon that would not start
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"local service running at {info.endpoint} (pid {info.pid}, state in {info.state_dir})")
        print(f"node runtime: {info.node_runtime or '(not recorded)'}")
        return 0
    if args.command == "stop":
        print("stopped" if stop_daemon(state_dir) else "not running")
        return 0
    running = find_running(state_dir)
    print(f"running at {running.endpoint} (pid {running.pid})" if running else "not running")
    return 0 if running else 3


if __name__ == "__main__":
    sys.exit(main())
