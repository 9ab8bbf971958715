"""Exports on the app side: the request checked and queued as a job row, the selection, the
preview."""
