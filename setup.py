"""horovod-batchai: run the Azure Batch AI Horovod tutorial from Python -- locally, on Azure Machine
Learning, or against Batch AI's API."""
import re
from pathlib import Path

from setuptools import find_packages, setup

# The training stack is pinned as one unit, because the three only work together:
# - horovod 0.28.1 is Horovod's last release; its Keras integration (hvd.DistributedOptimizer,
#   the callbacks) wraps tf.keras optimizers of Keras 2.
# - TensorFlow 2.16 moved tf.keras to Keras 3, whose optimizers hvd.DistributedOptimizer cannot
#   wrap, so TensorFlow stays at 2.15.1 (the last 2.15 release) with its Keras 2.15.
# - horovod is compiled against the installed TensorFlow's headers and ABI: it is not on this
#   list, because pip would build it in an isolated environment that cannot see TensorFlow.
#   `make install` builds horovod==0.28.1 afterwards with --no-build-isolation (see the Makefile).
# On a GPU machine, replace tensorflow-cpu by tensorflow[and-cuda]==2.15.1 before building horovod.
# TensorFlow 2.15 has wheels for Python 3.9-3.11 only, so this extra installs on Python 3.11 only
# (on a later Python pip refuses it, naming tensorflow-cpu): it is what a *node runtime* holds, the
# environment the local service runs jobs with, and it may be another Python than the SDK's
# (see docs/service.rst). No marker hides it on later Pythons: a `[training]` that installed
# nothing there would fail later, at the first job.
TRAINING_REQUIRES = [
    "tensorflow-cpu==2.15.1",
    "keras==2.15.0",
    "numpy>=1.23,<2",          # TensorFlow 2.15 is built against NumPy 1.x
    "h5py>=3.10",              # the tutorial saves the model as HDF5
    "scipy>=1.10",             # ImageDataGenerator's shifts, in benchmarks/bench_training.py's baseline
    # TensorBoard 2.15 (TensorFlow's) imports pkg_resources, which setuptools 81 removed.
    "setuptools>=68,<81",
]

# Rank 0 logs to MLflow when the job has MLFLOW_TRACKING_URI: the logging client only, which
# MLflow recommends for logging-only environments (3.17 resolves beside TF 2.15 and NumPy 1).
TRACKING_CLIENT_REQUIRES = [
    "mlflow-skinny==3.17.*",
]

# The local service's tracking server: MLflow's own (`mlflow server`), run beside the service.
MLFLOW_REQUIRES = [
    "mlflow==3.17.*",
]

# Curves in a notebook: Job.metrics().plot() and Job.watch() draw with matplotlib; tables convert
# to pandas. The SDK imports both only when asked. Where the training stack can live (Python 3.11),
# numpy stays below 2 beside TensorFlow 2.15, so that installing this extra never upgrades it.
NOTEBOOK_REQUIRES = [
    "matplotlib>=3.7,<3.11",
    "pandas>=2.0,<3",
    "numpy>=1.23,<2; python_version < '3.12'",
]

# Azure Machine Learning (Target.azureml): Microsoft's Azure ML SDK v2, pinned to the version the
# replay tests were written against (its per-operation api-versions and the recorded traffic in
# ../shared/reference/azureml-recordings); azure-storage-blob reads the jobs' logs.
AZUREML_REQUIRES = [
    "azure-ai-ml==1.35.2",
    "azure-storage-blob>=12.20,<13",
]

# horovod_batchai.aio: aiohttp is azure-core's asynchronous transport, which every aio client of
# Microsoft's (azure.mgmt.*.aio, azure.storage.fileshare.aio, azure.identity.aio) sends through.
AIO_REQUIRES = [
    "aiohttp>=3.9,<4",
]

SDK_REQUIRES = [
    "azure-mgmt-batchai==7.0.0",     # last release; Batch AI api-version 2018-05-01
    "msrest>=0.7.1",                 # imported by azure-mgmt-batchai 7.0.0 without declaring it
    "azure-mgmt-resource>=23,<26",   # 26 dropped the top-level ResourceManagementClient
    "azure-mgmt-storage>=21,<26",
    "azure-storage-file-share>=12.20,<13",
    # The local service checks blob mounts, keeps them in step and signs download links with it;
    # the local service is part of the base install, so this is too.
    "azure-storage-blob>=12.20,<13",
    "azure-identity>=1.15,<2",
    "azure-core>=1.31,<2",           # 1.31 added AccessTokenInfo, which LocalCredential returns
    "jsonschema>=4.18,<5",           # validates job.json against the official 2018-05-01 schemas
    "werkzeug>=3.0,<4",              # the local service's WSGI toolkit (requests, responses)
    # The local service's HTTP/1.1 server (keep-alive over TLS); core/http_server.py subclasses its
    # request, connection and thread-pool classes, so the major version is pinned.
    "cheroot>=11,<12",
    "cryptography>=41",              # the local service's loopback TLS certificate
    "tqdm>=4.60",                    # upload / download progress
    # The local service's Bayesian sweeps sample with Optuna's TPE (seeded); the local service is part
    # of the base install, so this is too. 5.x changes nothing TensorFlow 2.15 / NumPy 1.26 need.
    "optuna>=5,<6",
]

# the version is written once, where the package reads it (the user agent of its requests)
VERSION = re.search(r'^SDK_VERSION = "([^"]+)"', Path(__file__).with_name("horovod_batchai").joinpath(
    "_models", "constants.py").read_text(encoding="utf-8"), re.M).group(1)  # type: ignore[union-attr]

setup(
    name="horovod-batchai",
    version=VERSION,
    description="Provision GPU clusters and file shares and run Horovod training jobs from Python: "
                "on the embedded local service, on Azure Machine Learning, or on Batch AI's API.",
    long_description=Path(__file__).with_name("README.rst").read_text(encoding="utf-8")
    if Path(__file__).with_name("README.rst").exists() else "",
    long_description_content_type="text/x-rst",
    license="MIT",
    # The SDK (and the local service) needs no training stack. `make test` runs it on the two ends of
    # this range on every run (3.11 here, 3.13 in a Debian trixie chroot); 3.12, between them and the
    # default Python of Ubuntu 24.04, is admitted: mypy checks the package against 3.12's standard
    # library (tests/test_python_versions.py), though no 3.12 interpreter runs the suite here.
    python_requires=">=3.11,<3.14",
    packages=find_packages(include=["horovod_batchai", "horovod_batchai.*", "training", "training.*"]),
    package_data={"horovod_batchai": ["py.typed", "_models/schemas/*.json", "local/blob/launcher.js",
                                      "_places/azureml/environment/Dockerfile"]},
    install_requires=SDK_REQUIRES,
    extras_require={
        "training": TRAINING_REQUIRES + TRACKING_CLIENT_REQUIRES,
        "test": ["pytest>=7", "pytest-xdist>=3.5",  # make test runs the suite on every core
                 "responses>=0.23", "mypy>=1.5", "requests>=2.28",
                 "psutil>=5.9",  # tests stop whole horovodrun process trees
                 # the notebook test runs examples/tutorial.ipynb in a real kernel, widgets included
                 "nbclient>=0.9", "ipykernel>=6.25", "ipywidgets>=8"],
        "docs": ["sphinx>=7"],
        "azureml": AZUREML_REQUIRES,
        "notebook": NOTEBOOK_REQUIRES,
        "aio": AIO_REQUIRES,
        "mlflow": MLFLOW_REQUIRES,
    },
    entry_points={"console_scripts": ["horovod-batchai = horovod_batchai.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "License :: OSI Approved :: MIT License",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
