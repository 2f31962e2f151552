"""A frozen copy of the normalizer, id renaming, redaction and keys as they were before the
hot path was made faster, kept to prove the results never change.

Copied from ``faultdeck._keys`` unchanged but for its imports of earlier stages (now
absolute, ``faultdeck._base``). Never edit it to follow the package: a difference between
the two is what tests/keys/test_differential.py exists to find.

One change of contract was made here on purpose, by hand: outputs store as placeholders
only the values of volatile fields (``outputs.PROVIDER_TIMES`` and the declared
``volatile``), no longer every date-time and every number under a time-like name, so a
date-time in a tool's result or a message's text is stored as it came (``outputs.scrub``,
``Normalizer.scrub_output``).
"""
