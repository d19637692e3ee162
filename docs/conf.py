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
# methods are documented in full by the class template (templates/autosummary)
numpydoc_show_class_members = False
templates_path = ["_templates"]
# every cross-reference must resolve (the build runs with -W)
nitpicky = True
# no intersphinx (the docs build offline): references into scikit-learn,
# SciPy and NumPy stay plain text
nitpick_ignore_regex = [(r"py:.*", r"(sklearn|scipy|numpy)\..*")]
html_theme = "alabaster"
exclude_patterns = ["_build"]
