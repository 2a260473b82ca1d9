"""The collector: the trailgate process on a target host that writes a remote trail a Data
Pump sends it (GoldenGate's Collector), and the Pump's side of the conversation.

``trailgate collector`` runs :mod:`trailgate.collector.server`; a Pump with ``RMTHOST host,
PORT n`` mirrors its output through :mod:`trailgate.collector.client`; docs/pump.md.
"""
