"""faultdeck's benchmarks: ratios against peers (vcrpy) and floors, each beside its goal.

    python -m benchmarks            every row at full size; writes benchmarks/RESULTS.md
    python -m benchmarks --quick    tiny sizes: every row runs in seconds (the tests use it)

``suite`` says which rows there are and how large; each row's module records what it
needs, times its sides with ``_timing.interleave`` and judges the medians against its goal;
``_results`` renders the tables and the machine they ran on.
"""
