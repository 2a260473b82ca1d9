"""Group processes: the runtime (``trailgate run``) and their lifecycle (start, stop, kill)."""
