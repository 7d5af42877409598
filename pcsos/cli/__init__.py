"""The ``pcsos`` command line: one subcommand per module of this package.

Exit codes: 0 success (feasible / solved / stopped at a limit with a certified gap),
1 no answer within the limits (an UndecidedError: ``check`` undecided, no clustering found,
an SDP refused for time or memory) or an internal error, 2 invalid input or usage, 3
infeasible constraints, 130 interrupted before any result existed.

Ctrl-C (SIGINT) and SIGTERM are taken over before anything heavy is imported
(:class:`Interrupts`): before a command's work starts (reading, set-up) they end it with
exit code 130 and one line, never a traceback. Once the work runs, the first asks it to stop
and keep what it found: ``pcsos solve`` its best clustering and a certified gap (the second
abandons the running nodes at once, the third exits 130 without output); ``certify`` its
clustering and a valid bound from the subsets bounded so far; ``heuristic`` its best
clustering; ``impact`` the pairs scored so far; ``bound`` the safe bound of where its solve
stopped (for these four the second exits 130 at once). A command stopped before it found
anything exits 130.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from contextlib import contextmanager

from pcsos.errors import PcsosError

__all__ = ["main", "entry", "build_parser", "Interrupts", "SUBCOMMANDS"]

# each names a module pcsos.cli.<name> with ``add_arguments(parser)`` and ``run(args) -> int``
SUBCOMMANDS = {
    "check": "validate an instance and decide feasibility",
    "bound": "compute a certified SDP lower bound at the root",
    "heuristic": "run one upper-bound heuristic",
    "solve": "solve to certified optimality by branch-and-cut",
    "kcenter": "constrained k-center 2-approximation with a certified radius bound",
    "certify": "a certified gap for large instances: bound subsets of the data and add",
    "impact": "rank the pairs by their estimated cost to the optimum",
    "plot": "draw a run's progress or a clustering to an image file",
}


class Interrupts:
    """SIGINT / SIGTERM for one command (see the module doc).

    Until :meth:`arm`, a signal raises KeyboardInterrupt (``main`` turns it into exit code
    130). Once armed (the command's work has started), the handler never raises: the first
    signal sets :attr:`stop`; the second sets :attr:`abort` when the command has that stage
    (``abort=True``, as ``solve``), and the next ends the process with 130 at once, so no
    signal can land in the middle of writing a result file or of a C library call that
    would then abort the process.
    """

    def __init__(self, quiet: bool = False):
        self.stop = threading.Event()
        self.abort = threading.Event()
        self.quiet = quiet
        self.armed = False
        self.done = False
        self.count = 0
        self.saved: dict = {}
        self.command = ""
        self.stages = 2
        self.keeps = "the best clustering found"

    def install(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def uninstall(self) -> None:
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        self.saved.clear()

    def arm(self, command: str, quiet: bool = False, *, abort: bool = True,
            keeps: str = "the best clustering found") -> Interrupts:
        """From now on signals stop the work instead of raising. ``abort``: the second
        signal sets :attr:`abort` (and the third exits 130), else the second exits 130;
        ``keeps``: what the stop message says the command finishes with."""
        self.armed, self.command, self.quiet = True, command, quiet
        self.stages, self.keeps = (2 if abort else 1), keeps
        return self

    @classmethod
    @contextmanager
    def armed_for(cls, args, command: str, quiet: bool = False, **arm):
        """The command's :class:`Interrupts` (``args._interrupts`` from :func:`main`, else
        one installed here and uninstalled on exit), armed by :meth:`arm`; it stays armed
        after the block, so that no signal lands in the middle of writing the results."""
        own = getattr(args, "_interrupts", None) is None
        intr = cls().install() if own else args._interrupts
        intr.arm(command, quiet, **arm)
        try:
            yield intr
        finally:
            if own:
                intr.uninstall()

    def _say(self, text: str) -> None:
        if not self.quiet:
            try:
                sys.stderr.write(f"\npcsos {self.command}: {text}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def finish(self) -> None:
        """The command has returned and written everything: later signals are ignored."""
        self.done = True

    def _handle(self, signum, frame):
        if self.done:
            return
        if not self.armed:
            raise KeyboardInterrupt
        self.count += 1
        if self.count == 1:
            self.stop.set()
            again = "stop at once" if self.stages == 2 else "quit without a result"
            self._say(f"stop requested; finishing with {self.keeps} (Ctrl-C again to "
                      f"{again})")
        elif self.count == 2 and self.stages == 2:
            self.stop.set()
            self.abort.set()
            self._say("stopping at once (Ctrl-C again to quit without a result)")
        else:
            self._say("aborted")
            os._exit(130)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 with the message, as argparse does
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from pcsos import __version__  # lazy: pcsos.cli loads before numpy (Ctrl-C first)

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


@contextmanager
def _signals_held():
    """SIGINT and SIGTERM blocked in this (the main) thread for the block. Threads started
    inside inherit the mask: the BLAS pools that numpy and scipy start on import (the
    subcommand modules import them), so a signal reaches the main thread and ends its
    blocking wait (pcsos.io.open_input). Taken by a pool thread, it left a read of a FIFO
    that never gets data blocked for good (test_sigint_while_reading hung in a CI run, since
    a subcommand module imported numpy before the mask was set). A signal that comes
    meanwhile is delivered when the mask is restored."""
    block = (hasattr(signal, "pthread_sigmask")
             and threading.current_thread() is threading.main_thread())
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}) \
        if block else None
    try:
        yield
    finally:
        if block:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def main(argv: list[str] | None = None, *, interrupts: Interrupts | None = None) -> int:
    """Run one command and return its exit code (no traceback for any expected outcome).

    The signal handlers are restored on return, unless ``interrupts`` (installed by the
    caller, as :func:`entry` does) is given: then they stay, so that a signal during the
    interpreter's exit cannot raise either.
    """
    intr = interrupts if interrupts is not None else Interrupts().install()
    prog = "pcsos"  # "pcsos <command>" once the arguments are parsed
    try:
        with _signals_held():
            parser = build_parser()
            import numpy  # noqa: F401  (and their thread pools, whatever the command)
            import scipy.linalg  # noqa: F401
        args = parser.parse_args(argv)
        prog = f"pcsos {args.command}" if args.command else prog
        if getattr(args, "_run", None) is None:
            parser.print_help(sys.stderr)
            return 2
        from pcsos.cli.common import check_output_paths, stdin_inputs  # lazy: as above

        check_output_paths(args)  # before any work: a bad path must not cost a solve
        reading = stdin_inputs(args)  # one at most, once checked
        if reading and sys.stdin is not None and sys.stdin.isatty() and \
                not getattr(args, "quiet", False):  # else a wait without a word
            print(f"{prog}: reading {reading[0]} from the terminal (end it with Ctrl-D)",
                  file=sys.stderr)
        args._interrupts = intr
        return int(args._run(args) or 0)
    except PcsosError as exc:
        kind = {2: "error", 3: "infeasible"}.get(exc.exit_code, "error")
        print(f"{prog}: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an internal error: say so, keep the traceback for debugging
        if os.environ.get("PCSOS_DEBUG"):
            raise
        print(f"{prog}: internal error: {type(exc).__name__}: {exc}\n"
              "(set PCSOS_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    finally:
        if interrupts is None:
            intr.uninstall()


def entry() -> None:
    """The ``pcsos`` script: :func:`main`, then exit.

    When a solve was stopped, worker threads may still be inside a C++ library (HiGHS,
    LAPACK); letting the interpreter finalise under them aborts the process ("terminate
    called without an active exception"). Everything is written and flushed by then, so
    the process ends with ``os._exit`` in that case.
    """
    intr = Interrupts().install()
    code = main(interrupts=intr)
    intr.finish()
    from pcsos.tree import exit_if_jobs_running  # lazy: numpy is imported under _signals_held

    exit_if_jobs_running(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
