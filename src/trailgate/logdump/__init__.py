"""Logdump and the annotated trail dump: tools for people reading trail files by hand.

``trailgate logdump`` follows Oracle's Logdump (commands, abbreviations, output layout) so
people who know GoldenGate can inspect a trailgate trail without learning a new tool;
``trailgate trail dump --annotate`` prints every byte the way seed 001's TrailAnalyzer does.
Nothing here imports Spark or a database driver: it must start instantly on any box that
holds trail files.
"""
