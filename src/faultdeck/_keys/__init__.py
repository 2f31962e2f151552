"""Stage 2, keys: canonical JSON, normalization (one walk), id renaming, redaction and its
table of secret shapes, and the call's key. What a call's args become before anything is
compared or written."""
