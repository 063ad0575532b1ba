"""Every threshold kprof judges with, in one place, each with where its value comes from.

Timeline thresholds are in the first section, kernel thresholds in the second.
Change a value here and the rules follow; tests import these names rather than
repeating the numbers.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- timeline
# (owned by kprof/diagnose/timeline.py)

# ----------------------------------------------------------------------------- kernel
# (owned by kprof/diagnose/kernel.py and kprof/diagnose/sass.py)
