"""Parameter checks shared by the estimators and transformers."""

import numbers


def check_int(name, value, minimum=1, allow_none=False):
    """Raise a ValueError naming ``name`` unless ``value`` is an integer
    (not a bool) of at least ``minimum`` (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}"
                         f"{' or None' if allow_none else ''}, got {value!r}.")
