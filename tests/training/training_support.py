"""Helpers for the training package's tests: run the trainer in child processes and read its output.

The trainer always runs in child processes (`python ...` or `horovodrun -np 2 ...`) with one
TensorFlow thread each: the machines that run these tests have two cores, shared with other tests.
"""
from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence

import psutil

REPO = Path(__file__).resolve().parents[2]
HOROVODRUN = Path(sys.executable).with_name("horovodrun")
TRAIN_IMAGES, TEST_IMAGES = 2000, 500
# horovodrun prefixes each line with "[rank]<stream>:"; a single process prints bare lines.
_LINE = r"^(?:\[(\d+)\]<std(?:out|err)>:)?"
_ACCURACY = re.compile(_LINE + r"Test accuracy: ([0-9.eE+-]+)\s*$", re.MULTILINE)
_EPOCH = re.compile(_LINE + r"Epoch (\d+)/(\d+)\s*$", re.MULTILINE)


def child_env(**extra: str) -> dict:
    """The environment of a training process: this checkout importable, one thread, quiet TF."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(OMP_NUM_THREADS="1", TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1",
               TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def run_python(args: Sequence[str], *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=child_env(), capture_output=True,
                          text=True, timeout=timeout)


def horovodrun_command(args: Sequence[str], *, workers: int = 2) -> List[str]:
    """`horovodrun -np N -H localhost:N --gloo python ARGS`: Gloo needs neither MPI nor ssh."""
    return [str(HOROVODRUN), "-np", str(workers), "-H", f"localhost:{workers}", "--gloo",
            sys.executable, *args]


def reported_accuracy(output: str) -> float:
    """The value of the one 'Test accuracy:' line, which must come from rank 0."""
    found = _ACCURACY.findall(output)
    assert len(found) == 1, f"expected one 'Test accuracy:' line, got {found}\n{output[-3000:]}"
    rank, value = found[0]
    assert rank in ("", "0"), f"'Test accuracy:' printed by rank {rank}"
    return float(value)


def epochs_started(output: str) -> List[int]:
    """The epoch numbers (1-based) of Keras' 'Epoch k/N' lines, in order."""
    return [int(epoch) for _rank, epoch, _total in _EPOCH.findall(output)]


def metrics_rows(path: Path) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def kill_process_tree(pid: int) -> None:
    """SIGKILL a process and all its descendants at once, as a lost node would end them."""
    try:
        root = psutil.Process(pid)
        processes = root.children(recursive=True) + [root]
    except psutil.NoSuchProcess:
        return
    for process in processes:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(processes, timeout=30)
