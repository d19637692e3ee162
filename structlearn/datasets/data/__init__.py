"""Data files bundled with structlearn (see README.md here); read them
through :mod:`structlearn.datasets`."""
