"""Microsoft.Storage: storage accounts and their keys, as both the management and the data planes see them."""
