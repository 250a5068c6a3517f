"""Domain code, one module (or subpackage) per kernel family of ``kernels_cu/``: launch recipes,
references, checks and bytes models beside the kernels they drive.

| module | kernels_cu/ | chapters |
|---|---|---|
| ``capabilities``, ``bandwidth`` | (deviceQuery, memcpy) | 00, and the copy ceiling of 02-03 |
| ``read_stream`` | read_stream.cu | 00 (the read-only ceiling) |
| ``int_ceiling`` | int_add_min_ceiling.cu | 00, 04 |
| ``ceilings_now`` | read_stream.cu, fp32 peak | a grading run's own ceilings |
| ``vecmax``, ``vecmax_point``, ``vecmax_checks`` | vecmax_coalescing.cu | 02 |
| ``fw`` | fw_*.cu, nthu_edges_to_matrix.cu | 01-04 (Floyd-Warshall) |
| ``matmul``, ``matmul_checks`` | mm_*.cu | 05 |
| ``kmeans`` | km_*.cu | 06 |

``points`` holds the steps every family's point recipe shares, ``checks`` the grader's contract
(``Checks``, ``CaseKind``) each family's kit fills in.

Imports ``cudalab.core`` and ``cudalab.toolchain``; never the chapter, report or grading layers.
"""
