"""Build hook for the optional C accelerator; everything else is in pyproject.toml.

``trailgate.trail._speedups`` speeds up the trail codec.  It is optional: when it cannot be
compiled (no compiler, no Python headers) the install still succeeds and trailgate uses its
pure-Python codec, which is the reference the C code must match byte for byte.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "trailgate.trail._speedups",
            sources=["src/trailgate/trail/_speedups.c"],
            optional=True,
        )
    ]
)
