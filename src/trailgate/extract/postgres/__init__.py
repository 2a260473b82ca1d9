"""The PostgreSQL Extract: a logical replication slot captured into a trail.

``config`` resolves the group, ``startup`` checks the source, ``source`` is the ``pgcapture``
Spark source over the slot, ``trail_streamer`` writes transactions to the trail as they
arrive, ``micro_batch`` makes each batch's range durable and checkpoints it, and ``group``
runs it all.  See docs/extract.md.
"""
