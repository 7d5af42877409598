"""The ``pcsos`` command line: one subcommand per module of this package.

Exit codes: 0 success (feasible / solved / stopped at a limit with a certified gap),
1 internal error, 2 invalid input or usage, 3 infeasible constraints, 130 interrupted
before any result existed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from pcsos.errors import PcsosError

# each names a module pcsos.cli.<name> with ``add_arguments(parser)`` and ``run(args) -> int``
SUBCOMMANDS = {
    "check": "validate an instance and decide feasibility",
    "bound": "compute a certified SDP lower bound at the root",
    "heuristic": "run one upper-bound heuristic",
    "solve": "solve to certified optimality by branch-and-cut",
    "kcenter": "constrained k-center 2-approximation with a certified radius bound",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with the message, as argparse does
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from pcsos import __version__

    parser = _Parser(prog="pcsos", description="Exact constrained MSSC with certificates.")
    parser.add_argument("--version", action="version", version=f"pcsos {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, help_ in SUBCOMMANDS.items():
        try:
            mod = importlib.import_module(f"pcsos.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pcsos.cli.{name}":
                raise
            continue
        p = sub.add_parser(name, help=help_, description=(mod.__doc__ or help_).strip())
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pcsos`` script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args._run(args) or 0)
    except PcsosError as exc:
        kind = {2: "error", 3: "infeasible"}.get(exc.exit_code, "error")
        print(f"pcsos {args.command}: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"pcsos {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an internal error: say so, keep the traceback for debugging
        if os.environ.get("PCSOS_DEBUG"):
            raise
        print(f"pcsos {args.command}: internal error: {type(exc).__name__}: {exc}\n"
              "(set PCSOS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
