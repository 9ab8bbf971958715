"""Study files: every sample round-trips through YAML and through the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.services import study_files
from server.study_spec import StudySpec

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "studies").glob("*.yaml"))


def test_there_are_samples_for_the_default_suites():
    sources = {
        env.source.id for path in SAMPLES for env in study_files.load_file(path).environments
    }
    assert {"CartPole-v1", "LunarLander-v3", "ALE/Breakout-v5"} <= sources
    assert any(s.startswith("MiniGrid-") for s in sources)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_yaml_round_trip(path):
    spec = study_files.load_file(path)
    again = study_files.load_yaml(study_files.dump_yaml(spec))
    assert again == spec


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_api_round_trip(path, factory):
    client = factory.client(factory.user())
    created = client.post(
        "/api/studies/import",
        content=path.read_text(),
        headers={"Content-Type": "application/yaml"},
    )
    assert created.status_code == 201, created.text
    exported = client.get(f"/api/studies/{created.json()['id']}/export")
    assert exported.status_code == 200
    assert study_files.load_yaml(exported.text) == study_files.load_file(path)


def test_committed_json_schema_is_current():
    committed = (ROOT / "docs" / "study-schema.json").read_text()
    assert committed == study_files.json_schema_text(), (
        "docs/study-schema.json is stale: run `.venv/bin/python -m server.services.study_files`"
    )


def test_schema_describes_the_model():
    schema = json.loads(study_files.json_schema_text())
    assert schema["title"] == "RLDS Studio study file"
    assert set(schema["required"]) == {"name", "environments"}
    StudySpec.model_validate(
        {
            "name": "x",
            "environments": [
                {"id": "a", "name": "A", "source": {"kind": "dm_env", "factory": "pkg.mod:make"}}
            ],
        }
    )


def test_multiline_text_is_written_as_a_block_and_kept_exactly():
    spec = study_files.load_file(ROOT / "studies" / "cartpole.yaml")
    text = study_files.dump_yaml(spec)
    assert "instructions: |\n  # Balance the pole\n" in text
    odd = spec.model_copy(update={"instructions": "line with trailing space \nnext"})
    assert study_files.load_yaml(study_files.dump_yaml(odd)).instructions == odd.instructions
