"""The comparison wing of the report layer: recordings (and a lab's published numbers) side by side.

``build_report.py --compare A B [C ...]`` runs ``report.run``; ``tools/compare_recordings.py`` the
plain two-recording table of ``pairwise``. Read in this order:

- ``pairwise``: two recordings joined point by point on their recorded axes, each ratio labelled
  same, faster or slower by the recorded spread (as ``nvbench_compare`` labels it);
- ``sources``: what a source is (a recording folder, a GPU's recording of a profile, ``lab``) and
  the chapters every source holds;
- ``points``: each chapter's headlines side by side, and its timed tables joined on the points the
  sources share, the others listed;
- ``figures``: each chapter's main figures, one colour per source, as the chapter declares them;
- ``report``: the HTML/PDF of it all, through ``report.stitch``, one Dask task per chapter where asked.
"""
