"""GGSCI: the GoldenGate command language (parsing here; execution is wired separately)."""

from trailgate.ggsci.commands import *  # noqa: F403
from trailgate.ggsci.commands import __all__ as _command_names
from trailgate.ggsci.history import CommandHistory
from trailgate.ggsci.parser import GgsciSyntaxError, parse_command, parse_obey

__all__ = [*_command_names, "CommandHistory", "GgsciSyntaxError", "parse_command",
           "parse_obey"]
