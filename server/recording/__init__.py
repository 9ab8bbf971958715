"""Per-episode envlogger (Riegeli) recording: format constants, paths and the writer."""
