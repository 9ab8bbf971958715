"""Review: listing and counting episodes, replay, labels, quality signals, bulk actions."""
