"""Specs that pickle by value, and never with a secret in the bytes.

A frozen spec (``HorovodJob``, ``ClusterSpec``, the mounts, ...) is a value: it pickles as its
fields, its read-only mappings travelling as plain dicts and made read-only again when loaded.
A spec that holds a secret -- a storage account key or SAS token, a password, a secret environment value, an
unmanaged mount's command, an output file's SAS link -- is refused with :class:`InvalidSpecError` naming each such field:
pickled bytes end up in task queues, databases and logs, where no key belongs. The receiving
process fills them in itself (``spec.with_storage(share)`` fetches the key with ``listKeys``).
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any, ClassVar, Collection, Mapping

from .errors import InvalidSpecError

__all__ = ["PicklesWithoutSecrets", "secret_fields", "SECRET_ATTRIBUTES"]

#: the fields of a spec that hold a secret value when set
SECRET_ATTRIBUTES = frozenset({"account_key", "sas_token", "password", "admin_password", "mount_command", "secrets",
                               "download_url"})
#: stands for a key still to be filled in; not a secret
_PLACEHOLDERS = frozenset({"<AZURE_BATCHAI_STORAGE_KEY>"})


def secret_fields(value: Any, prefix: str = "") -> list[str]:
    """The fields of ``value`` (a spec dataclass, recursing into the specs it holds) that carry a
    secret, named as the caller wrote them (``mounts[0].account_key``)."""
    found: list[str] = []
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return found
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        name = f"{prefix}{f.name}"
        if f.name in SECRET_ATTRIBUTES:
            if isinstance(item, Mapping) and len(item) > 0:
                found.append(f"{name} ({', '.join(sorted(item))})")
            elif isinstance(item, str) and item and item not in _PLACEHOLDERS:
                found.append(name)
        elif isinstance(item, tuple):
            for i, element in enumerate(item):
                found += secret_fields(element, f"{name}[{i}].")
        else:
            found += secret_fields(item, f"{name}.")
    return found


class PicklesWithoutSecrets:
    """Pickling for a frozen spec dataclass (see the module's docstring)."""

    #: how errors name the spec's fields: "" for a top-level spec, "mount." for a mount, ...
    _pickle_prefix: ClassVar[str] = ""
    #: the valid form an error about a secret field states
    _pickle_hint: ClassVar[str] = "the spec without it; set the secret again in the receiving process"

    def _pickle_error(self, fields: Collection[str]) -> InvalidSpecError:
        return InvalidSpecError(", ".join(fields), "holds a secret, and secrets are never pickled", self._pickle_hint)

    def __getstate__(self) -> dict[str, Any]:
        found = secret_fields(self, self._pickle_prefix)
        if found:
            raise self._pickle_error(found)
        state = dict(vars(self))
        mappings = [name for name, item in state.items() if isinstance(item, MappingProxyType)]
        for name in mappings:
            state[name] = dict(state[name])
        state["__read_only_mappings__"] = mappings
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        for name in state.pop("__read_only_mappings__", ()):
            state[name] = MappingProxyType(dict(state[name]))
        vars(self).update(state)  # a frozen dataclass: its fields are set through its __dict__
