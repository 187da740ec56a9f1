"""What happens to items over their life: retire, supersede, hard delete, decay, and stats."""

from __future__ import annotations

from langgraph_memory.lifecycle.items import DeleteReport, ItemLifecycle

__all__ = ["ItemLifecycle", "DeleteReport"]
