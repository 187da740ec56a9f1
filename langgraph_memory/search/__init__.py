"""How a search runs: planning against the catalog, exact and HNSW scoring, hybrid ranking, neighbours.

`planner` picks exact scoring from the catalog for small candidate sets and the Chroma index for large
ones; `hybrid` adds the keyword side and fuses it with `ranking`; `neighbours` lets a conversation turn
borrow from the turns around it; `filters` validates and applies LangGraph's ``filter=`` operators.
"""
