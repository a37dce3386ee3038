"""The Azure Machine Learning backend (``Target.azureml``), through azure-ai-ml."""
from .backend import AzureMLBackend

__all__ = ["AzureMLBackend"]
