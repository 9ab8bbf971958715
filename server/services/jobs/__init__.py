"""Background jobs on the app side: exports (selection, preview, rows), bulk runs, videos."""
