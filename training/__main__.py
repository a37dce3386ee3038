"""``python -m training --dir DIR ...``: train the tutorial's CIFAR-10 CNN (see training.train)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # keep TensorFlow's start-up notices out of the log

from training.train import main  # noqa: E402

raise SystemExit(main())
