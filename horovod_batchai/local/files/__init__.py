"""The Azure Files data plane: the API, Shared Key and SAS authentication, and shares kept as directories."""
