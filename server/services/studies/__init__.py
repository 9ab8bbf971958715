"""Studies: their files and versions, and whether their environments run here."""
