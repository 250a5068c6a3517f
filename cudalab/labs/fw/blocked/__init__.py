"""Blocked Floyd-Warshall (lab 001, chapter 04), by idea.

The matrix, padded to a multiple of the blocking factor BF, is cut into BF x BF tiles; each round
of BF values of k runs three phases: the pivot tile, the tiles of its row and column, every other
tile. A phase-3 tile reuses each operand BF times, so the kernels are bound by integer arithmetic
rather than by memory, as the per-k kernels of chapters 01-03 are.

- ``plans``: padding to a multiple of BF, and the plans of launches a solve runs (rounds of
  three phases, or rounds overlapped by a look-ahead), checked by ``labs.fw.harness``.
- ``kernels``: the blocked kernel files, their build options and each phase's launch
  (``core.launch.Launch``), the plans built from them, and ``KernelSpec``, a kernel by name.
- ``ladder``: lab 001's seven-step optimization ladder, as builds of our kernel files.
- ``variants``: chapter 04's sweep variants, its list of launches and of builds.
- ``phase_split``: time per phase of a solve.
- ``counters``: phase 3's memory throughput and GOPS, from Nsight Compute or the bytes model.
- ``models``: the chapter's bytes, operand and rate models.
- ``findings``: what chapter 04's tables say, as sentences.
"""
