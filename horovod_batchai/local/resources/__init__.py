"""Microsoft.Resources: resource groups, and the checks every resource-group-scoped request shares."""
