"""Sphinx configuration for structlearn's documentation."""

project = "structlearn"
author = "structlearn developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
autosummary_generate = True
numpydoc_show_class_members = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
