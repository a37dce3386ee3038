"""The distributed Keras CIFAR-10 training that the tutorial's Batch AI jobs run.

The tutorial's CNN, made distributed with Horovod the way Horovod's own examples do it today:
one GPU per process, a shard of the data per worker, learning rate scaled by the number of workers
with a warm-up, averaged gradients and metrics, checkpoints on rank 0 and resumption from them.

Run it with ``horovodrun -np N python -m training --dir DIR`` or alone, or name
``training/cifar_cnn_distributed.py`` as a job's script; from Python::

    from training import TrainConfig
    from training.train import train
    metrics = train(TrainConfig(dir="out", data_dir="cifar-10-batches-py", epochs=10))

Modules, one concern each: ``config`` (every setting and the command line), ``data`` (CIFAR-10
files), ``synthetic`` (a learnable stand-in in the official format), ``pipeline`` (tf.data),
``model`` (the CNN), ``checkpoints`` (what a restart resumes from), ``train`` (the distributed
run). Importing this package imports neither TensorFlow nor Horovod; ``training.train`` does.
"""
from training.config import ConfigError, TrainConfig

__all__ = ["ConfigError", "TrainConfig"]
