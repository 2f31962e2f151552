"""Stage 7, the diff: two recordings' call paths aligned by key, the first divergence, and
its text, JSON and HTML renderings."""
