"""Connectors to other tools: where production traces and test sets live, read as this tool's inputs, and where
accepted questions are sent (:mod:`coverage_core.connectors.phoenix`: Arize Phoenix)."""
