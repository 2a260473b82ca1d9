# ruff: noqa: E501  (the TDR column tables are quoted verbatim, as Logdump printed them)
"""Public Logdump output of GoldenGate 12c-21c trails, as test vectors (each vector names its
source; docs/trail-format.md "Sources" gives their addresses).

Sources (all public):

* S1 — GitHub Team-Shift-4/Document-Sharing, ``jungin-kim/oracle/goldengate/OGG for MySQL
  TEST.md`` (commit a5a68bc): OGG 21.3 for MySQL, Logdump with HEADERTOKEN DETAIL, GHDR ON,
  DETAIL DATA; times printed in KST (UTC+9).
* S2 — same repository, ``jungin-kim/oracle/goldengate/Oracle GoldenGate for MySQL.md``:
  OGG 21.3 for MySQL, an insert, a FieldComp, a PK update (115) and a delete; KST.
* S3 — same repository, ``jungin-kim/postgresql/PostgreSQL 정리.md``: OGG 21.3 for
  PostgreSQL 11, TDR, TDR reference, inserts, updates, deletes, truncates; KST.
* S5 — a GitHub markdown "# LogDump" (2021, Iran, UTC+03:30): an Oracle insert, GHDR fields
  and the data area, the row's values listed by its author.
* S12 — seed 002 H.3.2 (Oracle 21c "About the Oracle GoldenGate Trail"): a DML record with a
  TDR/PNR index.
* S11 — Oracle "Logdump Reference" 12.2, HEADERTOKEN DETAIL (a 2005 record) and GGSTOKEN.
* F1 — oracle-help.com "Logdump utility in Golden Gate" (Logdump 12.3.0.1.4, +05:30),
  F2 — aleckaplandba.blogspot.com 2022/09 (Logdump 19.1.0.0.1, UTC), F3 — a GitHub
  "#LOGDUMP_DOC" (2016, +08:00, an 11.2-format file): file headers, first bytes only.

Logdump prints a GHDR's bytes with its tail zeroed (docs/trail-format.md): where a record is
rebuilt, a TDR record's tail gets the table name and a row record's tail its TDR index, the
two things Logdump printed beside it.  DDR and TDR data areas are rebuilt as the text
Logdump printed for them (their binary layout is not public).
"""

from __future__ import annotations

from dataclasses import dataclass, field

KST = "GMT+09:00"


def hexb(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


@dataclass(frozen=True)
class Vector:
    """One record as Logdump printed it."""

    tag: str
    rba: int
    ghdr: str  # the H area's hex as printed
    g_length: int  # the G record's length as printed
    d: str | None  # the D area's hex as printed (None: not printed or no D)
    d_length: int | None  # the D area's length as printed (None: no D token)
    t: list[tuple[int, int, bytes]] | None  # GGS tokens as printed (id, info, value)
    t_length: int | None
    printed: list[str]  # the GHDR block Logdump printed
    op_line: str
    name_line: str
    values: dict[int, bytes | None] = field(default_factory=dict)  # decoded image
    tdr_index: int = 0  # the TDR index Logdump printed beside the record
    table: str = ""


def _csn(text: str) -> tuple[int, int, bytes]:
    return (0x4C, 0, text.encode())


def _xid(text: str) -> tuple[int, int, bytes]:
    return (0x36, 0, text.encode())


# -- S1: MySQL, OGG 21.3 ---------------------------------------------------------------------

S1_DDR_TEXT = ("Database Name: \nDDR Version: 1\nDatabase type: MYSQL\nCharacter set ID: "
               "UTF-8\nNational character set ID: UTF-16BE\nLocale: en_US\nCase sensitivity: "
               "11 11 11 22 22 11 11 11 11 11 11 11 11 11 11 11\nTimeZone: GMT+09:00\n")
S1_TDR_TEXT = """TDR version: 11
Definition for table test.ogg_test
Record Length: 132
Columns: 2
c1  132     11        0  0  0 0 0      4      4      4 0 0 0 0 1    0 1   0    3       -1      0 0 0
c2   64    120        7  0  0 1 0    120    120      0 0 0 0 0 1    0 0   0  253        0      0 0 0
End of definition
"""
S1_HEADERS = [
    Vector("M1 DDR", 6237, "4500 0041 5100 aa01 6ccf ab5a e816 f302 0700 0000 0000 0000 0100 "
           "0000 0352 0000 0001 00", 132, None, 81, None, None, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x00)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :    81  (x0051)   IO Time    : 2022/12/26 15:03:45.978.220",
               "IOType     :   170  (xaa)     OrigNode   :     1  (x01)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "DDR/TDR index:   (001, 000)     AuditPos   : 7",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/26 15:03:45.978.220 Metadata             Len 81 RBA 6237", ""),
    Vector("M2 TDR", 6369, "4500 0041 8a00 aa02 6dcf ab5a e816 f302 0700 0000 0000 0000 0100 "
           "0100 0352 0000 0001 0000 0000 0000 0000 0000 0000 0000", 202, None, 138, None, None, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x00)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :   138  (x008a)   IO Time    : 2022/12/26 15:03:45.978.221",
               "IOType     :   170  (xaa)     OrigNode   :     2  (x02)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "DDR/TDR index:   (001, 001)     AuditPos   : 7",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/26 15:03:45.978.221 Metadata             Len 138 RBA 6369", "",
           table="test.ogg_test", tdr_index=1),
    Vector("M6 DDL CREATE", 1423, "4500 0041 9401 a000 c051 7c31 e816 f302 0000 0000 0000 0000 "
           "0000 0000 0352 0000 0001 00", 682, None, 404, None, 223, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x00)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :   404  (x0194)   IO Time    : 2022/12/26 14:52:15.000.000",
               "IOType     :   160  (xa0)     OrigNode   :     0  (x00)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "AuditRBA   :          0       AuditPos   : 0",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/26 14:52:15.000.000 DDLOP                Len   404 RBA 1423", "Name:"),
    Vector("M7 DDL ALTER", 2795, "4500 0041 9f01 a000 8015 ee45 e816 f302 0000 0000 0000 0000 "
           "0000 0000 0352 0000 0001 00", 693, None, 415, None, 223, [],
           "2022/12/26 14:57:58.000.000 DDLOP                Len   415 RBA 2795", "Name:"),
    Vector("M8 DDL DROP", 5563, "4500 0041 9001 a000 c06a 0e54 e816 f302 0000 0000 0000 0000 "
           "0000 0000 0352 0000 0001 00", 674, None, 400, None, 219, [],
           "2022/12/26 15:01:55.000.000 DDLOP                Len   400 RBA 5563", "Name:"),
]
S1_ROWS = [
    Vector("M3 insert", 6571, "450c 0041 1800 05ff 00a0 8d5a e816 f302 0700 0000 0000 0000 "
           "ea2e 0000 0352 0000 0001 0000", 162,
           "0000 0600 0000 0000 0001 0100 0a00 0000 0600 696e 7365 7274", 24,
           [_csn("000000000000000000007:000000000012041"),
            _xid("000000000000000000007:000000000011887")], 82, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :    24  (x0018)   IO Time    : 2022/12/26 15:03:44.000.000",
               "IOType     :     5  (x05)     OrigNode   :   255  (xff)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "AuditRBA   :      12010       AuditPos   : 7",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/26 15:03:44.000.000 Insert               Len    24 RBA 6571",
           "Name: test.ogg_test  (TDR Index: 1)", {0: b"1", 1: b"insert"}, 1, "test.ogg_test"),
    Vector("M4 FieldComp", 6733, "450c 0041 1800 0fff 8001 4f67 e816 f302 0700 0000 0000 0000 "
           "3430 0000 0352 0000 0001 0000", 162,
           "0000 0600 0000 0000 0001 0100 0a00 0000 0600 7570 6461 7465", 24,
           [_csn("000000000000000000007:000000000012371"),
            _xid("000000000000000000007:000000000012204")], 82, [],
           "2022/12/26 15:07:18.000.000 FieldComp            Len    24 RBA 6733",
           "Name: test.ogg_test  (TDR Index: 1)", {0: b"1", 1: b"update"}, 1, "test.ogg_test"),
    Vector("M5 delete", 6895, "450c 0042 0a00 03ff 80c7 8d6c e816 f302 0700 0000 0000 0000 "
           "6831 0000 0352 0000 0001 0000", 148, "0000 0600 0000 0000 0001", 10,
           [_csn("000000000000000000007:000000000012679"),
            _xid("000000000000000000007:000000000012525")], 82, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     B  (x42)",
               "RecLength  :    10  (x000a)   IO Time    : 2022/12/26 15:08:46.000.000",
               "IOType     :     3  (x03)     OrigNode   :   255  (xff)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "AuditRBA   :      12648       AuditPos   : 7",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/26 15:08:46.000.000 Delete               Len    10 RBA 6895",
           "Name: test.ogg_test  (TDR Index: 1)", {0: b"1"}, 1, "test.ogg_test"),
    Vector("M9 truncate", 7043, "450c 0041 0000 64ff 802a 2d6f e816 f302 0700 0000 0000 0000 "
           "3a32 0000 0352 0000 0001 0000", 134, None, None,
           [_csn("000000000000000000007:000000000012858"),
            _xid("000000000000000000007:000000000012858")], 82, [],
           "2022/12/26 15:09:30.000.000 GGSPurgedata         Len     0 RBA 7043",
           "Name: test.ogg_test  (TDR Index: 1)", {}, 1, "test.ogg_test"),
]

# -- S2: MySQL, OGG 21.3 (a PK update) --------------------------------------------------------

# No TDR of mysql.test is printed in S2: this one is rebuilt from the data's shapes (an int,
# a varchar, a DATE: GoldenGate types 132, 64, 192) in S1's DEFGEN form.
S2_TDR_TEXT = """TDR version: 11
Definition for table mysql.test
Record Length: 155
Columns: 3
id  132     11        0  0  0 0 0      4      4      4 0 0 0 0 1    0 1   0    3       -1      0 0 0
nm   64    120        7  0  0 1 0    120    120      0 0 0 0 0 1    0 0   0  253        0      0 0 0
dt  192     10      132  0  0 1 0     10     10     10 0 2 0 0 1    0 0   0   10       -1      0 0 0
End of definition
"""
S2_ROWS = [
    Vector("N1 insert", 1924, "450c 0041 2500 05ff c0ab 5600 9a16 f302 0400 0000 0000 0000 "
           "2804 0000 0352 0000 0001 0000", 175,
           "0000 0600 0000 0000 000a 0100 0700 0000 0300 6161 6102 000c 0000 0032 3032 322d "
           "3132 2d32 32", 37,
           [_csn("000000000000000000004:000000000001095"),
            _xid("000000000000000000004:000000000000940")], 82, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :    37  (x0025)   IO Time    : 2022/12/22 17:35:03.000.000",
               "IOType     :     5  (x05)     OrigNode   :   255  (xff)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "AuditRBA   :       1064       AuditPos   : 4",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/22 17:35:03.000.000 Insert               Len    37 RBA 1924",
           "Name: mysql.test  (TDR Index: 1)", {0: b"10", 1: b"aaa", 2: b"2022-12-22"}, 1,
           "mysql.test"),
    Vector("N2 FieldComp", 2099, "450c 0041 1500 0fff 00cf 5b06 9a16 f302 0400 0000 0000 0000 "
           "7405 0000 0352 0000 0001 0000", 159,
           "0000 0600 0000 0000 000a 0100 0700 0000 0300 6262 62", 21,
           [_csn("000000000000000000004:000000000001427"),
            _xid("000000000000000000004:000000000001259")], 82, [],
           "2022/12/22 17:36:44.000.000 FieldComp            Len    21 RBA 2099",
           "Name: mysql.test  (TDR Index: 1)", {0: b"10", 1: b"bbb"}, 1, "mysql.test"),
    Vector("N3 PK update", 2258, "450c 0041 1600 73ff 4086 8409 9a16 f302 0400 0000 0000 0000 "
           "c006 0000 0352 0000 0001 0000", 160,
           "0a00 0000 0600 0000 0000 000a 0000 0600 0000 0000 0009", 22,
           [_csn("000000000000000000004:000000000001759"),
            _xid("000000000000000000004:000000000001591")], 82, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :    22  (x0016)   IO Time    : 2022/12/22 17:37:37.000.000",
               "IOType     :   115  (x73)     OrigNode   :   255  (xff)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "AuditRBA   :       1728       AuditPos   : 4",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/22 17:37:37.000.000 GGSPKUpdate          Len    22 RBA 2258",
           "Name: mysql.test  (TDR Index: 1)", {0: b"9"}, 1, "mysql.test"),
    Vector("N4 delete", 2418, "450c 0042 0a00 03ff 400d 180d 9a16 f302 0400 0000 0000 0000 "
           "f607 0000 0352 0000 0001 0000", 148, "0000 0600 0000 0000 0009", 10,
           [_csn("000000000000000000004:000000000002069"),
            _xid("000000000000000000004:000000000001914")], 82, [],
           "2022/12/22 17:38:37.000.000 Delete               Len    10 RBA 2418",
           "Name: mysql.test  (TDR Index: 1)", {0: b"9"}, 1, "mysql.test"),
]

# -- S3: PostgreSQL 11, OGG 21.3 --------------------------------------------------------------

S3_TDR_TEXT = """TDR version: 11
Definition for table test.test_f
Record Length: 350
Columns: 4
int      134     23        0  0  0 0 0      8      8      8 0 0 0 0 1    0 1   0    4       -1      0 0 0
varchar   64    150       11  0  0 1 0    150    150      0 0 0 0 0 1    0 0   0   12       -1     50 0 0
time     192     26      166  6  0 1 0     26     26     26 0 6 0 0 1    0 0   0   11       -1      0 0 0
char      64    150      195  0  0 1 0    150    150      0 0 0 0 0 1    0 0   5    1        0     50 0 0
End of definition
"""
_PAD45 = b" " * 45
_TAIL = "0000 0000 0000 0000 0352 0000 0001 0000"  # bytes 20-35 of the S3 row records
S3_HEADERS = [
    Vector("P1 TDR", 1526, "4500 0041 fc00 aa02 5be6 2dd5 5315 f302 a01f 0005 0000 0000 0100 "
           "0100 0352 0000 0001 0000 0000 0000 0000 0000 0000", 314, None, 252, None, None, [
               "Hdr-Ind    :     E  (x45)     Partition  :     .  (x00)",
               "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
               "RecLength  :   252  (x00fc)   IO Time    : 2022/12/06 12:26:59.569.243",
               "IOType     :   170  (xaa)     OrigNode   :     2  (x02)",
               "TransInd   :     .  (x03)     FormatType :     R  (x52)",
               "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
               "DDR/TDR index:   (001, 001)     AuditPos   : 83894176",
               "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
           "2022/12/06 12:26:59.569.243 Metadata             Len 252 RBA 1526",
           "Table Name: test.test_f", table="test.test_f", tdr_index=1),
]
S3_REF = Vector(
    "P2 TDR reference", 3597, "4500 0041 0000 aa03 4a91 15e9 5315 f302 a01f 0005 0000 0000 "
    "0100 0100 0352 0000 0001 0000 0000 0000 0000 0000 0000", 58, None, None, None, None, [
        "Hdr-Ind    :     E  (x45)     Partition  :     .  (x00)",
        "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
        "RecLength  :     0  (x0000)   IO Time    : 2022/12/06 12:32:33.518.922",
        "IOType     :   170  (xaa)     OrigNode   :     3  (x03)",
        "TransInd   :     .  (x03)     FormatType :     R  (x52)",
        "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
        "DDR/TDR index:   (001, 001)     AuditPos   : 83894176",
        "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
    "2022/12/06 12:32:33.518.922 Metadata             Len 0 RBA 3597",
    "Table Name: test.test_d (Ref TDR Index: 1)", table="test.test_d", tdr_index=1)


def _s3_row(tag: str, rba: int, head: str, g: int, d: str | None, dlen: int | None,
            csn: str, xid: str, t_len: int, op: str, table: str, index: int,
            values: dict[int, bytes | None], printed: list[str] | None = None,
            tag_token: bool = False, tail: str = _TAIL) -> Vector:
    tokens = ([(0x74, 1, b"")] if tag_token else []) + [_csn(csn), _xid(xid)]
    return Vector(tag, rba, f"{head} {tail}", g, d, dlen, tokens, t_len, printed or [], op,
                  f"Name: {table}  (TDR Index: {index})", values, index, table)


_ROW1 = ("0000 0a00 0000 0000 0000 0000 0001 0100 0c00 0000 0800 3176 6172 6368 6172 0200 "
         "1c00 0000 3139 3939 2d31 322d 3331 3a30 303a 3030 3a30 302e 3030 3030 3030 0300 "
         "3600 0000 3200 3163 6861 7220" + " 2020" * 22)
_ROW2 = ("0000 0a00 0000 0000 0000 0000 0001 0100 0c00 0000 0800 7661 7263 6861 7231 0200 "
         "1c00 0000 3230 3030 2d30 312d 3031 3a30 303a 3030 3a30 302e 3030 3030 3030 0300 "
         "3600 0000 3200 6368 6172 3120" + " 2020" * 22)
_UPD_D = ("0000 0a00 0000 0000 0000 0000 0001 0100 0b00 0000 0700 7465 7374 696e 6702 001c "
          "0000 0032 3030 302d 3031 2d30 313a 3030 3a30 303a 3030 2e30 3030 3030 3003 0036 "
          "0000 0032 00")
S3_ROWS = [
    _s3_row("P3 insert", 1840, "450c 0041 7800 05ff 6130 2dd5 5315 f302 a01f 0005", 208, _ROW1,
            120, "00000000/05002818", "717", 32,
            "2022/12/06 12:26:59.522.657 Insert               Len   120 RBA 1840",
            "test.test_f", 1, {0: b"1", 1: b"1varchar", 2: b"1999-12-31:00:00:00.000000",
                               3: b"1char" + _PAD45}, [
                "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
                "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
                "RecLength  :   120  (x0078)   IO Time    : 2022/12/06 12:26:59.522.657",
                "IOType     :     5  (x05)     OrigNode   :   255  (xff)",
                "TransInd   :     .  (x00)     FormatType :     R  (x52)",
                "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
                "AuditRBA   :          0       AuditPos   : 83894176",
                "Continued  :     N  (x00)     RecCount   :     1  (x01)"],
            tag_token=True, tail="0000 0000 0000 0000 0052 0000 0001 0000"),
    _s3_row("P4 insert", 3655, "450c 0041 7800 05ff 4d40 07e9 5315 f302 3847 0005", 204, _ROW2,
            120, "00000000/05004FD0", "718", 28,
            "2022/12/06 12:32:32.580.685 Insert               Len   120 RBA 3655",
            "test.test_d", 2, {0: b"1", 1: b"varchar1", 2: b"2000-01-01:00:00:00.000000",
                               3: b"char1" + _PAD45}, tail="0000 0000 0000 0000 0052 0000 0001 0000"),
    _s3_row("P5 FieldComp", 5408, "450c 0041 1d00 0fff 352b deff 5315 f302 e850 0005", 113,
            "0000 0a00 0000 0000 0000 0000 0001 0100 0b00 0000 0700 7465 7374 696e 67", 29,
            "00000000/050056B8", "719", 28,
            "2022/12/06 12:38:55.764.277 FieldComp            Len    29 RBA 5408",
            "test.test_f", 1, {0: b"1", 1: b"testing"}),
    _s3_row("P6 FieldComp", 5521, "450c 0041 7700 0fff a8f4 2a02 5415 f302 f056 0005", 203,
            _UPD_D + "6368 6172 3120" + " 2020" * 22, 119, "00000000/05005C70",
            "720", 28, "2022/12/06 12:39:34.351.016 FieldComp            Len   119 RBA 5521",
            "test.test_d", 2, {0: b"1", 1: b"testing", 2: b"2000-01-01:00:00:00.000000",
                               3: b"char1" + _PAD45}),
    _s3_row("P7 FieldComp", 5724, "450c 0041 4800 0fff 95e9 cc06 5415 f302 885d 0005", 156,
            "0000 0a00 0000 0000 0000 0000 0001 0300 3600 0000 3200 2174 6573 7421"
            + " 2020" * 22, 72, "00000000/050063E0", "721", 28,
            "2022/12/06 12:40:52.073.877 FieldComp            Len    72 RBA 5724",
            "test.test_f", 1, {0: b"1", 3: b"!test!" + b" " * 44}),
    _s3_row("P8 FieldComp", 5880, "450c 0041 7700 0fff ce47 7708 5415 f302 1864 0005", 203,
            _UPD_D + "2174 6573 7421" + " 2020" * 22, 119, "00000000/05006A08",
            "722", 28, "2022/12/06 12:41:20.016.334 FieldComp            Len   119 RBA 5880",
            "test.test_d", 2, {0: b"1", 1: b"testing", 2: b"2000-01-01:00:00:00.000000",
                               3: b"!test!" + b" " * 44}),
    _s3_row("P9 delete", 6083, "450c 0042 0e00 03ff cb9b d60f 5415 f302 406a 0005", 98,
            "0000 0a00 0000 0000 0000 0000 0002", 14, "00000000/05006AF8", "723", 28,
            "2022/12/06 12:43:23.704.267 Delete               Len    14 RBA 6083",
            "test.test_f", 1, {0: b"2"}),
    _s3_row("P10 delete", 6181, "450c 0042 0e00 03ff b4fb 4911 5415 f302 306b 0005", 98,
            "0000 0a00 0000 0000 0000 0000 0001", 14, "00000000/05006BE8", "724", 28,
            "2022/12/06 12:43:48.042.676 Delete               Len    14 RBA 6181",
            "test.test_f", 1, {0: b"1"}),
    _s3_row("P11 delete", 6279, "450c 0042 0e00 03ff d79f d612 5415 f302 206c 0005", 98,
            "0000 0a00 0000 0000 0000 0000 0002", 14, "00000000/05006C90", "725", 28,
            "2022/12/06 12:44:14.036.951 Delete               Len    14 RBA 6279",
            "test.test_d", 2, {0: b"2"}),
    _s3_row("P12 delete", 6377, "450c 0042 0e00 03ff a1f7 0814 5415 f302 c86c 0005", 98,
            "0000 0a00 0000 0000 0000 0000 0001", 14, "00000000/05006D38", "726", 28,
            "2022/12/06 12:44:34.113.441 Delete               Len    14 RBA 6377",
            "test.test_d", 2, {0: b"1"}),
    _s3_row("P13 truncate", 6475, "450c 0041 0000 64ff a0e9 a815 5415 f302 b0b3 0005", 80,
            None, None, "00000000/0500B4D0", "727", 28,
            "2022/12/06 12:45:01.372.832 GGSPurgedata         Len     0 RBA 6475",
            "test.test_f", 1, {}, [
                "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
                "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
                "RecLength  :     0  (x0000)   IO Time    : 2022/12/06 12:45:01.372.832",
                "IOType     :   100  (x64)     OrigNode   :   255  (xff)",
                "TransInd   :     .  (x03)     FormatType :     R  (x52)",
                "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
                "AuditRBA   :          0       AuditPos   : 83932080",
                "Continued  :     N  (x00)     RecCount   :     1  (x01)"]),
    _s3_row("P14 truncate", 6555, "450c 0041 0000 64ff 7750 a418 5415 f302 d8ba 0005", 80,
            None, None, "00000000/0500BBF8", "730", 28,
            "2022/12/06 12:45:51.403.127 GGSPurgedata         Len     0 RBA 6555",
            "test.test_d", 2, {}),
]

# -- S5: Oracle source, 19c-era (GHDR fields printed, not their hex) ---------------------------

S5_PRINTED = [
    "Hdr-Ind    :     E  (x45)     Partition  :     .  (x0c)",
    "UndoFlag   :     .  (x00)     BeforeAfter:     A  (x41)",
    "RecLength  :   163  (x00a3)   IO Time    : 2021/01/10 15:57:58.375.252",
    "IOType     :     5  (x05)     OrigNode   :   255  (xff)",
    "TransInd   :     .  (x02)     FormatType :     R  (x52)",
    "SyskeyLen  :     0  (x00)     Incomplete :     .  (x00)",
    "AuditRBA   :       3866       AuditPos   : 730057636",
    "Continued  :     N  (x00)     RecCount   :     1  (x01)",
]
S5_ZONE = "GMT+03:30"
S5_OP_LINE = "2021/01/10 15:57:58.375.252 Insert               Len   163 RBA 3828"
S5_D = hexb("""
 0000 0e00 0000 0a00 3232 3438 3537 3031 3130 0100
 0500 0000 0100 3102 001f 0000 0032 3032 312d 3031
 2d30 333a 3135 3a32 363a 3033 2e31 3630 3030 3030
 3030 0300 1c00 0000 1800 3032 3038 3230 3231 3031
 3033 3135 3235 3333 3632 3338 3637 0400 0500 0000
 0100 3305 0005 0000 0001 0030 0600 0d00 0000 0900
 3935 3839 3839 3637 3507 000d 0000 0009 0033 3234
 3230 3138 3234 0800 0d00 0000 0900 3332 3432 3031
 3832 34""")
#: The row as its author listed it (S5).
S5_ROW = [b"2248570110", b"1", b"2021-01-03:15:26:03.160000000", b"020820210103152533623867",
          b"3", b"0", b"958989675", b"324201824", b"324201824"]

# -- S12: seed 002, a row record with a TDR and a PNR index -------------------------------------

S12_D = hexb("0000 0500 0000 0100 3101 0005 0000 0001 0031")

# -- S11: Logdump reference 12.2, HEADERTOKEN DETAIL and GGSTOKEN ------------------------------

S11_GHDR = hexb("4504 0041 3C00 05FF 402F AE6C 572A F102 F818 8F02 0000 0000 1000 0000 0152 "
                "0000 0001 4852 2E4A 4F42 5300")
S11_LENGTHS = {"G": 146, "H": 42, "D": 60, "T": 24}
S11_ROWID_TOKEN = hexb("5200 1400 4141 4148 6561 4141 4641 4141 4141 3041 4143 0001")

# -- File headers ------------------------------------------------------------------------------

F1 = hexb("""
 3000 0337 3000 0008 4747 0d0a 544c 0a0d 3100 0002
 0006 3200 0004 2000 0000 3300 0008 02f2 9daf 3d9e
 3966 3400 002c 002a 7572 693a 6c6f 6361 6c68 6f73
 743a 6c6f 6361 6c64 6f6d 6169 6e3a 3a75 3032 3a67
 6761 7465 3a50 554d 5032 3500 002f 3500 002b 0029
 7572 693a 6c6f 6361 6c68 6f73 743a 6c6f 6361 6c64
 6f6d 6169 6e3a 3a75 3032 3a67 6761 7465 3a45 5854
 3236 0000 1600 142e 2f64 6972 6461 742f 6261 3030
 3030 3030 3030 3137 00""")
F2 = hexb("""
 3000 0343 3000 0008 4747 0d0a 544c 0a0d 3100 0002
 0007 3200 0004 2000 0000 3300 0008 02f3 0e54 6873
 0976 3400 002e 002c 7572 693a 4445 5241 5456 4442
 3030 3030 313a 3a73 6f66 7477 6172 653a 6f67 673a
 3139 313a 4558 545f 495f 3031 3600 002d 002b 2f73
 6f66 7477 6172 652f 6f67 672f 3139 312f 6469 7264
 6174 2f30 312f 6f75 742f 6569 3030 3030 3030 3534""")
F3 = hexb("""
 3000 01c0 3000 0008 4747 0d0a 544c 0a0d 3100 0002
 0003 3200 0004 2000 0000 3300 0008 02f2 57bd dd5e
 c9b0 3400 001e 001c 7572 693a 682d 3762 3667 3467
 7178 3a3a 6461 7461 3a6f 6767 7465 7374 3500 0022
 3500 001e 001c 7572 693a 682d 3762 3667 3467 7178
 3a3a 6461 7461 3a6f 6767 7465 7374 3600 0013 0011
 2e2f 6469 7264 6174 2f72 6130 3030 3030 3037 0000""")
