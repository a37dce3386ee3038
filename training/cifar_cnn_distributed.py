"""The tutorial's ``cifar_cnn_distributed.py``: the script a Batch AI Horovod job names.

A job runs it as ``python cifar_cnn_distributed.py --dir=$AZ_BATCHAI_JOB_MOUNT_ROOT/myshare/cifar``
(job.json's ``pythonScriptFilePath`` and ``commandLineArgs``); it accepts every option of
``python -m training`` (``--help`` lists them). The work is done by the ``training`` package, which
must be installed where the job runs; from a checkout, running this file by its path also works.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # keep TensorFlow's start-up notices out of the log

try:
    from training.train import main
except ModuleNotFoundError as exc:
    if exc.name != "training":
        raise
    # Run by path from a checkout: the package is this file's directory.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        from training.train import main
    except ModuleNotFoundError as again:
        if again.name != "training":
            raise
        sys.exit("error: the 'training' package is not installed here; install the project where "
                 "the job runs (`make install` in a checkout: the training extra, then "
                 "horovod==0.28.1 built against TensorFlow)")

if __name__ == "__main__":
    sys.exit(main())
