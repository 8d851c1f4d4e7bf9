"""The fuzz suite (issue 12): hostile generated inputs for every input surface, run in-process.

``surfaces.py`` names the surfaces, ``strategies.py`` generates their inputs, ``sandbox.py`` runs
them and counts tracebacks, hangs and writes outside the repository, ``driver.py`` runs a number
of inputs per surface. ``benchmarks/fuzz.py`` runs at least 1,000 per surface and prints the
table; ``tests/test_fuzz.py`` runs a small sample in the normal test suite.
"""
