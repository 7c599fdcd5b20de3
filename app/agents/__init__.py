"""Agent-facing interfaces over the org and its episodes: the MCP endpoint and the OpenEnv
environment. They reach the org through its own HTTP API, in process."""
