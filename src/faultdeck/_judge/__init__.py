"""Stage 6, judging: the degradation ``Policy``, ``run_steps`` that follows it, and the
invariants ``check`` holds any loop's outcomes and call log to."""
