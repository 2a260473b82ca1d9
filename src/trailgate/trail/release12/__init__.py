"""The trail of GoldenGate 12.1 to 21c: the 12c+ record header, self-describing files (DDR
and TDR metadata records), column framing in the file's byte order, and the GGS tokens.

:class:`FileDecoder` turns each record of such a file into the RawRecord an 11.2 file gives;
:class:`FileEncoder` and :func:`encode_change12` write one.  docs/trail-format.md lays out
the format and the public evidence for each field.
"""

from trailgate.trail.release12.decoder import FileDecoder
from trailgate.trail.release12.encoder import FileEncoder, encode_change12
from trailgate.trail.release12.layout import Record12, parse_record
from trailgate.trail.release12.priming import input_byte_order, primed_decoder

__all__ = ["FileDecoder", "FileEncoder", "Record12", "encode_change12", "input_byte_order",
           "parse_record", "primed_decoder"]
