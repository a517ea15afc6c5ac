"""A saved analysis: its layout, checked on reading, and reading and writing it."""
