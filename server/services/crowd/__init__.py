"""Crowd studies: participants, their sessions and episodes, quotas, assignment, codes
(completion codes; a phone's pairing codes)."""
