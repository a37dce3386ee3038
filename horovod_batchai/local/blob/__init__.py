"""Blob storage for the local service, served by Azurite, Microsoft's Azure Storage emulator.

Azurite is a Node.js program (the npm package ``azurite``, pinned in the project's
``package.json`` and installed by ``make install`` into ``./node_modules``). :mod:`.azurite` finds
Node.js and that package, runs Azurite's blob service on loopback over HTTPS with the service's
certificate, hands it the storage accounts and their keys, and stops it with the service. Where
Node.js or Azurite is missing, blob features fail with :class:`.azurite.BlobStorageUnavailable`,
whose message says how to install them; nothing else depends on this package.
"""
