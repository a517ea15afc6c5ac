"""What users bring: documents, question tables, vectors from a store, saved analyses."""
