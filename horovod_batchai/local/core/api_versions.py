"""Every published api-version of each resource type the service serves, as ARM accepts them.

ARM answers any api-version the resource provider has published and refuses others with
``InvalidApiVersionParameter``; clients send whatever version they were generated for (the Azure CLI
2.91.0 sends Resources 2024-11-01 and Storage 2025-08-01, azure-mgmt-storage 21.0.0 sends 2022-09-01).
The lists are the folders and readme tags of each service's specification in Azure/azure-rest-api-specs
(``specification/<service>/resource-manager``), stable and preview. Where a version's wire shape
differs in a way a client notices, the handlers answer in that version's shape (see the storage and
subscriptions modules); otherwise later versions only add fields.
"""
from __future__ import annotations

__all__ = ["RESOURCES", "SUBSCRIPTIONS", "STORAGE", "STORAGE_CLASSIC", "STORAGE_FILE_SERVICES", "BATCHAI", "BATCHAI_OPERATIONS",
           "BATCHAI_USAGES"]

#: Microsoft.Resources resourceGroups (and the subscription-level operationresults of their deletion).
RESOURCES = frozenset({
    "2015-11-01", "2016-02-01", "2016-07-01", "2016-09-01", "2017-05-10", "2018-02-01", "2018-05-01",
    "2019-03-01", "2019-05-01", "2019-05-10", "2019-07-01", "2019-08-01", "2019-10-01", "2020-06-01",
    "2020-08-01", "2020-10-01", "2021-01-01", "2021-04-01", "2022-09-01", "2023-07-01", "2024-03-01",
    "2024-07-01", "2024-11-01", "2025-03-01", "2025-04-01",
})

#: Microsoft.Resources subscriptions and tenants.
SUBSCRIPTIONS = frozenset({"2015-11-01", "2016-06-01", "2018-06-01", "2019-06-01", "2019-11-01", "2020-01-01",
                           "2021-01-01", "2022-12-01"})

#: Microsoft.Storage storageAccounts with listKeys, regenerateKey, checkNameAvailability and the
#: location's asyncoperations.
STORAGE = frozenset({
    "2015-05-01-preview", "2015-06-15", "2016-01-01", "2016-05-01", "2016-12-01", "2017-06-01", "2017-10-01",
    "2018-02-01", "2018-03-01-preview", "2018-07-01", "2018-11-01", "2019-04-01", "2019-06-01",
    "2020-08-01-preview", "2021-01-01", "2021-02-01", "2021-04-01", "2021-06-01", "2021-08-01", "2021-09-01",
    "2022-05-01", "2022-09-01", "2023-01-01", "2023-04-01-preview", "2023-04-01", "2023-05-01", "2024-01-01",
    "2025-01-01", "2025-06-01", "2025-08-01", "2026-04-01", "2026-06-01", "2026-09-01",
})
#: the versions before SKUs: the account type is ``properties.accountType``, there is no ``sku`` or
#: ``kind``, and the keys are ``{"key1": ..., "key2": ...}``.
STORAGE_CLASSIC = frozenset({"2015-05-01-preview", "2015-06-15"})
#: an account's fileServices and shares, published from 2019-04-01 on.
STORAGE_FILE_SERVICES = frozenset(v for v in STORAGE if v >= "2019-04-01")

#: Microsoft.BatchAI workspaces and everything in them exist in 2018-05-01 only; the earlier
#: 2017-09-01-preview and 2018-03-01 had clusters, jobs and file servers directly in resource groups,
#: which are other resource types, not served here.
BATCHAI = frozenset({"2018-05-01"})
#: the provider's operation list, published in all three versions.
BATCHAI_OPERATIONS = frozenset({"2017-09-01-preview", "2018-03-01", "2018-05-01"})
#: a location's usages, from 2018-03-01 on.
BATCHAI_USAGES = frozenset({"2018-03-01", "2018-05-01"})
