"""Crowd studies: participants, their sessions and episodes, quotas, assignment, codes."""
