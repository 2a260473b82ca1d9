"""Compare source and target tables (Veridata-like): hashes per key range, then rows only
where ranges differ, in-flight differences confirmed after the Replicat's lag."""
