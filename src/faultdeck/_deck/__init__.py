"""Stage 5, the deck: ``Deck``, the ``Call`` seam every boundary call goes through, the
run's state, the replay index, misses, the report and tool wrappers."""
