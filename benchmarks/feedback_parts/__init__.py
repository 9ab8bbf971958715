"""Parts of benchmarks/feedback.py (a folder: ``benchmarks/*.py`` are the benchmarks)."""
