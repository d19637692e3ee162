"""Shared test configuration: hypothesis profiles.

``ci`` (the default) is reproducible: examples are derived from the test
itself (``derandomize``), so a failure in CI fails the same way locally, and
no per-example deadline applies (the first example of a test may include
Numba compilation or loading of the on-disk cache).  ``dev`` explores new
examples on every run; select it with ``HYPOTHESIS_PROFILE=dev``.
"""

import os

from hypothesis import settings

settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
