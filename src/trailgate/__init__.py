"""trailgate: log-based change data capture and replication in the GoldenGate trail format."""

__version__ = "0.1.0"
