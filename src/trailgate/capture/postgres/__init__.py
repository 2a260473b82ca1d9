"""PostgreSQL capture: pgoutput decoding, slots, supplemental logging (TRANDATA)."""
