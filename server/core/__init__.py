"""Infrastructure: settings, database, security."""
