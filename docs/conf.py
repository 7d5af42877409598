"""Sphinx configuration of the pcsos documentation site.

Sphinx because the API reference comes from the docstrings (autodoc + napoleon, NumPy
style, as SciPy and scikit-learn write them), the Markdown pages already in docs/ build as
they are (myst-parser), and sphinx-gallery runs examples/ during the build, so an example
that stops working fails the build. Build: ``sphinx-build -W -n -b html docs docs/_build``.
"""

import os
import sys

import pcsos

project = "pcsos"
author = "the pcsos developers"
copyright = "2026, the pcsos developers"
release = version = pcsos.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

# a cross-reference that resolves nowhere fails the build (with -W): nitpicky mode
nitpicky = True
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "images/*.md"]
templates_path = ["_templates"]
autosummary_generate = True
html_theme = "furo"
html_title = f"pcsos {release}"

autodoc_member_order = "bysource"
# the docstrings say the types; the signatures' hints would repeat them unlinked
autodoc_typehints = "none"
autodoc_class_signature = "separated"
# types stay text ("ndarray of shape (n,)"): only the names written as roles are links,
# and those must resolve
numpydoc_xref_param_type = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# attributes become objects of their own, so that :attr:`Result.status` links
numpydoc_attributes_as_param_list = False
# other projects' names cannot link without their inventories, which would need the
# network; they stay text. Everything of pcsos must resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|scipy|threading|concurrent|distributed|sklearn|matplotlib)(\..*)?"),
]

myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath", "colon_fence"]

# intersphinx needs the network; the build must run offline (CI), so names of other
# projects stay plain text instead of links
intersphinx_mapping = {}

here = os.path.dirname(os.path.abspath(__file__))
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(here, "..", "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # every example runs in every build: an example that raises fails the build
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("gallery_scraper.figures",),
}
sys.path.insert(0, here)


def _skip(app, what, name, obj, skip, options):
    # scikit-learn's metadata routing adds set_*_request methods to every estimator; they
    # are its API, documented there
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip)
