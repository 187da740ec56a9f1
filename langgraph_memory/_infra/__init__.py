"""Infrastructure with no domain knowledge: SQLite connections, file locks, the Chroma client, addresses."""
