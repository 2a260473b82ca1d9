"""Capture sources: PostgreSQL (pgoutput) and Oracle (redo log dumps)."""
