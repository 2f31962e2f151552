"""Stage 3, the cassette: format v1 as data, each line's checks, reading, writing (a
session per deck, the lock, intents, the atomic replace of a finished recording)."""
