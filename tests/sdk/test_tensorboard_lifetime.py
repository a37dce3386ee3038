"""A TensorBoard started from Python ends when the interpreter that started it ends -- by a normal
exit or killed -- unless it was started with keep_alive=True (then it serves on, and a person must
stop it). Each case starts a real child interpreter that starts TensorBoard and ends."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import List

import psutil
import pytest

pytest.importorskip("tensorboard")

# The child: a TensorBoard on an empty logdir, its process tree printed, then the child ends as asked.
CHILD = textwrap.dedent("""\
    import json, os, signal, sys
    import psutil
    from horovod_batchai._tensorboard import SweepTensorBoard
    logdir, keep_alive, ending = sys.argv[1], sys.argv[2] == "keep", sys.argv[3]
    board = SweepTensorBoard("lifetime", "score", [], [], __import__("pathlib").Path(logdir), None)
    board.start(keep_alive=keep_alive)
    tree = [board.process.pid] + [c.pid for c in psutil.Process(board.process.pid).children(recursive=True)]
    print(json.dumps({"url": board.url, "pids": tree}), flush=True)
    if ending == "kill":
        os.kill(os.getpid(), signal.SIGKILL)  # a kernel killed: no atexit, no finally
    """)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start_child(tmp_path: Path, keep: str, ending: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "logdir"), keep, ending], env=env,
                           capture_output=True, text=True, timeout=300)
    lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the child said: {child.stdout}\n{child.stderr}"
    if ending == "kill":
        assert child.returncode == -9
    else:
        assert child.returncode == 0, child.stderr
    return json.loads(lines[-1])


def _gone(pids: List[int], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("ending", ["exit", "kill"])
def test_tensorboard_ends_with_the_interpreter_that_started_it(tmp_path: Path, ending: str) -> None:
    started = _start_child(tmp_path, "default", ending)
    try:
        assert _gone(started["pids"]), f"TensorBoard still runs after its interpreter ended ({ending})"
    finally:
        for pid in started["pids"]:
            if _alive(pid):
                psutil.Process(pid).kill()


def test_tensorboard_started_with_keep_alive_serves_on(tmp_path: Path) -> None:
    started = _start_child(tmp_path, "keep", "exit")
    board = psutil.Process(started["pids"][0])
    try:
        time.sleep(1)  # whatever ended the others would have begun to by now
        assert board.is_running() and board.status() != psutil.STATUS_ZOMBIE
        assert board.ppid() != os.getpid()  # orphaned: adopted by init or a subreaper, as the issue saw it
        assert json.load(urllib.request.urlopen(started["url"] + "data/runs", timeout=60)) == []  # still answers
    finally:
        for pid in started["pids"]:
            if _alive(pid):
                psutil.Process(pid).kill()
    assert _gone(started["pids"])


def test_keep_alive_must_be_a_bool(tmp_path: Path) -> None:
    from horovod_batchai._tensorboard import SweepTensorBoard
    board = SweepTensorBoard("s", "score", [], [], tmp_path, None)
    with pytest.raises(TypeError, match="keep_alive must be True or False"):
        board.start(keep_alive="no")  # type: ignore[arg-type]
    assert board.process is None
