"""horovodrun, run as its console script runs it (``horovod.runner.launch.run_commandline``), with
one question answered by Horovod's extension library itself.

Before it starts any rank, horovodrun asks whether Horovod was built with Gloo by importing each
framework's Horovod extension in a forked process; for TensorFlow that imports TensorFlow: 4 to 5
CPU seconds at every job. The extension library exports the answer (``horovod_gloo_built``, what
``hvd.gloo_built()`` returns): this file loads the TensorFlow extension with ctypes, after the two
TensorFlow libraries it links against (a third of a CPU second), and hands that answer to
horovodrun. Where the library cannot be loaded so (no TensorFlow, another framework, another
layout), horovodrun asks its own way. Arguments, output, exit codes and the ranks' processes are
horovodrun's own.

    python horovodrun.py -np 2 -H localhost:2 --gloo python train.py ...

It runs as a file, with the node runtime's interpreter, which has Horovod but maybe not this package
(and without this directory on ``sys.path``, where its neighbours would shadow top-level modules).
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import sys
from typing import Optional

#: the TensorFlow libraries Horovod's TensorFlow extension links against, in the order they load
TENSORFLOW_LIBRARIES = ("libtensorflow_framework.so.2", "libtensorflow_cc.so.2")


def _package_dir(name: str) -> Optional[str]:
    spec = importlib.util.find_spec(name)  # finds the package without importing it
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if locations else None


def tensorflow_extension_gloo_built() -> Optional[bool]:
    """Whether Horovod's TensorFlow extension was built with Gloo, or None when it cannot be asked here."""
    horovod, tensorflow = _package_dir("horovod"), _package_dir("tensorflow")
    if horovod is None or tensorflow is None:
        return None
    extensions = sorted(glob.glob(os.path.join(horovod, "tensorflow", "mpi_lib*.so")))
    if not extensions:
        return None
    try:
        for library in TENSORFLOW_LIBRARIES:
            ctypes.CDLL(os.path.join(tensorflow, library), mode=ctypes.RTLD_GLOBAL)
        return bool(ctypes.CDLL(extensions[0], mode=ctypes.RTLD_GLOBAL).horovod_gloo_built())
    except (OSError, AttributeError):
        return None


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != here]
    from horovod.runner import launch

    built = tensorflow_extension_gloo_built()
    if built is not None:
        launch.gloo_built = lambda verbose=False: built
    sys.argv[0] = "horovodrun"
    launch.run_commandline()


if __name__ == "__main__":
    main()
