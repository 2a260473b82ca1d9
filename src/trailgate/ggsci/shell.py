"""``trailgate ggsci [OBEY_FILE]``: the GGSCI prompt, or a script from a file or stdin.

At a terminal it prompts ``GGSCI (host) N>`` with line editing and history (prompt_toolkit),
reports errors and carries on.  Given an obey file, or commands on stdin, it echoes each
command after the prompt as GGSCI does (passwords masked, since transcripts get shared), so
the output reads like a session transcript; the whole script is parsed before anything
runs, and the first error stops it with the file and line and a non-zero exit status, so a
setup script never half-runs past a mistake unnoticed.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import sys
from pathlib import Path
from typing import Any, TextIO

from trailgate import __version__
from trailgate.errors import TrailgateError
from trailgate.ggsci.commands import Command, Repeat
from trailgate.ggsci.executor import Executor, GgsciError, TextOut, mask_secrets
from trailgate.ggsci.history import CommandHistory
from trailgate.ggsci.parser import GgsciSyntaxError, parse_command, parse_obey
from trailgate.home import Home
from trailgate.wallet.masking import PASSWORD_CLAUSE

__all__ = ["Shell", "add_arguments", "run"]

_HISTORY_FILE = Path.home() / ".trailgate_ggsci_history"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("obey", nargs="?", metavar="OBEY_FILE",
                        help="run the commands of this obey file, then exit (stops at the "
                             "first error, exit status 1)")


class _ObeyFailed(GgsciError):
    """An obey file stopped at an error that has already been printed with its place."""

    def __init__(self) -> None:
        super().__init__("obey file stopped", reported=True)


def _message(exc: BaseException) -> str:
    """The GGSCI ``ERROR: …`` text of any failure (never a traceback)."""
    if isinstance(exc, TrailgateError):
        text = str(exc).strip()
        where = getattr(exc, "path", None)
        if where is not None:  # the shell names the file and line on its own line
            line = getattr(exc, "line", None)
            prefix = f"{where}, line {line}: " if line is not None else f"{where}: "
            text = text.removeprefix(prefix)
    elif isinstance(exc, OSError):
        text = f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    elif type(exc).__module__.startswith("psycopg"):
        diag = getattr(exc, "diag", None)
        detail = getattr(diag, "message_primary", None) or str(exc).strip()
        text = f"database error: {detail}. DBLOGIN again if the connection was lost."
    else:
        text = (f"internal error ({type(exc).__name__}: {exc}); please report it with the "
                f"command that caused it.")
    return text if text.startswith("ERROR:") else f"ERROR: {text}"


class _Exit(BaseException):
    """EXIT ran inside a nested obey file: end the session (a BaseException so that the
    error handlers, which catch Exception, let it through)."""


class Shell:
    """One GGSCI session: numbering, echo, history, obey files, and error policy."""

    def __init__(self, home: Home, out: TextOut, *, interactive: bool = False,
                 **executor_options: Any):
        self.home = home
        self.out = out
        self.interactive = interactive
        self.host = socket.gethostname()
        self.number = 1
        self.history = CommandHistory()
        self.executor = Executor(home, out, interactive=interactive, history=self.history,
                                 on_obey=self._obey, **executor_options)
        self._obey_stack: list[Path] = []

    @property
    def prompt(self) -> str:
        return f"GGSCI ({self.host}) {self.number}> "

    def print(self, *lines: str) -> None:
        self.executor.print(*lines)

    def banner(self) -> None:
        self.print(f"trailgate GGSCI {__version__}: the GoldenGate command interpreter",
                   f"Home: {self.home.path}", "")

    def close(self) -> None:
        self.executor.close()

    # -- one command ----------------------------------------------------------------------
    def run_command(self, text: str, cmd: Command, *, echo: bool) -> bool:
        """Echo (in scripts), number, record and execute one parsed command; True on EXIT.
        Failures propagate as exceptions for the caller's error policy."""
        if echo:
            self.print(self.prompt + mask_secrets(text.strip()))
        if isinstance(cmd, Repeat):
            text = self.history.resolve(cmd)
            self.print(mask_secrets(text.strip()))
            repeated = parse_command(text)
            assert repeated is not None  # the history holds only commands
            cmd = repeated
        self.number += 1
        self.history.add(text)
        done = self.executor.execute(cmd, text)
        self.print("")
        return done

    def run_interactive_line(self, text: str) -> bool:
        """A line typed at the prompt: errors are printed and the session goes on."""
        try:
            cmd = parse_command(text)
            if cmd is None:
                return False
            return self.run_command(text, cmd, echo=False)
        except Exception as exc:  # every failure is a message, the prompt carries on
            if not getattr(exc, "reported", False):
                self.print(_message(exc), "")
            return False

    # -- scripts --------------------------------------------------------------------------
    def run_script(self, text: str, name: str, origin: Path | None = None) -> bool:
        """Run an obey script: parse it all, then run each command; the first error stops
        it (raising ``_ObeyFailed`` after printing the error and where).  True on EXIT."""
        try:
            commands = parse_obey(text, name)
        except GgsciSyntaxError as exc:
            self.print(_message(exc),
                       f"ERROR: {name}, line {exc.line}: nothing in {name} was run; correct "
                       f"the line and run it again.", "")
            raise _ObeyFailed() from None
        lines = text.splitlines()
        if origin is not None:
            self._obey_stack.append(origin)
        try:
            for number, cmd in commands:
                try:
                    if self.run_command(lines[number - 1], cmd, echo=True):
                        return True
                except _ObeyFailed:
                    self.print(f"ERROR: {name}, line {number}: the obey file stopped here; "
                               f"the commands before this line were run.", "")
                    raise
                except _Exit:
                    return True
                except Exception as exc:  # the error is reported with its place
                    if not getattr(exc, "reported", False):
                        self.print(_message(exc))
                    self.print(f"ERROR: {name}, line {number}: the obey file stopped here; "
                               f"the commands before this line were run.", "")
                    raise _ObeyFailed() from None
        finally:
            if origin is not None:
                self._obey_stack.pop()
        return False

    def run_file(self, path: str) -> bool:
        """Run an obey file found as :meth:`_resolve` finds it; True on EXIT."""
        file = self._resolve(path)
        if file in self._obey_stack:
            chain = " -> ".join(str(p) for p in [*self._obey_stack, file])
            raise GgsciError(f"OBEY loop: {chain}.")
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise GgsciError(f"cannot read obey file {file}: {exc.strerror}.") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise GgsciError(f"obey file {file}, line {line}: not UTF-8 ({exc.reason}); save "
                             "it as UTF-8.") from None
        return self.run_script(text, str(path), origin=file)

    def _obey(self, path: str) -> None:
        if self.run_file(path):
            raise _Exit()

    def _resolve(self, path: str) -> Path:
        """A relative obey file is looked for next to the obey file that names it, then in
        the current directory, then in the home."""
        p = Path(path).expanduser()
        if p.is_absolute():
            if not p.is_file():
                raise GgsciError(f"Obey file {path} does not exist.")
            return p
        bases = [*([self._obey_stack[-1].parent] if self._obey_stack else []),
                 Path.cwd(), self.home.path]
        for base in bases:
            if (base / p).is_file():
                return (base / p).resolve()
        raise GgsciError(f"Obey file {path} does not exist (looked in "
                         f"{', '.join(str(b) for b in bases)}).")


def history_line(line: str) -> str:
    """A command line as the history file keeps it: a ``PASSWORD p`` clause dropped (the
    recalled command asks for the password at the prompt) and any other password masked."""
    return mask_secrets(PASSWORD_CLAUSE.sub("", line))


# -- entry points -----------------------------------------------------------------------------
def _interactive(shell: Shell) -> None:
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
    except ImportError:  # pragma: no cover - prompt_toolkit is a dependency
        _plain_prompt(shell)
        return
    class MaskedFileHistory(FileHistory):
        """The history file keeps no password (see :func:`history_line`)."""

        def store_string(self, string: str) -> None:
            super().store_string(history_line(string))

    try:
        history: FileHistory | InMemoryHistory = MaskedFileHistory(str(_HISTORY_FILE))
    except OSError:
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(history=history)
    while True:
        try:
            line = session.prompt(shell.prompt)
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        try:
            if shell.run_interactive_line(line):
                break
        except _Exit:
            break


def _plain_prompt(shell: Shell) -> None:
    while True:
        try:
            line = input(shell.prompt)
        except EOFError:
            break
        try:
            if shell.run_interactive_line(line):
                break
        except _Exit:
            break


def run(args: argparse.Namespace, stdin: TextIO | None = None,
        stdout: TextIO | None = None) -> int:
    """Entry point for ``trailgate ggsci``: 0 on success, 1 when a script stopped at an
    error."""
    stdin = stdin if stdin is not None else sys.stdin
    if isinstance(stdin, io.TextIOWrapper):  # a byte that is not UTF-8: a command in error
        stdin.reconfigure(errors="replace")
    out = stdout if stdout is not None else sys.stdout
    home = Home.locate(getattr(args, "home", None))
    obey = getattr(args, "obey", None)
    interactive = obey is None and stdin.isatty()
    shell = Shell(home, out, interactive=interactive, environ=os.environ)
    shell.banner()
    try:
        if interactive:
            if out.isatty():
                _interactive(shell)
            else:
                _plain_prompt(shell)
            return 0
        try:
            if obey is not None:
                shell.run_file(obey)
            else:
                shell.run_script(stdin.read(), "stdin")
        except _Exit:
            return 0
        except _ObeyFailed:
            return 1
        except TrailgateError as exc:  # the obey file itself could not be read
            shell.print(_message(exc))
            return 1
        return 0
    finally:
        shell.close()
