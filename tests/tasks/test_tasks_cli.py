"""``colbench tasks``: the command a user runs to inspect and export task sets."""

from __future__ import annotations

import json

from colbench_gym.cli import main
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_task
from colbench_gym.tasks.loaders import load_tasks


def _source_rows(out: str) -> dict[tuple[str, str], str]:
    """``(spec, kind) -> the rest of the line`` of `colbench tasks sources`."""
    rows = {}
    for line in out.strip().splitlines():
        spec, kind, rest = line.split(None, 2)
        rows[(spec, kind)] = rest
    return rows


def test_sources_lists_every_source_of_the_kinds_table_and_the_shipped_files(capsys):
    """Embedded sets with their sizes, every generator of every kind with every split of it
    (collab:train|val|test included, as the README uses them), each resolvable by --tasks."""
    from colbench_gym.tasks.kinds import KINDS
    from colbench_gym.tasks.sources import generator_splits, resolve_task_source

    assert main(["tasks", "sources"]) == 0
    rows = _source_rows(capsys.readouterr().out)
    for kind, split in (("backend", "test"), ("backend", "train"), ("frontend", "test"), ("frontend", "train")):
        assert rows[(f"embedded:{split}", kind)].startswith(f"{len(load_embedded(kind, split))} tasks")
    for split in ("train", "val", "test"):
        assert rows[(f"collab:{split}", "backend")].startswith("unbounded  Procedural backend tasks where "
                                                             "collaboration pays")
    expected = {(f"{g}:{s}", k.name) for k in KINDS.values() for g in k.generators for s in generator_splits(k.name, g)}
    assert expected <= set(rows) and len(rows) == len(expected) + 4
    for spec, kind in rows:
        assert resolve_task_source(spec, kind).name == spec
    assert main(["tasks", "sources", "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert {(r["spec"], r["kind"]) for r in listed} == set(rows)
    assert {r["size"] for r in listed if r["spec"].startswith("collab:")} == {None}


def test_a_generator_added_to_the_kinds_table_is_listed_with_no_other_change(monkeypatch, capsys):
    """How `collab-multi:*` (or any new source) reaches the listing: one entry in KINDS."""
    import dataclasses

    from colbench_gym.tasks import kinds

    backend = dataclasses.replace(kinds.BACKEND, generators={**kinds.BACKEND.generators,
                                                             "collab-demo": "colbench_gym.tasks.collab_generator:"
                                                                            "generate_collab_task"})
    monkeypatch.setitem(kinds.KINDS, "backend", backend)
    assert main(["tasks", "sources"]) == 0
    rows = _source_rows(capsys.readouterr().out)
    assert {s for s, k in rows if s.startswith("collab-demo:")} == {"collab-demo:train", "collab-demo:test",
                                                                    "collab-demo:val"}
    assert main(["tasks", "list", "--tasks", "collab-demo:val", "--limit", "1"]) == 0
    assert capsys.readouterr().out.startswith("     0  ")


def test_list_prints_one_line_per_task(capsys):
    assert main(["tasks", "list", "--tasks", "embedded:train"]) == 0
    lines = capsys.readouterr().out.splitlines()
    tasks = load_embedded("backend", "train")
    assert len(lines) == len(tasks)
    assert tasks[0].task_id in lines[0]


def test_list_json_of_generated_tasks_defaults_to_a_page(capsys):
    assert main(["tasks", "list", "--tasks", "generated:test", "--start", "5", "--limit", "3", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in rows] == [5, 6, 7]
    assert rows[0]["task_id"] == generate_backend_task(5, "test").task_id
    assert main(["tasks", "list", "--tasks", "generated:train"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 20


def test_show_hides_the_reference_unless_asked(capsys):
    task = generate_backend_task(11, "train")
    assert main(["tasks", "show", "11", "--tasks", "generated:train"]) == 0
    out = capsys.readouterr().out
    assert task.problem_description in out and task.ground_truth.splitlines()[1] not in out
    assert main(["tasks", "show", "11", "--tasks", "generated:train", "--reveal"]) == 0
    out = capsys.readouterr().out
    assert task.ground_truth.strip() in out and task.test_cases["test10"] in out


def test_export_writes_an_official_jsonl_that_the_loader_reads(tmp_path, capsys):
    path = tmp_path / "out" / "train.jsonl"
    assert main(["tasks", "export", "--tasks", "generated:train", "--count", "25", "--start", "100", "-o", str(path)]) == 0
    assert "wrote 25 backend tasks" in capsys.readouterr().err
    loaded = load_tasks(path)
    assert loaded == [generate_backend_task(i, "train") for i in range(100, 125)]
    assert not [p for p in path.parent.iterdir() if p.name != "train.jsonl"]  # no temp file left behind
    # refuses to clobber, overwrites with --force
    assert main(["tasks", "export", "--tasks", "embedded:test", "-o", str(path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["tasks", "export", "--tasks", "embedded:test", "-o", str(path), "--force"]) == 0
    assert load_tasks(path) == load_embedded("backend", "test")


def test_export_to_stdout(capsys):
    assert main(["tasks", "export", "--tasks", "embedded:test", "--count", "2", "-o", "-"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records == [t.to_record() for t in load_embedded("backend", "test")[:2]]


def test_bad_requests_get_clear_errors(capsys, tmp_path):
    assert main(["tasks", "export", "--tasks", "generated:train", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "unbounded: give --count N" in capsys.readouterr().err
    assert main(["tasks", "show", "999"]) == 2
    assert "out of range for embedded:test" in capsys.readouterr().err
    assert main(["tasks", "list", "--tasks", "embedded:dev"]) == 2
    assert "available for backend" in capsys.readouterr().err
    assert main(["tasks", "list", "--start", "29", "--limit", "5"]) == 2
    assert "runs past the end" in capsys.readouterr().err
