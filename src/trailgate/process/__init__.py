"""Group processes: the runtime (``trailgate run``) and their lifecycle (start, stop, kill).

Importing this package does not start Spark or import the lifecycle's helpers."""
