"""Domain code, one module (or subpackage) per kernel family of ``kernels_cu/``: launch recipes,
references, checks and bytes models beside the kernels they drive.

| module | kernels_cu/ | chapters |
|---|---|---|
| ``capabilities``, ``bandwidth`` | (deviceQuery, memcpy) | 00, and the copy ceiling of 02-03 |
| ``int_ceiling`` | int_add_min_ceiling.cu | 00, 04 |
| ``vecmax`` | vecmax_coalescing.cu | 02 |
| ``fw`` | fw_*.cu | 01-04 (Floyd-Warshall) |

Imports ``cudalab.core`` and ``cudalab.toolchain``; never the chapter or report layers.
"""
