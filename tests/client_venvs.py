"""Virtualenvs of clients nobody here wrote, built from PyPI and kept between runs.

Some tests drive the local service with clients that must not share ./.venv: the Azure CLI (it pins
its own Azure libraries) and the SDK under the lowest and the highest version of each Azure library
that setup.py allows. Each gets its own virtualenv, built once per (requirements, Python minor) under
``$HOROVOD_BATCHAI_CLIENT_VENVS`` or ``${XDG_CACHE_HOME:-~/.cache}/horovod-batchai/client-venvs`` --
outside the clone, so repeated runs and other clones on the machine reuse it -- and marked complete
only once its check command has run; a half-built one is removed and built again. A virtualenv is
not relocatable (its scripts name their interpreter by absolute path), so it is built in place,
under a lock.

    python tests/client_venvs.py            # build (or find) every one and print where it is
    python tests/client_venvs.py azure-cli  # just that one
"""
from __future__ import annotations

import ast
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

REPO = Path(__file__).resolve().parents[1]
CACHE_ENV = "HOROVOD_BATCHAI_CLIENT_VENVS"

#: the Azure CLI that the tutorial-commands test runs (PyPI's newest that still ships `az batchai`).
AZURE_CLI_VERSION = "2.91.0"

#: the five libraries whose ranges setup.py declares, at each end of their range. "highest" is the
#: newest release inside the range when this was written; raise it when a newer one comes out.
VERSION_RANGE_ENDS = {
    "lowest": {"azure-mgmt-resource": "23.0.0", "azure-mgmt-storage": "21.0.0",
               "azure-storage-file-share": "12.20.0", "azure-identity": "1.15.0", "azure-core": "1.31.0"},
    "highest": {"azure-mgmt-resource": "25.0.0", "azure-mgmt-storage": "25.3.0",
                "azure-storage-file-share": "12.27.1", "azure-identity": "1.27.0", "azure-core": "1.41.0"},
}


@dataclass(frozen=True)
class ClientVenv:
    """A virtualenv to build: a name, what pip installs into it, and a command that proves it works."""

    name: str
    requirements: tuple[str, ...]
    check: tuple[str, ...]   # run with the venv's bin/ first on PATH

    @property
    def key(self) -> str:
        text = "\n".join((f"python{sys.version_info.major}.{sys.version_info.minor}", *self.requirements))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "horovod-batchai" / "client-venvs"


def sdk_requirements() -> list[str]:
    """setup.py's SDK_REQUIRES, read without running setup.py."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SDK_REQUIRES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("setup.py has no SDK_REQUIRES list")


def _project_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower()


def azure_cli() -> ClientVenv:
    return ClientVenv("azure-cli", (f"azure-cli=={AZURE_CLI_VERSION}",), ("az", "version", "--output", "none"))


def version_range_end(end: str) -> ClientVenv:
    """The SDK's requirements with the five ranged libraries pinned at one end of their range."""
    pins = VERSION_RANGE_ENDS[end]
    requirements = [r for r in sdk_requirements() if _project_name(r) not in pins]
    requirements += [f"{name}=={version}" for name, version in pins.items()]
    check = ("python", "-c", "import azure.mgmt.resource.resources, azure.mgmt.storage, azure.storage.fileshare, "
                             "azure.identity, azure.mgmt.batchai")
    return ClientVenv(f"sdk-{end}", tuple(requirements), check)


def every_venv() -> Iterator[ClientVenv]:
    yield azure_cli()
    for end in VERSION_RANGE_ENDS:
        yield version_range_end(end)


def _run_check(venv: ClientVenv, path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "AZURE_CONFIG_DIR": str(path / "az-config-check"), "AZURE_CORE_COLLECT_TELEMETRY": "false"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(list(venv.check), env=env, capture_output=True, text=True, timeout=300)


def ensure(venv: ClientVenv) -> Path:
    """The built virtualenv's directory; builds it first unless a complete one is cached."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{venv.name}-{venv.key}"
    stamp = path / ".complete"
    with open(root / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be building the same one
        if stamp.exists():
            return path
        if path.exists():
            shutil.rmtree(path)  # an interrupted build
        started = time.monotonic()
        print(f"building {venv.name} in {path} from PyPI ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        pip_log = path / "pip.log"
        with open(pip_log, "w") as out:
            # --no-compile: byte-compiling every module installed (azure-cli brings dozens of management
            # libraries, each with many API versions) is most of the work -- azure-cli took 107 CPU
            # seconds with it, 32 without; the few modules a test imports are compiled when first imported.
            result = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "--quiet",
                                     "--disable-pip-version-check", "--no-compile", *venv.requirements],
                                    stdout=out, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            tail = pip_log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"pip could not build {venv.name} ({' '.join(venv.requirements)}):\n{tail}")
        checked = _run_check(venv, path)
        if checked.returncode != 0:
            raise RuntimeError(f"{venv.name} was installed but `{' '.join(venv.check)}` failed:\n"
                               f"{checked.stdout[-2000:]}{checked.stderr[-2000:]}")
        stamp.write_text("\n".join(venv.requirements) + "\n")
        print(f"built {venv.name} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return path


def main(argv: Sequence[str]) -> int:
    wanted = set(argv)
    venvs = [v for v in every_venv() if not wanted or v.name in wanted]
    unknown = wanted - {v.name for v in every_venv()}
    if unknown:
        print(f"unknown virtualenv(s) {sorted(unknown)}; known: {[v.name for v in every_venv()]}", file=sys.stderr)
        return 2
    for venv in venvs:
        print(f"{venv.name}: {ensure(venv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
