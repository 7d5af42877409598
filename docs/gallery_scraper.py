"""The sphinx-gallery scraper of the examples' figures (a module, since the config names it).

pcsos.plot builds its figures without pyplot, so that it never touches a caller's pyplot
state, and sphinx-gallery's matplotlib scraper, which looks in pyplot, cannot see them.
This one takes every Figure that a code block left in the example's namespace.
"""

from matplotlib.figure import Figure
from sphinx_gallery.scrapers import figure_rst

_seen: set[int] = set()


def figures(block, block_vars, gallery_conf):
    found = [v for v in block_vars["example_globals"].values()
             if isinstance(v, Figure) and id(v) not in _seen]
    paths = []
    for fig, path in zip(found, block_vars["image_path_iterator"]):
        fig.savefig(path, dpi=100)
        _seen.add(id(fig))
        paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
