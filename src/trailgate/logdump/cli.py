"""``trailgate logdump [FILE]``: the interactive prompt, or commands read from stdin.

At a terminal it prompts ``Logdump N >`` with line editing and history (prompt_toolkit);
with stdin redirected it runs each line and prints only the commands' output, so
``trailgate logdump < obey.txt > out.txt`` works like ``logdump > out.txt <<EOF`` (seed 002).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from trailgate.logdump.commands import execute
from trailgate.logdump.session import Session

__all__ = ["add_arguments", "run", "run_lines"]

_HISTORY_FILE = Path.home() / ".trailgate_logdump_history"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="trail file to open (OPEN file does it later)")


def run_lines(session: Session, lines: Iterable[str]) -> None:
    """Run commands until EXIT or the end of ``lines``."""
    for line in lines:
        if execute(session, line):
            break


def _interactive(session: Session) -> None:
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory
    except ImportError:  # pragma: no cover - prompt_toolkit is a dependency
        _plain_prompt(session)
        return
    history: History
    try:
        history = FileHistory(str(_HISTORY_FILE))
    except OSError:
        history = InMemoryHistory()
    prompt: PromptSession[str] = PromptSession(history=history)
    number = 1
    while True:
        try:
            line = prompt.prompt(f"Logdump {number} >")
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if execute(session, line):
            break
        if line.strip():
            number += 1


def _plain_prompt(session: Session) -> None:
    number = 1
    while True:
        try:
            line = input(f"Logdump {number} >")
        except EOFError:
            break
        if execute(session, line):
            break
        if line.strip():
            number += 1


def run(args: argparse.Namespace, stdin: TextIO | None = None,
        stdout: TextIO | None = None) -> int:
    """Entry point for ``trailgate logdump``."""
    stdin = stdin if stdin is not None else sys.stdin
    if isinstance(stdin, io.TextIOWrapper):  # a byte that is not UTF-8: an unknown command
        stdin.reconfigure(errors="replace")
    session = Session(stdout if stdout is not None else sys.stdout)
    try:
        if getattr(args, "file", None):
            session.open(args.file)
        if stdin.isatty() and session.out.isatty():
            _interactive(session)
        else:
            run_lines(session, stdin)
    finally:
        session.close()
    return 0
