"""The node runtime: the Python environment a local node runs jobs with, as a Batch AI node ran the
cluster's image.

The SDK and the local service need no training stack and run on any supported Python; Horovod
jobs need TensorFlow 2.15 + Keras 2.15 + Horovod 0.28.1, which stop at Python 3.11. So jobs run on
an environment of their own, chosen when the service starts, the first of:

1. the ``node_runtime`` argument (``LocalService``, ``Target.local``) or ``--node-runtime`` option
   (``python -m horovod_batchai.local serve|start``, ``horovod-batchai local start``);
2. ``$HOROVOD_BATCHAI_NODE_RUNTIME``;
3. the service's own Python (a machine whose SDK Python holds the stack needs no setting).

A runtime is named by its interpreter (``/opt/node/bin/python``) or by the environment's
directory (``/opt/node``, whose ``bin/python`` is then used); symbolic links are kept, since a
virtualenv's ``bin/python`` links to a base interpreter that lacks the virtualenv's packages.
Nothing is checked when the service starts: a job checks its runtime before anything of it runs
(:func:`check`), so that a missing or incomplete one fails the job with an error saying what is
missing and how to provide it, never a traceback from inside a rank.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from .states import job_error

__all__ = ["NODE_RUNTIME_ENV", "NodeRuntime", "NodeRuntimeError", "RuntimeReport", "interpreter_of", "resolve",
           "require_interpreter", "probe", "check", "HOW_TO_PROVIDE"]

NODE_RUNTIME_ENV = "HOROVOD_BATCHAI_NODE_RUNTIME"

#: what every error about the runtime ends with.
HOW_TO_PROVIDE = (
    "A node runtime is a Python environment with TensorFlow 2.15.1, Keras 2.15 and Horovod 0.28.1 built "
    "with TensorFlow support (`make install` builds one in the repository's .venv). Name it with "
    "Target.local(node_runtime=...), LocalService(node_runtime=...), $" + NODE_RUNTIME_ENV + " or "
    "`horovod-batchai local start --node-runtime PATH`, then restart the local service "
    "(`horovod-batchai local stop`).")

#: what the runtime's interpreter runs to describe itself: standard library only, no imports of
#: the stack (TensorFlow alone takes seconds to import); the versions come from package metadata.
_PROBE = r"""
import json, sys
from importlib import metadata, util
def version(*names):
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return None
spec = util.find_spec("horovod")
places = list(spec.submodule_search_locations or []) if spec else []
import glob, os
built = any(glob.glob(os.path.join(p, "tensorflow", "mpi_lib*")) for p in places)
print(json.dumps({"python": sys.version.split()[0], "executable": sys.executable,
                  "tensorflow": version("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                                        "tensorflow-macos"),
                  "keras": version("keras"), "horovod": version("horovod"), "horovod_tensorflow": built}))
"""
#: how long the probe may take (a loaded machine starts Python slowly).
PROBE_TIMEOUT_S = 60.0


def interpreter_of(path: Union[str, "os.PathLike[str]"]) -> str:
    """The interpreter a runtime named ``path`` runs: ``path`` itself, or ``path/bin/python`` when
    it is a directory; absolute, with symbolic links kept."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"node_runtime must be the path of a Python interpreter or of a Python environment's "
                         f"directory, got {path!r}")
    given = Path(os.path.abspath(Path(path).expanduser()))
    return str(given / "bin" / "python" if given.is_dir() else given)


@dataclass(frozen=True)
class NodeRuntime:
    """Which interpreter jobs run with, and what chose it (for the messages)."""

    python: str
    #: "argument" (a constructor argument or command-line option), "environment" ($HOROVOD_BATCHAI_NODE_RUNTIME)
    #: or "service" (the service's own Python: nothing was set)
    source: str

    @property
    def horovodrun(self) -> str:
        return str(Path(self.python).parent / "horovodrun")

    @property
    def is_service_python(self) -> bool:
        """Whether jobs run on the service's own interpreter (then they may import what it imports)."""
        return self.python == os.path.abspath(sys.executable)

    def describe(self) -> str:
        why = {"argument": "the node runtime the service was started with",
               "environment": f"the node runtime ${NODE_RUNTIME_ENV} names",
               "service": "the local service's own Python, as no node runtime was set"}[self.source]
        return f"{self.python} ({why})"


def resolve(argument: Union[str, "os.PathLike[str]", None] = None,
            environ: Mapping[str, str] = os.environ) -> NodeRuntime:
    """The runtime of a service given ``argument`` (None: not given): see the module docstring."""
    if argument is not None:
        return NodeRuntime(interpreter_of(argument), "argument")
    if environ.get(NODE_RUNTIME_ENV, "").strip():
        try:
            return NodeRuntime(interpreter_of(environ[NODE_RUNTIME_ENV].strip()), "environment")
        except ValueError:
            pass  # only whitespace: not set
    return NodeRuntime(os.path.abspath(sys.executable), "service")


@dataclass(frozen=True)
class RuntimeReport:
    """What a runtime holds (versions are None when the package is not installed)."""

    python: str
    tensorflow: Optional[str]
    keras: Optional[str]
    horovod: Optional[str]
    horovod_tensorflow: bool     # Horovod was built with TensorFlow support
    horovodrun: bool             # horovodrun is next to the interpreter

    def summary(self) -> str:
        parts = [f"Python {self.python}"]
        parts += [f"{name} {version}" for name, version in (("TensorFlow", self.tensorflow), ("Keras", self.keras),
                                                            ("Horovod", self.horovod)) if version]
        return ", ".join(parts)

    def missing_for_horovod(self) -> list[str]:
        """What a Horovod job needs and this runtime lacks, in words."""
        missing = []
        if not self.tensorflow:
            missing.append("TensorFlow")
        if not self.horovod:
            missing.append("Horovod")
        elif not self.horovod_tensorflow:
            missing.append("Horovod's TensorFlow support (Horovod was built without TensorFlow)")
        if self.horovod and not self.horovodrun:
            missing.append("horovodrun next to the interpreter")
        return missing


class NodeRuntimeError(Exception):
    """The runtime cannot run the job; ``error`` is the job's executionInfo error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = job_error(code, message)


def require_interpreter(runtime: NodeRuntime) -> None:
    """Raise :class:`NodeRuntimeError` unless the runtime's interpreter is an executable file."""
    where = Path(runtime.python)
    if where.is_file() and os.access(where, os.X_OK):
        return
    environment = where.parent.parent
    hint = (f" ({environment} holds no bin/python)" if where.parts[-2:] == ("bin", "python")
            and environment.is_dir() else "")
    raise NodeRuntimeError("NodeRuntimeNotFound",
                           f"The node runtime {runtime.describe()} does not exist or is not an executable "
                           f"file{hint}. {HOW_TO_PROVIDE}")


def probe(runtime: NodeRuntime, env: Mapping[str, str]) -> RuntimeReport:
    """Ask the runtime's interpreter what it holds, in the environment a job's processes get."""
    require_interpreter(runtime)
    try:
        done = subprocess.run([runtime.python, "-c", _PROBE], env=dict(env), capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NodeRuntimeError("NodeRuntimeUnusable",
                               f"The node runtime {runtime.describe()} did not answer within {PROBE_TIMEOUT_S:.0f} s "
                               f"when asked which packages it holds. {HOW_TO_PROVIDE}") from None
    except OSError as exc:
        raise NodeRuntimeError("NodeRuntimeUnusable", f"The node runtime {runtime.describe()} could not be started "
                                                      f"({exc.strerror}). {HOW_TO_PROVIDE}") from None
    try:
        data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    except (ValueError, IndexError):
        data = {}
    if not isinstance(data, dict) or "python" not in data:
        said = (done.stderr.strip().splitlines() or [""])[-1][:300]
        raise NodeRuntimeError("NodeRuntimeUnusable",
                               f"The node runtime {runtime.describe()} is not a working Python 3 interpreter"
                               + (f" (it said: {said})" if said else "") + f". {HOW_TO_PROVIDE}")
    return RuntimeReport(python=str(data["python"]), tensorflow=data.get("tensorflow"),
                         keras=data.get("keras"), horovod=data.get("horovod"),
                         horovod_tensorflow=bool(data.get("horovod_tensorflow")),
                         horovodrun=os.access(runtime.horovodrun, os.X_OK))


def check(runtime: NodeRuntime, env: Mapping[str, str], *, horovod: bool) -> RuntimeReport:
    """The runtime's report, when it can run the job (a Horovod job when ``horovod``); raises
    :class:`NodeRuntimeError` saying what is missing and how to provide it otherwise."""
    report = probe(runtime, env)
    missing = report.missing_for_horovod() if horovod else []
    if missing:
        raise NodeRuntimeError("NodeRuntimeIncomplete",
                               f"The node runtime {runtime.describe()} lacks {' and '.join(missing)}, which "
                               f"Horovod jobs need (it has {report.summary()}). {HOW_TO_PROVIDE}")
    return report
