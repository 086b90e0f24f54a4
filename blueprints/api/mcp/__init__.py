"""The MCP endpoint (POST /v1/mcp): the catalogue for AI agents (docs/api/mcp.md)."""
