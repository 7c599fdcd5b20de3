"""Evaluating a model: an agent loop over an OpenAI-compatible endpoint, run on a task file's
episodes through localforce's control plane and MCP endpoint, recorded as a run."""
