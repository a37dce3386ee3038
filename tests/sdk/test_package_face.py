"""``horovod_batchai`` imports its public names when first used (PEP 562), and is otherwise the
face it was: every name of ``__all__`` importable from it, listed by ``dir()``, the same object as
in its module, and declared for type checkers by imports that name the same modules. Reading a
spec back does not import the job.json validator. Structural checks, in fresh processes: no timing."""
from __future__ import annotations

import ast
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import horovod_batchai

INIT = Path(horovod_batchai.__file__)


def _run(code: str) -> dict:
    """What ``code`` leaves in ``result`` (a JSON value) and the modules loaded, from a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(INIT.parents[1]), *filter(None, [os.environ.get("PYTHONPATH")])])}
    script = ("result = None\n" + code + "\nimport json, sys\n"
              "print(json.dumps({'result': result, 'modules': sorted(sys.modules)}), file=sys.__stderr__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_importing_the_package_imports_no_public_class_module() -> None:
    ran = _run("import horovod_batchai\nresult = dir(horovod_batchai)")
    loaded = [m for m in ran["modules"] if m.startswith(("horovod_batchai._places", "azure.mgmt", "jsonschema"))
              or m in {f"horovod_batchai.{module[1:]}" for module in horovod_batchai._SOURCES.values()}
              and m not in ("horovod_batchai._models.errors",)]  # the redaction filter installed on import uses it
    assert loaded == []
    assert set(horovod_batchai.__all__) <= set(ran["result"])


def test_every_public_name_is_the_object_of_its_module() -> None:
    import importlib
    assert set(horovod_batchai._SOURCES) == set(horovod_batchai.__all__)
    for name, module in horovod_batchai._SOURCES.items():
        assert getattr(horovod_batchai, name) is getattr(importlib.import_module(module, "horovod_batchai"), name)
    namespace: dict = {}
    exec("from horovod_batchai import *", namespace)
    assert set(horovod_batchai.__all__) <= set(namespace)


def test_an_unknown_name_is_an_attribute_error_and_an_import_error() -> None:
    try:
        horovod_batchai.NoSuchThing  # type: ignore[attr-defined]
    except AttributeError as err:
        assert "NoSuchThing" in str(err)
    else:
        raise AssertionError("no AttributeError")
    ran = _run("try:\n    from horovod_batchai import NoSuchThing\nexcept ImportError as err:\n    result = str(err)")
    assert "NoSuchThing" in ran["result"]


def test_the_type_checking_imports_name_the_same_modules_as_the_lazy_table() -> None:
    """mypy and IDEs read the ``if TYPE_CHECKING:`` imports, the interpreter the table: they agree."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                 and not isinstance(node.test, ast.UnaryOp))
    declared = {alias.name: "." + (node.module or "") for node in block.body if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert declared == horovod_batchai._SOURCES


#: a spec without a secret, written as code that a fresh process runs too
SPEC = ("HorovodJob(script='$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/train.py', node_count=2, "
        "mounts=[AzureFileShareMount.for_share('mystorageaccount', 'myshare')])")


def test_a_spec_pickles_by_its_module_as_before() -> None:
    from horovod_batchai import AzureFileShareMount, ExecutionState, HorovodJob
    spec = eval(SPEC, {"HorovodJob": HorovodJob, "AzureFileShareMount": AzureFileShareMount})
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert pickle.loads(pickle.dumps(ExecutionState.RUNNING)) is ExecutionState.RUNNING
    ran = _run(f"import pickle\nfrom horovod_batchai import AzureFileShareMount, HorovodJob\n"
               f"result = pickle.dumps({SPEC}).hex()")
    assert pickle.loads(bytes.fromhex(ran["result"])) == spec


def test_reading_a_spec_back_does_not_import_the_validator() -> None:
    ran = _run(f"from horovod_batchai import AzureFileShareMount, HorovodJob\n"
               f"result = {SPEC}.to_dict()['$schema']")
    assert ran["result"].endswith("/2018-05-01/job.json")
    assert [m for m in ran["modules"] if m.startswith(("jsonschema", "referencing"))] == []
    checked = _run(f"from horovod_batchai import AzureFileShareMount, HorovodJob\n"
                   f"HorovodJob.from_dict({SPEC}.to_dict())")
    assert "jsonschema" in checked["modules"]  # validating a document still uses the official schema
