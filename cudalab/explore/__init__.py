"""Exploring a chapter's results in JupyterLab: the explorer over recorded tables, a measurement
of one new point, and a scratch copy of a kernel to edit and measure beside the original.

Layer: above ``chapter`` (it reads recordings, profiles and the chapter handle) and beside
``report``; it never imports ``labs`` (a chapter's notebook passes its family's point recipe in),
``toolchain`` or ``report``. Widgets are imported only where an explorer is shown.
"""
