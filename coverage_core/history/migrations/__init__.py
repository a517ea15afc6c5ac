"""Alembic migrations of the history store's schema, run programmatically by ``HistoryStore`` (no alembic.ini)."""
