"""Alembic environment: the store hands over its open connection, already inside the transaction that holds the
migration lock, so two processes opening a new history at once never both create it."""

from alembic import context

connection = context.config.attributes["connection"]
# Transactional DDL everywhere (SQLite and PostgreSQL both support it): a migration interrupted half-way leaves
# the previous schema, never a mix.
context.configure(connection=connection, target_metadata=None, transactional_ddl=True)
with context.begin_transaction():
    context.run_migrations()
