"""The CUDA tools as child processes: nvcc (resources), cuobjdump (SASS), ncu (counters),
compute-sanitizer (synccheck). Each absence is a ``ToolUnavailable`` with its reason.

Imports ``cudalab.core`` only; knows no chapter and no kernel family (callers name the target
module a profiled child process runs).
"""
