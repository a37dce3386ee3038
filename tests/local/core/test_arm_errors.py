"""ARM errors: one class per code, raised by name, answered in one envelope."""
from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import horovod_batchai.local as local
from horovod_batchai.local.core.arm_errors import ArmError, InjectedFault, InvalidParameter, arm_error_response

ROOT = Path(local.__file__).parent


def _error_classes() -> list[type[ArmError]]:
    for info in pkgutil.walk_packages([str(ROOT)], prefix="horovod_batchai.local."):
        if info.name.rsplit(".", 1)[-1] == "errors" or info.name.endswith("arm_errors"):
            importlib.import_module(info.name)
    found: list[type[ArmError]] = []
    todo = [ArmError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_the_envelope_names_the_code_the_message_and_the_target():
    response = arm_error_response(InvalidParameter("The property 'x' must be an integer.", target="properties.x"))
    assert response.status_code == 400
    assert json.loads(response.get_data()) == {"error": {"code": "InvalidParameter",
                                                         "message": "The property 'x' must be an integer.",
                                                         "target": "properties.x"}}
    assert response.headers["x-ms-request-id"]
    fault = arm_error_response(InjectedFault(429, "Fault injected.", headers={"Retry-After": "1"}))
    assert (fault.status_code, fault.headers["Retry-After"]) == (429, "1")
    assert json.loads(fault.get_data()) == {"error": {"code": "InjectedFault", "message": "Fault injected."}}


def test_every_code_is_one_class_named_after_it():
    classes = [cls for cls in _error_classes() if cls is not ArmError]
    assert len(classes) > 40
    codes = [cls.code for cls in classes]
    assert all(cls.code == cls.__name__ for cls in classes)
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    assert all(100 <= cls.status < 600 for cls in classes)


def test_no_module_builds_an_arm_error_by_its_code_string():
    """Errors are raised by name: ``ArmError(...)`` itself is never called (it would take a code string)."""
    inline = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ArmError":
                inline.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not inline, "ArmError built inline at:\n" + "\n".join(inline)
