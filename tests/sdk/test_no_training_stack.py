"""The SDK, the local service and the CLI import no part of the training stack: every module of
``horovod_batchai`` imports in a Python where TensorFlow, Keras and Horovod cannot be imported.
(tests/python313 runs the whole flow, service included, in an environment that lacks them.)"""
from __future__ import annotations

import subprocess
import sys

from client_venvs import REPO

BLOCKED = ("tensorflow", "keras", "horovod")

PROGRAM = f"""
import importlib, pkgutil, sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is part of the training stack")

sys.meta_path.insert(0, Refuse())
import horovod_batchai
names = ["horovod_batchai"] + [m.name for m in pkgutil.walk_packages(horovod_batchai.__path__, "horovod_batchai.")
                               if not m.name.endswith("__main__")]  # those run their command
for name in names:
    importlib.import_module(name)
print(len(names), sorted(n for n in sys.modules if n.split(".")[0] in {BLOCKED!r}))
"""


def test_every_module_of_the_sdk_imports_without_the_training_stack() -> None:
    result = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    count, loaded = result.stdout.split(" ", 1)
    assert int(count) > 90 and loaded.strip() == "[]", result.stdout
