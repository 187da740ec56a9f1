"""Durable, searchable memory for LangGraph agents."""
