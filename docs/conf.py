"""Sphinx configuration for structlearn's documentation."""

project = "structlearn"
author = "structlearn developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "download_all_examples": False,
}
autosummary_generate = True
numpydoc_show_class_members = False
html_theme = "alabaster"
exclude_patterns = ["_build"]
