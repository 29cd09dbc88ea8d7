"""Dump formats probe reads; each format is one package (its reader, row layout, spellings)."""
