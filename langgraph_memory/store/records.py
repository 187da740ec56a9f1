"""Which text each of an item's vectors embeds: index paths and record paths.

The functions live in `langgraph_memory.catalog.texts` (the catalog
reads texts back from values to build its keyword index) and are re-exported
here for the store's modules.

    >>> value = {"notes": ["buy the dip", "sell the rip"]}
    >>> record_text(value, text_path("notes[*]", 1))
    'sell the rip'
"""

from __future__ import annotations

from langgraph_memory.catalog.item_rows import NS_SEP, StoredItem, item_uid
from langgraph_memory.catalog.texts import record_text, split_text_path, text_index, text_path

__all__ = [
    "NS_SEP",
    "PAGE_SIZE",
    "StoredItem",
    "item_uid",
    "text_path",
    "split_text_path",
    "record_text",
    "text_index",
]

# Items read per page when scanning a collection.
PAGE_SIZE = 1000
