"""A chapter's life: profile -> measure or replay -> tidy tables -> headline summary.

Imports ``cudalab.core`` only. ``open_chapter`` is all a notebook needs from here.
"""
