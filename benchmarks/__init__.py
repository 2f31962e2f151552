"""faultdeck's benchmarks: ratios against peers (vcrpy, agenttape, agentcassette,
cassette-fn) and floors, each beside its goal.

    python -m benchmarks            every row at full size; writes benchmarks/RESULTS.md
    python -m benchmarks --quick    tiny sizes: every row runs in seconds (the tests use it)

``suite`` says which rows there are and how large; each row's module records what it
needs, times its sides with ``_timing.interleave`` and judges the medians against its goal;
``floors`` holds the contract floors (the least a keyed replay and a redacting recorder
must do per call, checked to give faultdeck's keys and lines); ``_results`` renders the
tables and the machine they ran on. The peers come with the ``bench`` extra.
"""
