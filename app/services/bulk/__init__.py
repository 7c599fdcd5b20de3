"""Bulk API jobs: the job runner and what ingest and query jobs do."""
