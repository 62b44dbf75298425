"""`petstore-conformance history`: thirty nights made of real runs (the double clean and with
faults coming and going, in the smoke profile, about a second each), their times changed and
the standing statement chosen night by night, give each requirement's state and the night since
which it has been so, and name the unstable ones; statements that cannot be read are one line
each and skipped; a history of hostile statements is escaped and bounded; --out is the only
place written. The page in Chromium is tests/checker/test_history_browser.py."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance import cli
from conformance.evidence import history
from tests.shared.checker_runs import run_checker

AUTH, LIST, ERROR = "AUTH-WWW-AUTHENTICATE", "CAT-LIST-200", "ERR-SCHEMA"
FAULTS = {AUTH: "no-www-authenticate", LIST: "list-wrapped-in-object", ERROR: "error-without-code"}
NIGHTS = 30
# Which requirements fail on which nights (0 the oldest): AUTH breaks on night 20 and stays
# broken; LIST comes and goes and is fine at the end; ERROR came once long ago and is back.
FAILING_ON = {
    AUTH: set(range(20, NIGHTS)),
    LIST: {5, 9, 14, 22, 27},
    ERROR: {3, 26, 28, 29},
}
TARGET = "https://staging.example.com/v1"


def night_time(night: int) -> str:
    return f"2026-11-{night + 1:02d}T03:17:00Z"


def failing_on(night: int) -> frozenset[str]:
    return frozenset(i for i, nights in FAILING_ON.items() if night in nights)


def folder_of(root: Path, faults: list[str]) -> Path:
    return root / ("run-" + "-".join(faults or ["clean"]))


@dataclass
class Nights:
    folder: Path  # a folder of 30 report folders, one night each
    real: dict[frozenset[str], dict]  # the real statements, by the requirements failing


@pytest.fixture(scope="session")  # the browser's tests read the same nights
def nights(tmp_path_factory) -> Nights:
    """One real run of the double per set of faults the schedule needs (six, about a second
    each in the smoke profile); each night a copy of the run with that night's faults, at that
    night's time, against one target, as a nightly job's statements would be."""
    root = tmp_path_factory.mktemp("nights")
    real = {}
    for failing in sorted({failing_on(n) for n in range(NIGHTS)}, key=sorted):
        faults = [FAULTS[i] for i in sorted(failing)]
        run = run_checker(folder_of(root, faults), faults, options=["--profile", "smoke"])
        assert run.status == (1 if failing else 0), run.describe()
        assert set(run.statement["failed_requirements"]) == failing, run.describe()
        real[failing] = run.statement
    folder = root / "statements"
    for night in range(NIGHTS):
        statement = dict(real[failing_on(night)])
        statement |= {"time": night_time(night), "target": TARGET}
        statement["finished"] = night_time(night).replace("03:17:00", f"03:{18 + night % 7}:00")
        statement["run_id"] = f"night-{night:02d}"
        (folder / f"night-{night:02d}").mkdir(parents=True)
        (folder / f"night-{night:02d}" / "conformance.json").write_text(json.dumps(statement))
    return Nights(folder, real)


@dataclass
class Written:
    status: int
    out: str
    err: str
    folder: Path

    def json(self) -> dict:
        return json.loads((self.folder / "history.json").read_text(encoding="utf-8"))

    def html(self) -> str:
        return (self.folder / "history.html").read_text(encoding="utf-8")


def run_history(capsys, *args: object) -> Written:
    status = cli.main(["history", *map(str, args)])
    captured = capsys.readouterr()
    out = Path(str(args[args.index("--out") + 1])) if "--out" in args else Path(".")
    return Written(status, captured.out, captured.err, out)


def test_thirty_nights_give_each_requirement_its_since_and_name_the_unstable(
    nights, tmp_path, capsys
):
    written = run_history(capsys, nights.folder, "--out", tmp_path / "history")
    assert written.status == 0, written.err
    assert written.err == ""
    document = written.json()
    assert [n["time"] for n in document["nights"]] == [
        night_time(n) for n in reversed(range(NIGHTS))
    ], "newest first"
    assert [n["verdict"] for n in document["nights"]] == [
        "not conformant" if failing_on(n) else "conformant" for n in reversed(range(NIGHTS))
    ]
    rows = {row["id"]: row for row in document["requirements"]}
    assert (rows[AUTH]["state"], rows[AUTH]["since"]) == ("failed", night_time(20))
    assert (rows[AUTH]["nights_in_state"], rows[AUTH]["flips"]) == (10, 1)
    assert (rows[ERROR]["state"], rows[ERROR]["since"], rows[ERROR]["flips"]) == (
        "failed",
        night_time(28),
        5,
    )
    assert (rows[LIST]["state"], rows[LIST]["since"], rows[LIST]["flips"]) == (
        "passed",
        night_time(28),
        10,
    )
    assert document["failing"] == [  # the unstable first
        {"id": ERROR, "since": night_time(28)},
        {"id": AUTH, "since": night_time(20)},
    ]
    assert {row["id"] for row in document["unstable"]} == {LIST, ERROR}
    # Every other requirement kept its outcome, but for nights a fault left it not tested
    # (a failed ERR-SCHEMA blocks ERR-STATUS-MATCH): never a flip.
    faulty = {night for nights in FAILING_ON.values() for night in nights}
    for requirement_id, row in rows.items():
        if requirement_id not in FAILING_ON:
            oldest_first = row["outcomes"][::-1]
            changed = {n for n, outcome in enumerate(oldest_first) if outcome != oldest_first[0]}
            assert row["flips"] == 0 and changed <= faulty, row
    assert (rows["ERR-STATUS-MATCH"]["state"], rows["ERR-STATUS-MATCH"]["since"]) == (
        "not-tested",
        night_time(28),
    )
    assert rows[LIST]["outcomes"][:3] == ["passed", "passed", "failed"]  # nights 29, 28, 27
    assert document["notes"] == []  # one target, plan, profile and suite all month
    assert f"failing since {night_time(20)}: {AUTH}" in written.out
    assert f"unstable: {LIST} flipped 10 times in 30 nights" in written.out
    seconds = [n["seconds"] for n in document["nights"]]
    assert seconds[0] == 60 * (1 + 29 % 7) and all(s > 0 for s in seconds)
    assert all(n["requests"] and n["requests"] > 0 for n in document["nights"])
    assert all(n["peak_memory_bytes"] > 10 * 2**20 for n in document["nights"])
    page = written.html()
    assert f"<b>{AUTH}</b> failing since 2026-11-21 (10 nights)" in page
    assert_well_formed(page)


def test_a_run_is_a_statement_a_folder_a_package_or_a_folder_of_them(nights, tmp_path, capsys):
    """The nights given every way a RUN may be, and the same history read from them; what
    cannot be read is one line each on stderr, skipped, and named on the page."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for night in range(0, 10):
        shutil.copy(
            nights.folder / f"night-{night:02d}" / "conformance.json", mixed / f"{night}.json"
        )
    with zipfile.ZipFile(tmp_path / "night-10.zip", "w") as package:
        package.write(nights.folder / "night-10" / "conformance.json", "conformance.json")
    (mixed / "broken.json").write_text('{"requirements": [', encoding="utf-8")
    (mixed / "twice.json").write_text('{"requirements": [], "requirements": []}')
    (mixed / "notes.txt").write_text("not a statement, not looked at")
    (mixed / "link.json").symlink_to(nights.folder / "night-12" / "conformance.json")
    given = [mixed, tmp_path / "night-10.zip", nights.folder / "night-11" / "conformance.json"]
    given += [nights.folder / f"night-{n:02d}" for n in range(12, NIGHTS)]
    given += [nights.folder / "night-12" / "conformance.json"]  # given twice
    written = run_history(capsys, *given, tmp_path / "absent", "--out", tmp_path / "out")
    assert written.status == 0, written.err
    lines = written.err.splitlines()
    assert len(lines) == 5, lines
    assert lines[0].endswith("link.json: a symbolic link"), "said as the folder is listed"
    assert "broken.json is not JSON" in lines[1] and "twice.json is not JSON" in lines[2]
    assert lines[3].endswith(f"is the run of {nights.folder / 'night-12'}")
    assert "absent" in lines[4] and "No such file" in lines[4]
    document = written.json()
    assert len(document["nights"]) == NIGHTS
    assert {row["id"]: row["since"] for row in document["failing"]}[AUTH] == night_time(20)
    assert len(document["skipped"]) == 5 and "broken.json" in written.html()
    # The newest N only.
    written = run_history(capsys, nights.folder, "--nights", "5", "--out", tmp_path / "five")
    document = written.json()
    assert [n["time"] for n in document["nights"]][-1] == night_time(25)
    assert {row["id"]: row["since"] for row in document["failing"]}[AUTH] == night_time(25)
    assert document["notes"][0].startswith("25 older night(s) left out")


def test_nights_that_checked_something_else_are_noted(nights, tmp_path, capsys):
    folder = tmp_path / "nights"
    excused = {"result": "not conformant, every failure expected"}
    for night, changes in enumerate(
        [{}, excused, {"profile": "full"}, {"profile": "full", "suite_version": "0.2.0"}]
    ):
        statement = nights.real[frozenset()] | {"time": night_time(night), "target": TARGET}
        (folder / str(night)).mkdir(parents=True)
        (folder / str(night) / "conformance.json").write_text(json.dumps(statement | changes))
    written = run_history(capsys, folder, "--out", tmp_path / "out")
    assert written.json()["notes"] == [
        f"{night_time(2)}: profile smoke -> full",
        f"{night_time(3)}: suite version {nights.real[frozenset()]['suite_version']} -> 0.2.0",
    ]
    assert "Notes: nights that checked something else" in written.html()
    # A night whose every failure a baseline excused is said so, in its own colour.
    assert written.json()["nights"][2]["verdict"] == excused["result"]
    assert '<span class="excused" title="2026-11-02T03:17:00Z: not conformant, every' in (
        written.html()
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "the following arguments are required"),
        (["x.json"], "--out"),
        (["x.json", "--out", "OUT", "--nights", "0"], "--nights must be from 1 to 365"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args, said, tmp_path, capsys):
    args = [str(tmp_path / "o") if a == "OUT" else a for a in args]
    written = run_history(capsys, *args)
    assert written.status == 2 and said in written.err
    assert len(written.err.splitlines()) == 1 and written.out == ""


def test_no_readable_statement_or_an_unwritable_out_is_exit_2(tmp_path, capsys):
    (tmp_path / "bad.json").write_text("[]")
    written = run_history(capsys, tmp_path / "bad.json", "--out", tmp_path / "out")
    assert written.status == 2
    assert written.err.splitlines()[-1].endswith("no statement could be read: nothing to show")
    assert not (tmp_path / "out" / "history.html").exists()
    (tmp_path / "file").write_text("")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(statement_of([("GEN-X", "passed")])))
    written = run_history(capsys, good, "--out", tmp_path / "file")
    assert (
        written.status == 2
        and written.err == f"petstore-conformance: --out {tmp_path / 'file'}: not a folder\n"
    )


def test_out_is_the_only_place_written(tmp_path, capsys):
    """A link left in --out where the page goes is replaced, not followed."""
    outside = tmp_path / "outside.html"
    outside.write_text("kept")
    out = tmp_path / "out"
    out.mkdir()
    (out / "history.html").symlink_to(outside)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(statement_of([("GEN-X", "passed")])))
    written = run_history(capsys, good, "--out", out)
    assert written.status == 0, written.err
    assert outside.read_text() == "kept"
    assert not (out / "history.html").is_symlink() and "GEN-X" in written.html()


# -- hostile statements -------------------------------------------------------------------------


def statement_of(outcomes: list[tuple[str, str]], **fields) -> dict:
    return {
        "time": "2026-11-01T03:17:00Z",
        "finished": "2026-11-01T03:20:00Z",
        "verdict": "conformant",
        "requirements": [{"id": i, "outcome": o} for i, o in outcomes],
        **fields,
    }


HOSTILE = "<script>alert(1)</script>\x00\x1b[31m\u202e\"' onload=x <img src=http://evil/>"


def hostile_statements(folder: Path) -> Iterator[Path]:
    """Markup and control characters in every text, numbers no float holds, nesting past any
    reader's depth, thousands of requirement ids, and ids a page long."""
    folder.mkdir()
    texts = {name: HOSTILE * 50 for name in ("target", "plan", "profile", "suite_version")}
    documents = {
        "markup.json": json.dumps(
            statement_of([(HOSTILE, "failed"), ("GEN-OK", HOSTILE)], run_id=HOSTILE, **texts)
            | {"verdict": HOSTILE, "time": HOSTILE}
        ),
        "huge.json": json.dumps(statement_of([("GEN-OK", "passed")])).replace(
            '"verdict"', '"requests": {"total": 1e400}, "peak_memory_bytes": 1e999, "verdict"'
        ),
        "digits.json": json.dumps(statement_of([("GEN-OK", "passed")]))[:-1]
        + ', "peak_memory_bytes": '
        + "9" * 5000
        + "}",
        "ten-digits.json": json.dumps(
            statement_of([("GEN-OK", "failed")], requests={"total": 10**40}, peak_memory_bytes=-5)
        ),
        "largest.json": json.dumps(
            statement_of(
                [("GEN-OK", "passed")],
                requests={"total": history.MAX_FIGURE},
                peak_memory_bytes=history.MAX_FIGURE,
                finished="9999-12-31T23:59:59Z",
            )
        ),
        "deep.json": '{"requirements": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "many.json": json.dumps(statement_of([(f"GEN-{n:05d}", "failed") for n in range(5000)])),
        "long-ids.json": json.dumps(statement_of([("GEN-" + "x" * 10_000, "failed")] * 3)),
    }
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
        yield folder / name


class Checked(HTMLParser):
    """Every tag, to find any the statements could have smuggled in."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.open: list[str] = []
        self.sources: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.sources += [v for k, v in attrs if k in ("src", "href") and v]
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


VOID = {"meta", "br", "line", "polyline", "img", "link"}
TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "div"}
TAGS |= {"ul", "li", "b", "table", "thead", "tbody", "tr", "th", "td", "svg", "line", "text"}
TAGS |= {"polyline", "circle", "a", "title"}


def assert_well_formed(page: str) -> Checked:
    checked = Checked()
    checked.feed(page)
    checked.close()
    assert checked.open == [], checked.open
    assert set(checked.tags) <= TAGS, set(checked.tags) - TAGS
    assert "script" not in checked.tags and checked.sources == ["history.json"]
    assert "\x00" not in page and "\x1b" not in page
    return checked


def test_hostile_statements_are_escaped_and_bounded(tmp_path, capsys):
    given = list(hostile_statements(tmp_path / "hostile"))
    written = run_history(capsys, *given, "--out", tmp_path / "out")
    assert written.status == 0, written.err
    skipped = written.err.splitlines()
    assert len(skipped) == 2, skipped  # the 5,000 digits and the nesting: one line each
    assert any("digits.json is not JSON" in line for line in skipped)
    assert any("deep.json is not JSON" in line for line in skipped)
    page = written.html()
    assert_well_formed(page)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert len(page) < 2_000_000, len(page)
    document = written.json()
    night = {n["source"].rsplit("/", 1)[-1]: n for n in document["nights"]}
    assert (
        night["huge.json"]["requests"] is None and night["huge.json"]["peak_memory_bytes"] is None
    )
    assert night["ten-digits.json"]["requests"] is None
    assert night["ten-digits.json"]["peak_memory_bytes"] is None
    assert night["largest.json"]["requests"] == history.MAX_FIGURE  # the largest believed
    markup = night["markup.json"]
    assert markup["verdict"] == "unknown" and markup["time"] == ""
    assert all(len(markup[k]) <= history.MAX_TEXT for k in ("target", "plan", "run_id"))
    assert "\\x00" in markup["target"] and "\x00" not in json.dumps(document, ensure_ascii=False)
    many = night["many.json"]
    assert many["counts"]["failed"] == history.MAX_IDS and many["ids_left_out"] == 5000 - 500
    assert night["long-ids.json"]["ids_left_out"] == 3
    assert len(document["requirements"]) <= history.MAX_IDS
    assert (tmp_path / "out").stat().st_size < 10**6
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["history.html", "history.json"]
