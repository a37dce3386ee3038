"""runner/horovodrun.py: horovodrun's own launcher, with its Gloo-build check answered by Horovod's
TensorFlow extension library instead of an import of TensorFlow in a forked process."""
from __future__ import annotations

import subprocess
import sys

import pytest

from horovod_batchai.local.runner import horovodrun
from horovod_batchai.local.runner.job_executor import HOROVODRUN

pytest.importorskip("horovod.runner.launch")


def test_the_extension_answers_as_horovodruns_own_check_and_tensorflow_stays_unimported() -> None:
    probe = ("import sys; sys.path.pop(0); import runpy; launcher = runpy.run_path(sys.argv[1]); "
             "print(launcher['tensorflow_extension_gloo_built'](), 'tensorflow' in sys.modules)")
    ours = subprocess.run([sys.executable, "-c", probe, str(HOROVODRUN)], capture_output=True, text=True,
                          timeout=300, check=True).stdout.split()
    # horovodrun's own way: the extension imported in a forked process (TensorFlow with it)
    own = subprocess.run([sys.executable, "-c", "from horovod.common.util import gloo_built; print(gloo_built())"],
                         capture_output=True, text=True, timeout=300, check=True).stdout.split()
    assert ours == [own[-1], "False"]
    assert own[-1] == "True"  # `make install` builds Horovod with Gloo


def test_where_the_library_cannot_be_asked_so_horovodrun_asks_its_own_way(monkeypatch: pytest.MonkeyPatch) -> None:
    found = horovodrun._package_dir
    monkeypatch.setattr(horovodrun, "_package_dir", lambda name: None if name == "tensorflow" else found(name))
    assert horovodrun.tensorflow_extension_gloo_built() is None  # no TensorFlow
    monkeypatch.setattr(horovodrun, "_package_dir", found)
    monkeypatch.setattr(horovodrun, "TENSORFLOW_LIBRARIES", ("libtensorflow_elsewhere.so.2",))
    assert horovodrun.tensorflow_extension_gloo_built() is None  # a TensorFlow laid out otherwise


def test_it_runs_ranks_and_exits_as_horovodrun_does() -> None:
    ranks = subprocess.run([sys.executable, str(HOROVODRUN), "-np", "2", "-H", "localhost:2", "--gloo", sys.executable,
                            "-c", "import os; print('rank', os.environ['HOROVOD_RANK'], 'of', os.environ['HOROVOD_SIZE'])"],
                           capture_output=True, text=True, timeout=300)
    assert ranks.returncode == 0, ranks.stderr[-2000:]
    assert sorted(line.split(":", 1)[1] for line in ranks.stdout.splitlines() if "rank" in line) == [
        "rank 0 of 2", "rank 1 of 2"]
    failed = subprocess.run([sys.executable, str(HOROVODRUN), "-np", "1", "-H", "localhost:1", "--gloo", "/bin/sh", "-c",
                             "exit 3"], capture_output=True, text=True, timeout=300)
    assert failed.returncode == 1 and "Process 0 exit with status code 3." in failed.stdout + failed.stderr
