"""A frozen copy of the normalizer, id renaming, redaction and keys as they were before the
hot path was made faster, kept to prove the results never change.

Copied from ``faultdeck._keys`` unchanged but for its imports of earlier stages (now
absolute, ``faultdeck._base``). Never edit it to follow the package: a difference between
the two is what tests/keys/test_differential.py exists to find.
"""
