"""No figure in the docs is typed by hand: a measured figure sits in a section its benchmark
writes (bench/common.py, `write_section`), or the text links to docs/benchmarks.md.

"Figure-like": a duration (`123 ms`, `8.4 s`), a count of queries, statements or round trips
(`9 queries`, `eight queries`), a rate (`9,710 decisions/s`), a size in bytes, a percentage
with decimals (`95.74 %`). Not figures: what the text sets rather than measures, recognised
by the words before it in its clause (a target "at most 100 ms", a setting "every 5 s",
"waits up to 20 s", "(default 95 %)") or after it ("30 s by default"); numbers in code;
and anything in the text of a link to docs/benchmarks.md.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.common import ROOT, _replace, _wrap, anchor, documents, markers, write_section

SECTION = re.compile(r"<!-- bench:([\w.-]+):start -->.*?<!-- bench:\1:end -->", re.S)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
BENCHMARK_LINK = re.compile(r"\[([^\]]*)\]\((?:\.\./)?(?:docs/)?benchmarks\.md(?:#[^)]*)?\)")
NUMBER = r"(?<![\w.,])\d[\d,]*(?:\.\d+)?"
WORD = r"(?i:\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b)"
FIGURE = re.compile(
    rf"{NUMBER}\s*(?:ns|µs|us|ms|s|seconds?|minutes?|hours?)\b"  # a duration
    rf"|(?:{NUMBER}|{WORD})\s*(?:queries|query|statements?|round trips?)\b"  # work done
    rf"|{NUMBER}\s*[a-z]+/s\b"  # a rate
    rf"|{NUMBER}\s*bytes\b"
    r"|(?<![\w.,])\d[\d,]*\.\d+\s*%"  # a measured share; whole percentages are parameters
)
SETS = re.compile(r"at most|at least|up to|every|default|target|set to|[≤≥]", re.I)
CLAUSE_END = re.compile(r"[;:(|—]|\.\s|\n\s*\n")


def blanked(text: str) -> str:
    """`text` with generated sections, code and links to the benchmarks blanked out (same
    length, so that offsets still give line numbers)."""
    for pattern in (SECTION, CODE, BENCHMARK_LINK):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def hand_typed(text: str) -> list[tuple[int, str]]:
    """The figure-like numbers of `text` outside generated sections, as (line, figure)."""
    plain = blanked(text)
    found = []
    for match in FIGURE.finditer(plain):
        before = plain[max(0, match.start() - 80) : match.start()]
        clause = " ".join(CLAUSE_END.split(before)[-1].split())  # lines wrap mid-phrase
        after = plain[match.end() : match.end() + 12]
        if SETS.search(clause) or after.lstrip().startswith("by default"):
            continue
        figure = " ".join(text[match.start() : match.end()].split())
        found.append((plain.count("\n", 0, match.start()) + 1, figure))
    return found


def test_no_document_carries_a_figure_typed_by_hand() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {figure!r}"
        for path in documents()
        for line, figure in hand_typed(path.read_text())
    ]

    assert not found, (
        "Figures typed by hand drift from what the code does. Quote them from the section "
        "their benchmark writes (<!-- bench:<name>.<key>:start --> ... :end -->, see "
        "bench/common.py) or link to docs/benchmarks.md:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("text", "figures"),
    [
        ("`build_snapshot()` costs 9 queries whatever the size.", ["9 queries"]),
        ("It reads the graph in eight `values_list()` queries.", ["eight `values_list()` queries"]),
        ("one event took 123 ms to the last client (p50; p99 215 ms)", ["123 ms", "215 ms"]),
        (
            "**9,710 decisions/s**, 95.74 % allocated, 1,175,537 bytes",
            ["9,710 decisions/s", "95.74 %", "1,175,537 bytes"],
        ),
        ("About 2.5 minutes on 2 cores.", ["2.5 minutes"]),
        ("Targets: at most 100 ms per page and p99 at most 2 ms.", []),
        ("polled every 30 s; it waits up to 20 s; 30 s by default; (default 95 %)", []),
        ("at 130 % of capacity, one query, one statement per 500 rows", []),
        ("<!-- bench:x.summary:start -->\n9 queries, 914 ms\n<!-- bench:x.summary:end -->", []),
        ("took 65 ms ([the table](benchmarks.md#x)); [in 2 ms](../docs/benchmarks.md)", ["65 ms"]),
        ("```\ncurl -m 5 s\n```", []),
    ],
)
def test_what_counts_as_a_hand_typed_figure(text: str, figures: list[str]) -> None:
    assert [figure for _, figure in hand_typed(text)] == figures


def test_every_quoted_excerpt_is_written_by_its_benchmark() -> None:
    """An excerpt's markers name a benchmark (bench/bench_<name>.py) that writes that key."""
    for path in documents():
        for name in re.findall(r"<!-- bench:([\w-]+)\.([\w-]+):start -->", path.read_text()):
            script = ROOT / "bench" / f"bench_{name[0]}.py"
            assert script.exists(), f"{path}: no {script.name} writes {name}"
            assert f'excerpts={{"{name[1]}"' in script.read_text(), f"{script.name}: {name}"


def test_every_section_outside_the_benchmarks_is_written_by_its_benchmark() -> None:
    """A section held by another document (docs/reliability.md) names a benchmark that
    writes it there."""
    for path in documents():
        if path == ROOT / "docs" / "benchmarks.md":
            continue
        for name in re.findall(r"<!-- bench:([\w-]+):start -->", path.read_text()):
            script = ROOT / "bench" / f"bench_{name}.py"
            assert script.exists(), f"{path}: no {script.name} writes section {name}"
            assert path.name in script.read_text(), f"{script.name} does not write {path.name}"


def test_a_benchmark_rewrites_its_section_in_a_document_of_its_own(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("# Report\n\n<!-- bench:a:start -->\nold\n<!-- bench:a:end -->\n\nEnd.\n")
    start, end = markers("a")

    written = write_section("a", f"{start}\nnew\n{end}", document=report)

    assert written == [report]
    assert report.read_text() == f"# Report\n\n{start}\nnew\n{end}\n\nEnd.\n"


def test_links_to_the_benchmarks_land_on_a_section() -> None:
    benchmarks = (ROOT / "docs" / "benchmarks.md").read_text()
    anchors = {anchor(line + "\n") for line in benchmarks.splitlines() if line.startswith("## ")}
    for path in documents():
        for target in re.findall(r"benchmarks\.md#([\w-]+)", path.read_text()):
            assert target in anchors, f"{path.relative_to(ROOT)}: #{target}"


def test_a_benchmark_rewrites_its_section_and_every_excerpt_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "benchmarks.md").write_text(
        "# Benchmarks\n\n<!-- bench:a:start -->\nold\n<!-- bench:a:end -->\n"
    )
    quoting = docs / "a.md"
    quoting.write_text(
        "Intro.\n\n<!-- bench:a.summary:start -->\nold\n<!-- bench:a.summary:end -->\n\nEnd.\n"
    )
    untouched = docs / "b.md"
    untouched.write_text("Nothing quoted.\n")
    monkeypatch.setattr("bench.common.DOCS", docs / "benchmarks.md")
    monkeypatch.setattr("bench.common.documents", lambda: [quoting, untouched])
    start, end = markers("a")

    written = write_section(
        "a",
        f"{start}\n## A: at 10,000 devices\n\n5 queries\n{end}",
        excerpts={"summary": "5 queries. [All]({benchmarks})."},
    )

    assert written == [docs / "benchmarks.md", quoting]
    assert "5 queries\n<!-- bench:a:end -->" in (docs / "benchmarks.md").read_text()
    assert quoting.read_text() == (
        "Intro.\n\n<!-- bench:a.summary:start -->\n"
        "5 queries. [All](benchmarks.md#a-at-10000-devices).\n"
        "<!-- bench:a.summary:end -->\n\nEnd.\n"
    )
    assert untouched.read_text() == "Nothing quoted.\n"
    assert _replace("no markers", "a", "x") is None


def test_an_excerpt_wraps_like_the_prose_but_never_inside_a_link() -> None:
    text = "word " * 30 + "[All the figures](benchmarks.md#" + "x" * 60 + ")."

    lines = _wrap(text).splitlines()

    assert all(len(line) <= 92 for line in lines[:-1])
    assert lines[-1].startswith("[All the figures](benchmarks.md#")
