"""The Manager: keeps a home's groups running, purges trails, reports lag, and serves metrics,
a REST API and a web console (docs/manager.md)."""
