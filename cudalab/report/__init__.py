"""After the notebooks ran: build (papermill), stitch (nbconvert), recordings, BENCHMARKS.md and
comparisons of recordings.

Imports ``cudalab.core`` and ``cudalab.chapter`` only, never CuPy or lab code: a replay build runs
on a laptop without either.
"""

import sys

# nbformat validates notebooks with jsonschema, whose format checkers import ``rfc3987_syntax``
# eagerly where it is installed (jupyterlab's ``jsonschema[format-nongpl]`` brings it); that module
# builds some 38 Earley parsers at import: 1.8 s of CPU in every process that imports nbformat (a
# build, each Dask worker, each test's build), for the "iri" formats, which no notebook schema uses
# (python-jsonschema/jsonschema#1428). Marked absent here, before this layer imports nbformat, it is
# skipped as jsonschema skips any format library that is not installed. A process that imported
# it already keeps it.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
