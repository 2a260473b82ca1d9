"""The Data Pump on Spark: an EXTTRAILSOURCE Extract copying a trail to another trail.

``trailgate run extract NAME`` runs :func:`trailgate.pump.group.run_pump` for a group added
with ``ADD EXTRACT NAME, EXTTRAILSOURCE ./dirdat/aa``; see docs/pump.md.
"""
