"""MLflow tracking for the local service: MLflow's own tracking server, run on demand.

:mod:`.server` runs ``mlflow server`` (the PyPI ``mlflow`` package, installed beside the service)
on a Unix socket in the state directory; :mod:`.endpoint` starts it when first needed, starts it
again after it dies and stops it with the service; :mod:`.api` is the service's authenticated
HTTPS front for it (``/_mlflow``); :mod:`.runs` makes each job an MLflow run. Where MLflow is not
installed, jobs run without tracking and ``/_mlflow`` answers 503 saying what to install.
"""
