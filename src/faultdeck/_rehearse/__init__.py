"""Stage 8, rehearsal: the fault matrix of one golden cassette, in-process or through a
command, and its renderings."""
