"""A student's kernels in the lab: measured beside the reference (``build_report.py --kernels``)
and a class graded (``--grade``), each submission in a process of its own."""
