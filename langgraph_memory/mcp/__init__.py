"""The MCP server: the typed research API as MCP tools, over stdio or HTTP."""
