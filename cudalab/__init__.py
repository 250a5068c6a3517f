"""cudalab: parameterized Jupyter lab notebooks for GPU performance experiments.

The package holds the machinery (kernel loading, timing, checking, recording,
plotting, report assembly); the notebooks in ``notebooks/`` tell the story.
Nothing here imports CuPy at import time, so replaying a report works on a
machine without a GPU.
"""

from cudalab.chapter import Chapter, open_chapter

__all__ = ["Chapter", "open_chapter"]
__version__ = "0.1.0"
