"""Draw a run or a clustering to an image file (needs matplotlib: pip install 'pcsos[plot]').

  pcsos plot progress RUN.jsonl -o progress.png
      the certified bound, the incumbent and the gap against time and nodes, from the
      --jsonl file of pcsos solve;
  pcsos plot clusters DATA --labels FILE [-c CONSTRAINTS] -o clusters.png
      the clustering in 2-D (the data when d = 2, else its first two principal
      components), must-link pairs solid, cannot-link pairs dashed, broken pairs red.

The image format follows the extension of -o (png, pdf, svg). Exit codes: 0 written,
2 invalid input or matplotlib missing.
"""

from __future__ import annotations

import argparse

from pcsos.cli.common import add_quiet_argument
from pcsos.errors import InputError
from pcsos.io import read_constraints, read_data, read_labels
from pcsos.plot import plot_clusters, plot_progress, read_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pcsos plot``."""
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True,
                                parser_class=type(parser))
    p = sub.add_parser("progress", help="bound, incumbent and gap of a run")
    p.add_argument("run", metavar="RUN.jsonl", help="the --jsonl file of pcsos solve")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="image to write")
    add_quiet_argument(p)
    p.add_argument("--title", default=None,
                   help="the figure's title (default: the nodes and the seconds of the run)")
    c = sub.add_parser("clusters", help="a clustering with its pairs, in 2-D")
    c.add_argument("data", metavar="DATA", help="the data file (as for pcsos solve)")
    c.add_argument("--labels", dest="label_file", required=True, metavar="FILE",
                   help="one integer label per line (e.g. pcsos solve --labels)")
    c.add_argument("-c", "--constraints", metavar="FILE", default=None,
                   help="ML / CL pairs to draw")
    c.add_argument("-o", "--output", required=True, metavar="FILE", help="image to write")
    add_quiet_argument(c)
    c.add_argument("--title", default=None,
                   help="the axes' title (default: the points, clusters and pairs, and how "
                        "many pairs are broken)")


def run(args: argparse.Namespace) -> int:
    """Write the requested picture."""
    if args.what == "progress":
        plot_progress(read_run(args.run), args.output, title=args.title, source=args.run)
    else:
        data = read_data(args.data)
        labels = read_labels(args.label_file)
        if len(labels) != data.n:
            raise InputError(f"{len(labels)} labels for {data.n} points",
                             source=args.label_file)
        ml = cl = ()
        if args.constraints is not None:
            cons = read_constraints(args.constraints, n=data.n, X=data.X)
            ml, cl = cons.ml, cons.cl
        plot_clusters(data.X, labels, ml, cl, args.output, title=args.title,
                      source=args.data)
    if not args.quiet:
        print(f"wrote {args.output}")
    return 0
