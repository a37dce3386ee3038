"""The service's foundations: HTTP serving, TLS, routing, ARM errors, tokens, settings and the SQLite store."""
