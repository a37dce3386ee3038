"""What the tutorial's script and notebook tests share: where the repository is, and the
environment the tutorial runs in (the caller's, without its horovod-batchai and Azure settings,
in a scratch home, with the checkout importable)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tutorial_environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOROVOD_BATCHAI_", "AZURE_"))}
    env["HOME"] = str(home)  # --generate-ssh-keys and Keras' cache stay out of the real home
    # The job imports the training package; a `make install` checkout has it installed, and this
    # makes it importable from the checkout in any case.
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
