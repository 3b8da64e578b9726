"""The export's parts on their own: reading values, the registry and its row flattener, the
writers, the folder layout and the options. No sandbox: a real store in a temp folder."""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime
from pathlib import Path

import pandas as pd
import pytest
from openpyxl import load_workbook

from haul.pipelines.config import parse_config
from haul.pipelines.export import layout
from haul.pipelines.export.columns import as_json, identifier, parent, timestamp, value
from haul.pipelines.export.command import ExportRequest, since_instant
from haul.pipelines.export.errors import ExportOptionError
from haul.pipelines.export.tables import Column, ExportContext, Registry, Table, flatten
from haul.pipelines.export.values import parse_duration_seconds, parse_timestamp
from haul.pipelines.export.writers import XlsxWriter, open_writer, sheet_title
from haul.state.store import StagedRecord, StagingStore

pytestmark = pytest.mark.fast  # no sandbox, no haul process: make test-fast runs it


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("P1DT2H", 93_600), ("PT30M", 1_800), ("P1H", 3_600), ("P3W", 1_814_400),
     ("PT1.5S", 2), ("PT0M", 0), ("P1M", None), ("P1Y", None), ("P", None), ("soon", None)],
)  # fmt: skip
def test_durations_read_as_seconds(text: str, seconds: int | None) -> None:
    """ISO-8601 durations (and the tracker's `P1H`) in whole seconds; a month has no length."""
    assert parse_duration_seconds(text) == seconds


def test_instants_read_in_any_zone_as_utc() -> None:
    """The tracker's +0300 form, Z, and a bare local time (taken as UTC)."""
    expected = datetime(2024, 5, 1, 7, 0, tzinfo=UTC)
    for text in ("2024-05-01T10:00:00.000+0300", "2024-05-01T07:00:00Z", "2024-05-01T07:00:00"):
        assert parse_timestamp(text) == expected
    assert parse_timestamp("yesterday") is None


def stage_surveys(path: Path) -> None:
    """Two surveys with their questions, and answers under each, as the forms extract stages them."""
    with StagingStore.open(path) as store:
        store.upsert_records("survey", [
            {"source_id": "s1", "raw": {"name": "Support", "questions": [
                {"slug": "email", "type": "string"}, {"slug": "urgency", "type": "integer"}]}},
            {"source_id": "s2", "raw": {"name": "Lunch", "questions": [{"slug": "dish", "type": "string"}]}},
        ])  # fmt: skip
        store.upsert_records("survey_answer", [
            {"source_id": "s1/1", "parent": "s1", "raw": {"id": 1, "created": "2024-05-01T10:00:00Z",
                                                         "values": {"email": "a@b", "urgency": "3"}}},
            {"source_id": "s1/2", "parent": "s1", "raw": {"id": 2, "created": "2024-05-02T10:00:00Z",
                                                         "values": {"email": "c@d", "urgency": "zero"}}},
            {"source_id": "s2/1", "parent": "s2", "raw": {"id": 1, "created": "2024-05-03T10:00:00Z",
                                                         "values": {"dish": "soup"}}},
        ])  # fmt: skip


def answers_tables(store: StagingStore) -> list[Table]:
    """The example of a family: one table per survey, one column per question slug."""
    kinds = {"integer": "int", "string": "string"}
    return [
        Table(
            f"survey_{survey.source_id}_answers",
            "survey_answer",
            (
                identifier("answer_id", "the answer's id", "id"),
                timestamp("answered_at", "when it was answered", "created"),
                *(
                    value(q["slug"], kinds[q["type"]], q["slug"], "values", q["slug"])
                    for q in survey.raw["questions"]
                ),
            ),
            parent=survey.source_id,
        )
        for survey in store.iter_records("survey")
    ]


def test_a_family_builds_one_table_per_survey_from_the_store(tmp_path: Path) -> None:
    """A registered family's tables come from what is staged; each reads only its survey's
    answers, a value it cannot read ("zero" as an int) is left empty, and every table ends
    with staged_at."""
    stage_surveys(tmp_path / "haul.db")
    registry = Registry()
    registry.add_family("survey_answers", answers_tables, doc="one table per survey")
    with StagingStore.open_readonly(tmp_path / "haul.db") as store:
        tables = {table.name: table for table in registry.tables_for(store)}
        assert sorted(tables) == ["survey_s1_answers", "survey_s2_answers"]
        support = tables["survey_s1_answers"]
        rows = list(
            flatten(support, store.iter_records("survey_answer", parent="s1"), ExportContext(store))
        )
    assert [column.name for column in support.all_columns] == [
        "answer_id", "answered_at", "email", "urgency", "staged_at",
    ]  # fmt: skip
    assert [row[:4] for row in rows] == [
        ("1", datetime(2024, 5, 1, 10, tzinfo=UTC), "a@b", 3),
        ("2", datetime(2024, 5, 2, 10, tzinfo=UTC), "c@d", None),
    ]
    assert all(isinstance(row[4], datetime) and row[4].tzinfo for row in rows)


def test_the_registry_refuses_a_name_twice() -> None:
    """Two tables (or a table and a family) under one name are a mistake, said at once."""
    registry = Registry()
    registry.add_table(Table("pages", "wiki_page", (identifier("id", "id", "id"),)))
    with pytest.raises(ValueError, match="already registered"):
        registry.add_table(Table("pages", "page", ()))
    with pytest.raises(ValueError, match="already registered"):
        registry.add_family("pages", lambda store: [], doc="")
    with pytest.raises(ValueError, match="appear twice"):
        Table("t", "e", (identifier("id", "", "id"), identifier("id", "", "key")))
    with pytest.raises(ValueError, match="is not one of"):
        Column("n", "decimal", "", lambda item: 1)  # type: ignore[arg-type]


def record(raw: dict, parent_id: str = "A-1") -> StagedRecord:
    return StagedRecord(
        "x", "A-1/1", parent_id, None, "h", None, raw, "2024-05-01T00:00:00.000+00:00"
    )


def test_each_format_writes_an_empty_table_with_its_header(tmp_path: Path) -> None:
    """No rows still makes a file with the header (CSV, XLSX) or the schema (Parquet)."""
    table = Table("notes", "note", (parent("issue_key", ""), as_json("tags", "", "tags")))
    for fmt in ("csv", "parquet", "xlsx"):
        writer = open_writer(fmt, tmp_path / f"notes.{fmt}", table)
        writer.write([])
        writer.close()
    assert list(pd.read_csv(tmp_path / "notes.csv").columns) == ["issue_key", "tags", "staged_at"]
    assert list(pd.read_parquet(tmp_path / "notes.parquet").columns) == [
        "issue_key",
        "tags",
        "staged_at",
    ]
    assert list(pd.read_excel(tmp_path / "notes.xlsx").columns) == [
        "issue_key",
        "tags",
        "staged_at",
    ]


def test_xlsx_continues_on_a_new_sheet_at_the_row_limit_and_cleans_text(tmp_path: Path) -> None:
    """Past the row limit, rows go on `<name> (2)`; characters XML forbids are dropped."""
    table = Table("comments", "comment", (value("text", "string", "", "text"),))
    writer = XlsxWriter(tmp_path / "c.xlsx", table, max_rows=3)
    writer.write([("a\x00b", None), ("c", None), ("d", None)])
    writer.close()
    sheets = pd.read_excel(tmp_path / "c.xlsx", sheet_name=None)
    assert list(sheets) == ["comments", "comments (2)"]
    assert sheets["comments"]["text"].tolist() + sheets["comments (2)"]["text"].tolist() == [
        "ab",
        "c",
        "d",
    ]
    assert sheet_title("grid: a/b [x]?" * 3) == "grid_ a_b _x__grid_ a_b _x__gri"  # 31 characters


RISKY = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tlead", "\rline", "-5", "+1.5", "plain", "a=b"]


def test_text_a_spreadsheet_would_run_is_text_and_numbers_stay_numbers(tmp_path: Path) -> None:
    """Text starting with =, +, -, @, tab or CR: a text cell in XLSX holding it exactly, a `'`
    before it in CSV; text that is just a number (`-5`) and number cells (-5.0) as they are;
    Parquet keeps the text raw."""
    table = Table("notes", "note", (
        value("text", "string", "", "text"), value("points", "float", "", "points"),
    ))  # fmt: skip
    rows = [(text, -5.0, None) for text in RISKY]  # staged_at last, empty here
    for fmt in ("csv", "parquet", "xlsx"):
        writer = open_writer(fmt, tmp_path / f"notes.{fmt}", table)
        writer.write(rows)
        writer.close()

    sheet = load_workbook(tmp_path / "notes.xlsx")["notes"]
    cells = list(sheet.iter_rows(min_row=2, max_col=2))
    # XML reads a bare CR as a line feed: the one change a reader of any XLSX would see
    assert [text.value for text, _ in cells] == [text.replace("\r", "\n") for text in RISKY]
    assert {text.data_type for text, _ in cells} == {"s"}  # none is a formula
    assert {(points.value, points.data_type) for _, points in cells} == {(-5, "n")}
    with (tmp_path / "notes.csv").open(encoding="utf-8", newline="") as file:
        written = [row[:2] for row in csv.reader(file)][1:]
    assert [text for text, _ in written] == [
        "'=1+1", "'+SUM(A1)", "'-2+3", "'@cmd", "'\tlead", "'\rline", "-5", "+1.5", "plain", "a=b",
    ]  # fmt: skip
    assert {points for _, points in written} == {"-5.0"}
    assert pd.read_parquet(tmp_path / "notes.parquet")["text"].tolist() == RISKY


def test_dated_names_then_times_then_counters() -> None:
    """The first export of a day is its date; later ones add the time, then a counter."""
    now = datetime(2024, 5, 1, 18, 30, 12, tzinfo=UTC)
    assert layout.dated_name(now, set()) == "2024-05-01"
    assert layout.dated_name(now, {"2024-05-01"}) == "2024-05-01T183012"
    assert layout.dated_name(now, {"2024-05-01", "2024-05-01T183012"}) == "2024-05-01T183012-2"


HAUL_MANIFEST = {"haul_version": "1.0", "files": [], "tables": {}}


def haul_folder(out: Path, name: str) -> Path:
    """A dated folder as an export leaves it: haul's manifest inside."""
    folder = out / name
    folder.mkdir()
    layout.write_json(folder / layout.MANIFEST, HAUL_MANIFEST)
    return folder


def test_prune_keeps_the_newest_and_what_latest_names(tmp_path: Path) -> None:
    """--keep N removes the oldest dated folders, never other files or the latest one."""
    for name in ("2024-05-01", "2024-05-02", "2024-05-02T101010", "2024-05-03"):
        haul_folder(tmp_path, name)
    (tmp_path / "notes").mkdir()
    layout.point_latest(tmp_path, "2024-05-03")
    removed = layout.prune(tmp_path, 2)
    assert [path.name for path in removed] == ["2024-05-01", "2024-05-02"]
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "2024-05-02T101010",
        "2024-05-03",
        "latest",
        "notes",
    ]
    assert layout.latest(tmp_path) == tmp_path / "2024-05-03"


def test_prune_leaves_dated_folders_haul_did_not_write(tmp_path: Path) -> None:
    """A dated folder without haul's manifest (a person's own, or another tool's manifest,
    or one that is not JSON) is never removed by --keep, however old; haul's own are."""
    for name in ("2024-01-01", "2024-01-02", "2024-01-03"):
        haul_folder(tmp_path, name)
    mine = tmp_path / "2023-12-31"
    mine.mkdir()
    (mine / "budget.xlsx").write_bytes(b"a person's file")
    other = tmp_path / "2023-12-30"
    other.mkdir()
    (other / layout.MANIFEST).write_text('{"tool": "something else", "files": []}')
    broken = tmp_path / "2023-12-29"
    broken.mkdir()
    (broken / layout.MANIFEST).write_text("not json")
    layout.point_latest(tmp_path, "2024-01-03")

    removed = layout.prune(tmp_path, 1)

    assert [path.name for path in removed] == ["2024-01-01", "2024-01-02"]
    assert (mine / "budget.xlsx").read_bytes() == b"a person's file"
    assert other.is_dir() and broken.is_dir()


def test_a_name_too_long_for_the_file_system_is_cut_and_kept_apart(tmp_path: Path) -> None:
    """A table's name past 255 bytes (Cyrillic is two a letter) becomes a file name the file
    system takes, temporary `.part` form included; two names alike but for their end stay
    apart; a short name is kept as it is."""
    long_a = "wiki_grid_" + "квартальный_отчёт_" * 20 + "a_1234abcd"
    long_b = "wiki_grid_" + "квартальный_отчёт_" * 20 + "b_1234abcd"
    short = layout.file_name("issues", ".csv")
    cut_a, cut_b = layout.file_name(long_a, ".parquet"), layout.file_name(long_b, ".parquet")

    assert short == "issues.csv"
    assert (
        cut_a != cut_b and cut_a.startswith("wiki_grid_квартальный") and cut_a.endswith(".parquet")
    )
    for name in (cut_a, cut_b):
        assert len(f".{name}.part".encode()) <= 255
        (tmp_path / f".{name}.part").write_text("x")  # the file system takes it
        (tmp_path / name).write_text("x")


def test_a_failed_block_leaves_neither_file_nor_folder(tmp_path: Path) -> None:
    """atomic_file and building remove what they made when the block raises."""
    with (
        pytest.raises(OSError),
        layout.building(tmp_path) as folder,
        layout.atomic_file(folder / "issues.csv") as partial,
    ):
        partial.write_text("half")
        raise OSError(28, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def config_with(tmp_path: Path, export: dict | None = None) -> object:
    data = {
        "source": {"tracker_url": "https://t.example/v3", "org_id": "1", "token_env": "T"},
        "scope": {"queues": ["TEST"]},
        "staging": {"path": "haul.db"},
    }
    if export is not None:
        data["export"] = export
    return parse_config(data, base_dir=tmp_path)


def test_options_win_over_the_config_and_bad_ones_exit_2(tmp_path: Path) -> None:
    """[export] gives the defaults; each option overrides; what cannot be used is refused."""
    config = config_with(tmp_path, {"out": "exports", "format": "xlsx", "keep": 7})
    request = ExportRequest.from_options(config)  # type: ignore[arg-type]
    assert (request.out, request.format, request.keep) == (tmp_path / "exports", "xlsx", 7)
    request = ExportRequest.from_options(config, fmt="csv", keep=2, out=tmp_path / "o")  # type: ignore[arg-type]
    assert (request.out, request.format, request.keep) == (tmp_path / "o", "csv", 2)
    beside = ExportRequest.from_options(config_with(tmp_path))  # type: ignore[arg-type]
    assert beside.out == tmp_path / "exports"  # no --out, no [export] out: beside the config
    for options, says in (
        ({"out": tmp_path, "healthcheck_url": "ftp://x"}, "--healthcheck-url"),
        ({"out": tmp_path, "since": "soon"}, "--since"),
    ):
        with pytest.raises(ExportOptionError, match=says) as caught:
            ExportRequest.from_options(config_with(tmp_path), **options)  # type: ignore[arg-type]
        assert caught.value.exit_code == 2


def test_since_compares_in_the_stores_own_form() -> None:
    """A date is midnight UTC; an instant in any zone becomes UTC with milliseconds."""
    assert since_instant("2024-05-01") == "2024-05-01T00:00:00.000+00:00"
    assert since_instant("2024-05-01T03:00:00+03:00") == "2024-05-01T00:00:00.000+00:00"
    assert date(2024, 5, 1).isoformat() in since_instant("2024-05-01T12:00")


def test_since_last_refuses_a_manifest_it_cannot_read(tmp_path: Path) -> None:
    """A damaged manifest under `latest` is an option error (exit 2), not a guess."""
    (tmp_path / "2024-05-01").mkdir()
    (tmp_path / "2024-05-01" / "manifest.json").write_text("{half")
    layout.point_latest(tmp_path, "2024-05-01")
    with pytest.raises(ExportOptionError, match="not a haul manifest") as caught:
        layout.latest_manifest(tmp_path)
    assert caught.value.exit_code == 2
