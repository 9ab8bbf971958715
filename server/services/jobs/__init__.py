"""Background work on the app side besides exports: bulk runs and episode videos."""
