"""The one clock: a Deadline is an instant on time.monotonic that travels down unchanged,
shrinks but never grows, stops on its signal, and crosses a process as the seconds left.

No test here waits on the clock: instants are compared with each other, and the longest
limit used is far from any test's run time (an hour), so a loaded machine cannot flip one.
"""

from __future__ import annotations

import math
import pickle
import threading

import pytest

from pcsos.clock import Deadline
from pcsos.tree import Context

HOUR = 3600.0


def test_no_limit_never_expires_and_reports_none_to_outside_solvers():
    d = Deadline()
    assert not d.expired() and d.remaining() == math.inf
    assert d.seconds() is None and d.limit is None


def test_a_limit_is_an_instant_that_only_runs_down():
    d = Deadline(HOUR)
    assert d.limit == HOUR
    first = d.remaining()
    assert 0 < first <= HOUR and not d.expired()
    assert d.remaining() <= first
    assert Deadline(0.0).expired() and Deadline(0.0).remaining() == 0.0


@pytest.mark.parametrize("bad", [-1.0, math.nan])
def test_a_negative_or_nan_limit_is_refused(bad):
    with pytest.raises(ValueError, match="time limit"):
        Deadline(bad)


def test_of_passes_a_deadline_through_and_wraps_seconds():
    d = Deadline(HOUR)
    assert Deadline.of(d) is d
    assert Deadline.of(None).limit is None
    assert Deadline.of(5.0).limit == 5.0


def test_within_never_ends_after_its_parent():
    parent = Deadline(HOUR)
    assert parent.within(2 * HOUR).at == parent.at  # a step cannot outlive the whole
    short = parent.within(60.0)
    assert short.at < parent.at and short.remaining() <= 60.0
    half = parent.within(share=0.5)
    assert half.remaining() <= 0.5 * HOUR + 1e-6
    both = parent.within(60.0, share=0.5)
    assert both.at <= min(short.at, half.at) + 1e-3
    assert Deadline().within(share=0.5).limit is None  # a share of no limit is no limit
    assert Deadline().within(60.0).limit == pytest.approx(60.0)


def test_the_stop_signal_ends_the_time_at_once_and_is_inherited():
    ev = threading.Event()
    d = Deadline(HOUR, stop=ev)
    step = d.within(share=0.1)
    assert not d.expired() and not step.expired()
    ev.set()
    assert d.expired() and step.expired() and step.remaining() == 0.0


def test_within_adds_a_second_signal_without_dropping_the_first():
    first, second = threading.Event(), threading.Event()
    d = Deadline(stop=first).within(stop=second.is_set)
    assert not d.stopped()
    second.set()
    assert d.stopped()
    d2 = Deadline(stop=first).within(stop=lambda: False)
    first.set()
    assert d2.stopped()


def test_note_reports_progress_with_elapsed_time():
    seen = []
    d = Deadline(progress=seen.append)
    d.within(10.0).note(generation=3)
    assert seen[0]["generation"] == 3 and seen[0]["elapsed"] >= 0


def test_a_pickled_deadline_keeps_its_seconds_left_not_its_instant():
    d = Deadline(HOUR)
    back = pickle.loads(pickle.dumps(d))
    # the instant is remade on arrival: never more time than was left when it was sent
    assert 0 < back.remaining() <= d.limit
    assert back.limit == pytest.approx(HOUR, abs=1.0)
    assert pickle.loads(pickle.dumps(Deadline())).limit is None


def test_a_context_hands_its_jobs_one_deadline_that_stops_with_the_manager():
    cancel = threading.Event()
    ctx = Context(1.0, Deadline(HOUR), cancel=cancel)
    assert not ctx.cancelled() and ctx.deadline.remaining() <= HOUR
    cancel.set()
    assert ctx.cancelled() and ctx.deadline.expired() and ctx.deadline.remaining() == 0.0
    # across a process, the manager's event stays behind; the time left travels
    moved = pickle.loads(pickle.dumps(Context(1.0, Deadline(HOUR), cancel=threading.Event())))
    assert not moved.cancelled() and 0 < moved.deadline.remaining() <= HOUR


@pytest.mark.parametrize("bad", [-1, math.nan, "10", True])
def test_a_users_limit_that_is_not_seconds_is_an_input_error(bad):
    from pcsos.errors import InputError

    with pytest.raises(InputError, match="time_limit must be a number of seconds >= 0"):
        Deadline.checked(bad)
    d = Deadline(HOUR)
    assert Deadline.checked(d) is d and Deadline.checked(None).limit is None
    assert Deadline.checked(0).expired()


@pytest.mark.parametrize("command", [["bound"], ["check"], ["certify"], ["kcenter"],
                                     ["heuristic", "cop-kmeans"]])
@pytest.mark.parametrize("bad", ["-1", "nan", "soon"])
def test_every_command_refuses_a_time_limit_that_is_not_seconds(tmp_path, capsys, command,
                                                                 bad):
    from pcsos.cli import main

    data = tmp_path / "x.txt"
    data.write_text("0 0\n1 0\n5 5\n6 5\n")
    with pytest.raises(SystemExit) as info:
        main([*command, str(data), "--k", "2", "--time-limit", bad])
    assert info.value.code == 2
    assert "argument --time-limit" in capsys.readouterr().err


def _clock_reads() -> dict[str, set[str]]:
    """For each module of pcsos, the clocks it reads (``time.time``, ``time.monotonic``,
    ``time.perf_counter``)."""
    import ast
    import pathlib

    pkg = pathlib.Path(__file__).resolve().parents[1] / "pcsos"
    out: dict[str, set[str]] = {}
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "time"
                    and node.attr in ("time", "monotonic", "perf_counter")):
                out.setdefault(str(path.relative_to(pkg)), set()).add(node.attr)
    return out


def test_limits_are_read_on_one_clock():
    """``time.monotonic`` is the limits' clock: outside pcsos/clock.py it is read only for
    cadences (how often to print, to checkpoint, to poll Dask), and ``time.time`` only for
    timestamps a user reads. Everything else times a duration for a report
    (``perf_counter``) and never decides when to stop."""
    cadences = {"tree.py", "distributed.py"}  # checkpoint and progress cadence, Dask polls
    stamps = {"tree.py", "log.py", "checkpoint.py"}  # report entries, log lines, 'written'
    reads = _clock_reads()
    assert reads.pop("clock.py") == {"monotonic"}
    bad = [f"{mod}: time.{clock}" for mod, clocks in reads.items() for clock in clocks
           if (clock == "monotonic" and mod not in cadences)
           or (clock == "time" and mod not in stamps)]
    assert not bad, "a clock read outside pcsos.clock:\n" + "\n".join(bad)


def test_no_layer_takes_a_second_stop_hook_or_start_instant():
    """The Deadline carries the stop signal and the start: no function of pcsos takes
    ``should_stop`` or ``start_time`` beside it."""
    import ast
    import pathlib

    pkg = pathlib.Path(__file__).resolve().parents[1] / "pcsos"
    bad = []
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = {a.arg for a in node.args.args + node.args.kwonlyargs}
                for name in names & {"should_stop", "start_time"}:
                    bad.append(f"{path.relative_to(pkg)}:{node.lineno} {node.name}({name})")
    assert not bad, "\n".join(bad)
