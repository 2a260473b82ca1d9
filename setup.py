"""Build hook for the optional C accelerators; everything else is in pyproject.toml.

``trailgate.trail._speedups`` speeds up the trail codec (``…release12._codec12`` its 12c+
formats, ``…trail._seal`` encrypted records, with OpenSSL's libcrypto),
``trailgate.capture.postgres._pgfast`` the PostgreSQL Extract's row path,
``trailgate.capture.oracle._dumpscan`` the Oracle redo dump parser,
``trailgate.apply._spanplan`` the Replicat's set-based apply of a batch,
``trailgate.capture.postgres._copypump`` the initial load's COPY data.  All are optional: when
one cannot be compiled (no compiler, no Python headers) the install still succeeds and
trailgate uses its pure-Python code, which is the reference the C code must match byte for
byte.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "trailgate.trail._speedups",
            sources=["src/trailgate/trail/_speedups.c"],
            depends=["src/trailgate/trail/_frame.h"],
            optional=True,
        ),
        Extension(
            "trailgate.trail._seal",
            sources=["src/trailgate/trail/_seal.c"],
            libraries=["crypto"],
            optional=True,
        ),
        Extension(
            "trailgate.trail.release12._codec12",
            sources=["src/trailgate/trail/release12/_codec12.c"],
            optional=True,
        ),
        Extension(
            "trailgate.capture.postgres._pgfast",
            sources=["src/trailgate/capture/postgres/_pgfast.c"],
            optional=True,
        ),
        Extension(
            "trailgate.capture.oracle._dumpscan",
            sources=["src/trailgate/capture/oracle/_dumpscan.c"],
            optional=True,
        ),
        Extension(
            "trailgate.capture.postgres._copypump",
            sources=["src/trailgate/capture/postgres/_copypump.c"],
            optional=True,
        ),
        Extension(
            "trailgate.apply._spanplan",
            sources=["src/trailgate/apply/_spanplan.c"],
            depends=["src/trailgate/trail/_frame.h"],
            optional=True,
        ),
    ]
)
