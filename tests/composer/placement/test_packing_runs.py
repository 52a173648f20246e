"""The packing runs kept between invocations of the benchmark (bench/packing_runs.py): a
finished run is kept under a digest of the code it ran, found again by the next invocation
instead of being run again, and never mixed with the results of other code. Reads no
trace: the runs here are stand-ins."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import bench.bench_packing as bench_packing
import bench.packing_runs as packing_runs
from bench.packing_data import Run
from bench.packing_report import seed_words
from bench.packing_runs import ROOT, Store, digest, job_key


def test_a_kept_run_and_ceiling_read_back_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    store = Store(path, trace_dir=tmp_path, traces=("default",))
    run = Run({100: 95.5, 130: 95.75}, dropped=12, seconds=3.5, skipped=0)
    store.put(("run", "default", "fixed", "composer", 42, None), run, "today")
    store.put(("bound", "default", "all", "", 42, None), 97.25, "today")
    again = Store(path, trace_dir=tmp_path, traces=("default",))
    assert again.get(("run", "default", "fixed", "composer", 42, None)) == run
    assert again.get(("bound", "default", "all", "", 42, None)) == 97.25
    assert again.get(("run", "default", "fixed", "composer", 43, None)) is None
    assert again.measured([("run", "default", "fixed", "composer", 42, None)]) == ["today"]
    (tmp_path / "openb_pod_list_default.csv").write_text("another trace")
    other = Store(path, trace_dir=tmp_path, traces=("default",))
    assert other.get(("bound", "default", "all", "", 42, None)) is None  # other data
    fresh = Store(path, fresh=True, trace_dir=tmp_path, traces=("default",))
    assert fresh.entries == {} and Store(path).entries == {}


def test_the_digest_follows_the_code_each_run_depends_on(tmp_path: Path) -> None:
    for name in ("product", "reimplemented", "bound"):
        for entry in packing_runs._DEPENDS[name]:
            source = ROOT / entry
            target = tmp_path / entry
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, target)
    before = {name: digest(name, tmp_path) for name in packing_runs._DEPENDS}
    assert before == {name: digest(name) for name in packing_runs._DEPENDS}
    engine = tmp_path / "composer" / "placement" / "engine.py"
    engine.write_text(engine.read_text() + "\n# changed\n")
    after = {name: digest(name, tmp_path) for name in packing_runs._DEPENDS}
    assert after["product"] != before["product"]
    assert after["reimplemented"] == before["reimplemented"]
    assert after["bound"] == before["bound"]
    digests = {"product": "p", "reimplemented": "r", "bound": "b", "t": "d"}
    assert job_key(("run", "t", "fixed", "composer-pack", 1, None), digests).startswith("p|d|")
    assert job_key(("run", "t", "fixed", "fgd", 1, None), digests).startswith("r|d|")
    assert job_key(("bound", "t", "all", "", 1, None), digests).startswith("b|d|")


def test_an_invocation_runs_only_what_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first invocation is cut short after one run: that run is kept; the next runs
    only the seed still missing, and a report runs nothing and shows both seeds."""
    traces = tmp_path / "trace"
    traces.mkdir()
    (traces / "openb_pod_list_default.csv").write_text("")
    monkeypatch.setattr(bench_packing, "TRACE_DIR", traces)
    monkeypatch.setattr(packing_runs, "STORE", tmp_path / "runs.json")
    ran: list[int] = []

    def job(args: tuple[Any, ...]) -> tuple[str, tuple[str, str, str], int, Run]:
        kind, trace, mode, policy, seed, _ = args
        if len(ran) == 1 and not kept_one:
            raise KeyboardInterrupt  # cut short
        ran.append(seed)
        return kind, (trace, mode, policy), seed, Run({100: 90.0 + seed, 130: 91.0 + seed})

    monkeypatch.setattr(bench_packing, "job", job)
    argv = [
        "--traces=default",
        "--modes=fixed",
        "--policies=fgd",
        "--seeds=2",
        "--no-bound",
        "--no-write",
        "--jobs=1",
    ]
    kept_one = False
    with pytest.raises(KeyboardInterrupt):
        bench_packing.main(argv)
    assert ran == [42]
    kept_one = True
    bench_packing.main(argv)
    assert ran == [42, 43]
    capsys.readouterr()
    bench_packing.main([*argv, "--report"])
    assert ran == [42, 43]
    written = [a for a in argv if a != "--no-write"]
    # Writing the docs from a selection of which runs are missing is refused (seed 44).
    assert bench_packing.main([*written, "--seeds=3", "--report"]) == 2
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| default | fixed"))
    assert "| 42..43 |" in row
    assert "| 132.50 ± 0.71 | 133.50 ± 0.71 |" in row  # the two seeds' figures, averaged


def test_two_stores_at_once_keep_each_others_runs(tmp_path: Path) -> None:
    """Two invocations running at once, each with the file as it found it: every run of
    both is kept."""
    path = tmp_path / "runs.json"
    first = Store(path, trace_dir=tmp_path, traces=("default",))
    second = Store(path, trace_dir=tmp_path, traces=("default",))
    for seed in (42, 43):
        first.put(("run", "default", "fixed", "fgd", seed, None), Run({100: 1.0}), "a")
        second.put(("run", "default", "all", "fgd-bal", seed, None), Run({100: 2.0}), "b")
    kept = Store(path, trace_dir=tmp_path, traces=("default",))
    for seed in (42, 43):
        assert kept.get(("run", "default", "fixed", "fgd", seed, None)) == Run({100: 1.0})
        assert kept.get(("run", "default", "all", "fgd-bal", seed, None)) == Run({100: 2.0})


def test_the_seeds_of_a_row_are_said_as_runs() -> None:
    assert seed_words([42, 43, 44, 47, 49, 50]) == "42..44, 47, 49..50"
    assert seed_words([51]) == "51"


def test_pruning_forgets_the_runs_of_other_code_or_data_only(tmp_path: Path) -> None:
    """A run of the current code and data stays; one under another engine's digest, or
    of a pod list since changed, goes; one of a pod list not here stays (unchecked)."""
    path = tmp_path / "runs.json"
    (tmp_path / "openb_pod_list_default.csv").write_text("pods")
    store = Store(path, trace_dir=tmp_path, traces=("default",))
    run = Run({100: 95.5, 130: 95.75})
    current = ("run", "default", "domain", "composer", 42, None)
    store.put(current, run, "today")
    old_engine = {**store.digests, "product": "0" * 16}
    store.entries[job_key(current, old_engine)] = {}
    absent = {**store.digests, "elsewhere": "e" * 16}
    store.entries[job_key(("run", "elsewhere", "all", "fgd", 42, None), absent)] = {}
    store._write(store.entries)
    (tmp_path / "openb_pod_list_changed.csv").write_text("now")
    was = {**store.digests, "changed": "c" * 16}
    store.entries[job_key(("bound", "changed", "all", "", 42, None), was)] = {}
    store._write(store.entries)
    assert store.prune(tmp_path) == 2
    again = Store(path, trace_dir=tmp_path, traces=("default",))
    assert again.get(current) == run
    assert len(again.entries) == 2
    assert any("|elsewhere|" in key for key in again.entries)


def test_pruning_an_unreadable_store_refuses_rather_than_empties_it(tmp_path: Path) -> None:
    """A store git left conflict markers in reads as no runs; pruning it must not write
    that back. A key of another shape is forgotten: no job can ever match it."""
    path = tmp_path / "runs.json"
    path.write_text('<<<<<<< HEAD\n{"a": 1}\n=======\n{}\n>>>>>>> other\n')
    store = Store(path, trace_dir=tmp_path)
    with pytest.raises(ValueError, match="cannot be read"):
        store.prune(tmp_path)
    assert path.read_text().startswith("<<<<<<<")
    path.write_text('{"not|a|key": {}}')
    assert Store(path, trace_dir=tmp_path).prune(tmp_path) == 1
    assert Store(path).entries == {}
