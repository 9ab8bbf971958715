"""Feedback studies: items cut from recorded episodes, judging, gold, agreement, results."""
