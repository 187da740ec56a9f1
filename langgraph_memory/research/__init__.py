"""The trading-research domain on top of the store: typed collections, the typed API, lineage views."""
