"""The export formats: one folder (package) each, which registers its format
(server/export/registry.py imports every package here on its first look-up)."""
