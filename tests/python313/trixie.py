"""A Debian trixie chroot, whose Python is 3.13, built once and kept outside the clone.

The SDK is declared for Python 3.11 and 3.13; the project's machines have 3.11 only, and Debian's
next release has 3.13. The chroot is built with the exact command
``debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates trixie
ROOT`` (debootstrap from Debian's packages: ``make chroot-tools``), about a minute on an idle
machine, under ``$HOROVOD_BATCHAI_CHROOTS`` or ``${XDG_CACHE_HOME:-~/.cache}/horovod-batchai/chroots``
keyed by that command and the machine's architecture, and marked complete only once debootstrap
has succeeded (a half-built one is removed and built again). Inside it, a *wheelhouse* holds the
wheels of the SDK's requirements (keyed by them), so that each test run installs the SDK from the
clone with ``pip --no-index`` in seconds, as ``pip install horovod-batchai`` would.

A :func:`session` is what uses the chroot: under an exclusive lock (so runs on this machine take
turns, as each mounts into the same tree), it copies the host's CA bundle, ``/etc/hosts`` and
``/etc/resolv.conf`` in, mounts ``/proc``, ``/dev`` and ``/dev/shm`` and any directories asked for
read-only at the same paths (the node runtime), and on the way out -- also after an error -- ends
what still runs inside and unmounts everything. A chroot is never deleted while anything is
mounted under it: it would delete what is mounted.

    python tests/python313/trixie.py     # build (or find) the chroot and its wheelhouse; print where
"""
from __future__ import annotations

import ast
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

REPO = Path(__file__).resolve().parents[2]
CACHE_ENV = "HOROVOD_BATCHAI_CHROOTS"
SUITE = "trixie"
DEBOOTSTRAP = ("debootstrap", "--variant=minbase", "--include=python3,python3-venv,python3-pip,ca-certificates",
               SUITE)
#: copied from the host into the chroot at every session: trust (the host's CA bundle, which may
#: hold a proxy's certificate), names (this machine's host name for Gloo) and the resolver.
HOST_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/hosts", "/etc/resolv.conf")
#: the environment commands in the chroot start from (nothing of the host's, which names host paths).
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
            "LANG": "C.UTF-8", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
#: how the SDK is built by pip from a copy of the clone: what setup.py reads and packages.
SOURCE = ("setup.py", "README.rst", "horovod_batchai", "training")


class ChrootUnavailable(RuntimeError):
    """This machine cannot build or enter the chroot (not root, no debootstrap); the message says why."""


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "horovod-batchai" / "chroots"


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _architecture() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.uname().machine


def sdk_requirements() -> list[str]:
    """setup.py's SDK_REQUIRES, read without running setup.py."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SDK_REQUIRES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise RuntimeError("setup.py has no SDK_REQUIRES list")


def check_usable() -> None:
    """Raise :class:`ChrootUnavailable` unless this process can build and enter a chroot."""
    if os.geteuid() != 0:
        raise ChrootUnavailable("building and entering a chroot needs root (chroot, mount)")
    if shutil.which("debootstrap") is None:
        raise ChrootUnavailable("debootstrap is not installed; `make chroot-tools` installs it from Debian's "
                                "packages (apt-get install debootstrap)")


def mounts_under(root: Path) -> list[str]:
    """Mount points at or under ``root``, deepest first (the order to unmount them in)."""
    prefix = str(root.resolve()).rstrip("/")
    points = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            point = line.split()[4].encode().decode("unicode_escape")  # spaces are written as \040
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


def _unmount_all(root: Path) -> None:
    for point in mounts_under(root):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)  # busy: detach it now, free it later


def _remove(root: Path) -> None:
    """Delete a chroot tree, never what is mounted into it."""
    _unmount_all(root)
    left = mounts_under(root)
    if left:
        raise RuntimeError(f"refusing to delete {root}: still mounted under it: {left}")
    shutil.rmtree(root)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be building or using the same chroot
        yield


def _root_paths() -> tuple[Path, Path, Path]:
    """(the chroot's directory, its completion stamp, its lock)."""
    cache = cache_root()
    name = f"{SUITE}-{_key(*DEBOOTSTRAP, _architecture())}"
    return cache / name, cache / f".{name}.complete", cache / f".{name}.lock"


def _build(root: Path, stamp: Path) -> None:
    if stamp.exists():
        return
    if root.exists():
        _remove(root)  # an interrupted build
    started = time.monotonic()
    print(f"building the Debian {SUITE} chroot in {root} with debootstrap ...", file=sys.stderr, flush=True)
    log_path = root.parent / f".{root.name}.debootstrap.log"
    with open(log_path, "w") as out:
        result = subprocess.run([*DEBOOTSTRAP, str(root)], stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"debootstrap failed with exit code {result.returncode} (see {log_path}):\n{tail}")
    stamp.write_text(" ".join(DEBOOTSTRAP) + "\n")
    print(f"built the {SUITE} chroot in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


@dataclass
class Chroot:
    """An entered chroot: commands run in it with :meth:`run`; :meth:`path` maps a path inside to the host's."""

    root: Path
    bound: list[str] = field(default_factory=list)

    def path(self, inside: str) -> Path:
        return self.root / inside.lstrip("/")

    def run(self, argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 900,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside, from :data:`BASE_ENV` plus ``env``; output is captured."""
        variables = [f"{k}={v}" for k, v in {**BASE_ENV, **(env or {})}.items()]
        result = subprocess.run(["chroot", str(self.root), "/usr/bin/env", "-i", *variables, *argv],
                                capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed in the chroot with exit code {result.returncode}:\n"
                               f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
        return result

    def python_version(self) -> str:
        return self.run(["python3", "-c", "import sys; print(sys.version.split()[0])"]).stdout.strip()

    def wheelhouse(self) -> str:
        """The directory inside holding wheels of the SDK's requirements (and of setuptools and
        wheel, to build the SDK), built from PyPI on first use."""
        requirements = [*sdk_requirements(), "setuptools>=68", "wheel"]
        inside = f"/opt/horovod-batchai/wheelhouse-{_key(self.python_version(), *requirements)}"
        stamp = self.path(inside) / ".complete"
        if stamp.exists():
            return inside
        if self.path(inside).exists():
            shutil.rmtree(self.path(inside))
        started = time.monotonic()
        print(f"filling {inside} in the chroot from PyPI ...", file=sys.stderr, flush=True)
        self.run(["python3", "-m", "pip", "wheel", "--quiet", "--wheel-dir", inside, *requirements])
        stamp.write_text("\n".join(requirements) + "\n")
        print(f"filled the wheelhouse in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return inside

    def install_sdk(self, venv: str) -> None:
        """A fresh virtualenv at ``venv`` (inside) with the SDK of this clone, and nothing else than
        what it requires: no extras, no PyPI (the wheelhouse)."""
        source = f"{venv}-source"
        for name in SOURCE:
            src, dest = REPO / name, self.path(source) / name
            if src.is_dir():
                shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
        wheelhouse = self.wheelhouse()
        self.run(["python3", "-m", "venv", venv])
        # --no-compile: the flow imports a small part of what is installed (one API version of each
        # management library): 9.6 CPU seconds to install and 1.8 to import without, 13.4 and 0.7 with.
        self.run([f"{venv}/bin/python", "-m", "pip", "install", "--quiet", "--no-compile", "--no-index",
                  "--find-links", wheelhouse, source])

    def stop_processes(self) -> list[int]:
        """End every process whose root is this chroot (what this session started there); their pids."""
        mine = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.path.realpath(entry / "root") == str(self.root.resolve()):
                        mine.append(int(entry.name))
                except OSError:
                    pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in mine:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in mine):
                time.sleep(0.1)
        return mine


def ensure() -> Path:
    """The complete chroot's directory; built first unless the cache holds one."""
    check_usable()
    root, stamp, lock = _root_paths()
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(lock):
        _build(root, stamp)
    return root


def _bind(source: str, target: Path, *, read_only: bool) -> None:
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", source, str(target)], check=True, capture_output=True)
    if read_only:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)


@contextlib.contextmanager
def session(binds: Sequence[str] = ()) -> Iterator[Chroot]:
    """Enter the chroot (built first if need be) with ``binds`` -- host directories -- mounted
    read-only at the same paths inside; on the way out everything started inside is ended and
    everything mounted is unmounted, whatever happened."""
    root = ensure()
    _, _, lock = _root_paths()
    with _locked(lock):
        chroot = Chroot(root)
        try:
            for name in HOST_FILES:
                if Path(name).exists():
                    chroot.path(name).parent.mkdir(parents=True, exist_ok=True)
                    chroot.path(name).unlink(missing_ok=True)  # may be a link into the chroot's own tree
                    shutil.copyfile(name, chroot.path(name))
            chroot.path("/proc").mkdir(exist_ok=True)
            subprocess.run(["mount", "-t", "proc", "proc", str(chroot.path("/proc"))], check=True, capture_output=True)
            _bind("/dev", chroot.path("/dev"), read_only=False)
            if Path("/dev/shm").is_dir():
                _bind("/dev/shm", chroot.path("/dev/shm"), read_only=False)
            for directory in binds:
                _bind(directory, chroot.path(directory), read_only=True)
                chroot.bound.append(directory)
            yield chroot
        finally:
            chroot.stop_processes()
            _unmount_all(root)
            left = mounts_under(root)
            if left:
                raise RuntimeError(f"could not unmount {left} from the chroot {root}")


def main(argv: Sequence[str]) -> int:
    try:
        check_usable()
    except ChrootUnavailable as exc:
        print(f"the Python 3.13 chroot is not built: {exc}", file=sys.stderr)
        return 0  # its test then says why it is skipped
    with session() as chroot:
        print(f"{SUITE} chroot: {chroot.root} (Python {chroot.python_version()}), "
              f"wheelhouse {chroot.wheelhouse()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
