"""``trailgate keygen``: a new trail encryption key in the home's ENCKEYS file.

GoldenGate's KEYGEN prints keys for a person to paste into ENCKEYS; this writes the key
straight into the file (created readable only by its owner) and prints only its name,
version and fingerprint, so the key never passes through a terminal, a shell history or a
log.  Run again with the same name to rotate: new trail files use the newest version, old
files keep naming theirs.
"""

from __future__ import annotations

import argparse

from trailgate.home import Home
from trailgate.trail.keys import DEFAULT_KEY_NAME, add_key, enckeys_path

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default=DEFAULT_KEY_NAME,
                        help="the key's name, as ENCRYPTTRAIL … KEYNAME names it (default "
                        f"{DEFAULT_KEY_NAME}: ENCRYPTTRAIL without KEYNAME)")
    parser.add_argument("--bits", type=int, default=256, choices=(128, 192, 256),
                        help="key length (default 256)")


def run(args: argparse.Namespace) -> int:
    home = Home.locate(args.home)
    path = enckeys_path(home.path)
    key = add_key(path, args.name, args.bits)
    print(f"Added key {key.name} version {key.version} ({args.bits} bits, fingerprint "
          f"{key.fingerprint.hex()}) to {path}. New trail files use it; copy the file to "
          "every home that reads these trails, keeping earlier versions for older files.")
    return 0
