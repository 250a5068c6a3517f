"""After the notebooks ran: build (papermill), stitch (nbconvert), recordings, BENCHMARKS.md and
comparisons of recordings.

Imports ``cudalab.core`` and ``cudalab.chapter`` only, never CuPy or lab code: a replay build runs
on a laptop without either.
"""
