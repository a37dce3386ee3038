"""``python -m horovod_batchai.cli``: the horovod-batchai command."""
import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
