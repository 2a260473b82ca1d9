"""The Extract group for PostgreSQL: parameters to capture options, table rules and tokens,
start-up checks, and the streaming query (``group``).  See docs/extract.md."""
