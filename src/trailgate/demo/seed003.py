"""Seed 003's COURSE and STUDENT example as PostgreSQL SQL: tables, initial rows, workload.

``trailgate.sample`` holds the same example as trail transactions (the bytes the seed
prints); the demo needs the statements themselves, run on a real source so that capture
produces those changes.  Oracle's ``NUMBER`` becomes ``numeric`` and ``VARCHAR2(n)``
becomes ``varchar(n)``.  Where the seed's text disagrees with itself (the array-insert
preparation spells ``'OXford'`` once), the spelling its trail shows is used.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["COURSES", "SCHEMA", "SOURCE_DDL", "STUDENTS", "TABLES", "TARGET_DDL",
           "SeedStep", "initial_load", "seed_steps"]

SCHEMA = "us03"
TABLES = (f"{SCHEMA}.course", f"{SCHEMA}.student")

_COURSE_COLUMNS = """\
  university varchar(30),
  subject    varchar(30),
  entry_year numeric"""
_STUDENT_COLUMNS = """\
  student_key numeric,
  first_name  varchar(30),
  surname     varchar(30),
  gender      varchar(1),
  university  varchar(30),
  subject     varchar(30),
  entry_year  numeric,
  tuition_fee numeric"""

#: The seed's DDL: keys, the unique name constraint and the foreign key to COURSE.
SOURCE_DDL = f"""\
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.course (
{_COURSE_COLUMNS},
  CONSTRAINT course_pk PRIMARY KEY (university, subject, entry_year)
);
CREATE TABLE {SCHEMA}.student (
{_STUDENT_COLUMNS},
  CONSTRAINT student_pk PRIMARY KEY (student_key),
  CONSTRAINT student_uk UNIQUE (first_name, surname),
  CONSTRAINT student_course FOREIGN KEY (university, subject, entry_year)
    REFERENCES {SCHEMA}.course (university, subject, entry_year)
);
"""

#: Target tables: the same columns and primary keys, no constraints across rows.  Replicat
#: applies a batch's partitions in parallel (by key), so an order between different keys that
#: a foreign or unique key would need is not kept within a batch; the source enforced them.
TARGET_DDL = f"""\
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.course (
{_COURSE_COLUMNS},
  CONSTRAINT course_pk PRIMARY KEY (university, subject, entry_year)
);
CREATE TABLE {SCHEMA}.student (
{_STUDENT_COLUMNS},
  CONSTRAINT student_pk PRIMARY KEY (student_key)
);
"""

COURSES: list[tuple[str, str, int]] = [
    ("Oxford", "Theology", 2013), ("Oxford", "Biology", 2013), ("Oxford", "Biology", 2014),
    ("Cambridge", "Economics", 2013), ("Cambridge", "Physics", 2013),
    ("Cambridge", "Chemistry", 2013), ("Manchester", "Chemistry", 2013),
    ("Manchester", "Computer Science", 2013), ("Manchester", "Art History", 2013),
    ("Manchester", "Media Studies", 2013),
]

Student = tuple[int, str, str, str, str, str, int, int]
STUDENTS: list[Student] = [
    (1001, "Lucy", "Brotherton", "F", "Cambridge", "Chemistry", 2013, 9000),
    (1002, "Rebecca", "Brown", "F", "Oxford", "Biology", 2013, 9000),
    (1003, "Simon", "Campbell", "M", "Cambridge", "Physics", 2013, 7500),
    (1004, "Jason", "Robinson", "M", "Oxford", "Biology", 2013, 7500),
    (1005, "Stuart", "Overy", "M", "Manchester", "Art History", 2013, 9000),
    (1006, "Tom", "Homer", "M", "Manchester", "Computer Science", 2013, 9000),
    (1007, "Victoria", "Evans", "F", "Oxford", "Theology", 2013, 9000),
    (1008, "Katy", "Pierce", "F", "Oxford", "Theology", 2013, 9000),
    (1009, "Shane", "Thomas", "M", "Manchester", "Media Studies", 2013, 9000),
    (1010, "Sarah", "McCloud", "F", "Oxford", "Biology", 2014, 9000),
]
_JORDAN: Student = (1011, "Jordan", "Sherwood", "M", "Manchester", "Chemistry", 2013, 9000)


def _values(row: tuple[object, ...]) -> str:
    return "(" + ",".join(f"'{v}'" if isinstance(v, str) else str(v) for v in row) + ")"


def initial_load() -> list[str]:
    """The seed's initial data, one transaction (loaded before capture starts)."""
    return ([f"INSERT INTO {SCHEMA}.course VALUES {_values(c)}" for c in COURSES]
            + [f"INSERT INTO {SCHEMA}.student VALUES {_values(s)}" for s in STUDENTS])


@dataclass(frozen=True, slots=True)
class SeedStep:
    """One of the seed's examples: what it shows, its preparation (own transaction, as the
    seed commits it first) and the statements of the example transaction."""

    title: str
    statements: tuple[str, ...]
    preparation: tuple[str, ...] = ()


_TEMP = ("CREATE TEMP TABLE IF NOT EXISTS student_temp AS "
         f"SELECT * FROM {SCHEMA}.student WHERE false",
         "TRUNCATE student_temp",
         *(f"INSERT INTO student_temp VALUES {_values(s)}" for s in STUDENTS[6:9]),
         f"DELETE FROM {SCHEMA}.student WHERE student_key IN (1007,1008,1009)")
_FEES_8000 = (f"UPDATE {SCHEMA}.student SET tuition_fee = 8000 "
              "WHERE student_key IN (1007,1008,1009)",)


def seed_steps() -> list[SeedStep]:
    """Seed 003's worked examples in order (its temporary table is a PostgreSQL TEMP table,
    which logical decoding never sees, as the seed's STUDENT_TEMP is not captured)."""
    s = SCHEMA
    return [
        SeedStep("single-row insert", (f"INSERT INTO {s}.student VALUES {_values(_JORDAN)}",)),
        SeedStep("single-row update",
                 (f"UPDATE {s}.student SET tuition_fee = 6000 WHERE student_key = 1010",)),
        SeedStep("single-row delete", (f"DELETE FROM {s}.student WHERE student_key = 1004",)),
        SeedStep("multi-row update",
                 (f"UPDATE {s}.student SET tuition_fee = 7500 WHERE tuition_fee = 8000",),
                 _FEES_8000),
        SeedStep("multi-row delete", (f"DELETE FROM {s}.student WHERE tuition_fee = 8000",),
                 _FEES_8000),
        SeedStep("array insert", (f"INSERT INTO {s}.student SELECT * FROM student_temp",),
                 _TEMP),
        SeedStep("direct-load insert",
                 (f"INSERT /*+ APPEND */ INTO {s}.student SELECT * FROM student_temp",),
                 _TEMP),
    ]
