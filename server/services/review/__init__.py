"""Review: listing and counting episodes, replay, labels, quality signals, bulk actions, an
episode's judgements in feedback studies."""
