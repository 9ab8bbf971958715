"""Study files: every sample round-trips through YAML and through the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from server.errors import Invalid, TooLarge
from server.services.studies import study_files
from server.study_spec import StudySpec

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = sorted((ROOT / "studies").glob("*.yaml"))


def test_there_are_samples_for_the_default_suites():
    sources = {
        env.source.id for path in SAMPLES for env in study_files.load_file(path).environments
    }
    assert {"CartPole-v1", "LunarLander-v3", "ALE/Breakout-v5"} <= sources
    assert any(s.startswith("MiniGrid-") for s in sources)


def test_the_robot_sample_says_what_it_needs():
    """The PickCube sample runs in the robotics runtime, which `make run` does not install:
    its description names the one command that does."""
    spec = study_files.load_file(ROOT / "studies" / "pick-cube.yaml")
    assert [env.source.id for env in spec.environments] == ["RLDSStudio/PickCube-v0"]
    assert "rlds-studio runtimes install robotics" in (spec.description or "")


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
        "docs/study-schema.json is stale: run "
        "`.venv/bin/python -m server.services.studies.study_files`"
    )


def test_schema_describes_the_model():
    schema = json.loads(study_files.json_schema_text())
    assert schema["title"] == "RLDS Studio study file"
    assert set(schema["required"]) == {"name"}  # environments: required of play studies
    assert schema["properties"]["kind"]["enum"] == ["play", "feedback"]
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


# --- files that must not freeze or crash the server -----------------------------------------
def billion_laughs(levels: int = 6) -> str:
    """A short file whose aliases expand to 10**levels strings (in an env's kwargs)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    body = "\n".join("        " + line for line in lines)
    return (
        "name: Laughs\nenvironments:\n  - id: a\n    name: A\n"
        f"    source:\n      kind: gymnasium\n      id: CartPole-v1\n      kwargs:\n{body}\n"
    )


def nested(depth: int) -> str:
    """A study file whose env kwargs hold lists nested ``depth`` deep."""
    return (
        "name: Deep\nenvironments:\n  - id: a\n    name: A\n"
        "    source: {kind: gymnasium, id: CartPole-v1, kwargs: {k: "
        f"{'[' * depth}1{']' * depth}}}}}\n"
    )


def _refusal(text: str) -> str:
    with pytest.raises(Invalid) as caught:
        study_files.load_yaml(text)
    return " ".join(err["msg"] for err in caught.value.detail)


def test_billion_laughs_is_refused_at_its_first_alias():
    text = billion_laughs()
    assert len(text) < 1024
    message = _refusal(text)
    assert "alias" in message and "line 10" in message, message


def test_a_single_alias_is_refused_too():
    text = (
        "name: x\nenvironments:\n  - id: a\n    name: A\n"
        "    source: {kind: gymnasium, id: CartPole-v1, kwargs: &k {a: 1}}\n"
        "  - id: b\n    name: B\n    source: {kind: gymnasium, id: CartPole-v1, kwargs: *k}\n"
    )
    assert "alias *k" in _refusal(text)


@pytest.mark.parametrize("depth", [40, 10_000])
def test_deep_nesting_is_refused_with_a_message(depth):
    message = _refusal(nested(depth))
    assert f"nested deeper than {study_files.MAX_DEPTH} levels" in message
    assert "line 5" in message


def test_nesting_within_the_limit_loads():
    # kwargs may nest only a few levels deep (the spec's own limit): within it, the file loads
    spec = study_files.load_yaml(nested(4))
    assert spec.environments[0].source.kwargs == {"k": [[[[1]]]]}
    # deeper, yet within the parser's limit: the spec's own check names the kwargs, the
    # parser's depth limit is not what refuses it
    message = _refusal(nested(study_files.MAX_DEPTH - 8))
    assert "nested deeper than 8 levels" in message
    assert f"deeper than {study_files.MAX_DEPTH}" not in message


def test_a_file_over_the_size_limit_is_refused_before_parsing():
    text = "# " + "x" * study_files.MAX_FILE_BYTES + "\nname: [unclosed"
    with pytest.raises(TooLarge) as caught:
        study_files.load_yaml(text)
    assert f"{study_files.MAX_FILE_BYTES} bytes" in caught.value.message


@pytest.mark.parametrize(
    "value,fragment",
    [("1" * 5000, "line 3"), ("2001-13-45", "month must be in 1..12")],
)
def test_values_python_cannot_build_are_invalid_not_a_crash(value, fragment):
    text = f"name: x\nenvironments: []\nseeds: [{value}]\n"
    assert fragment in _refusal(text)


def test_exported_files_never_use_aliases():
    source = {"kind": "gymnasium", "id": "CartPole-v1", "kwargs": {"render_fps": 30}}
    spec = StudySpec.model_validate(
        {
            "name": "Shared",
            "environments": [{"id": key, "name": key, "source": source} for key in ("a", "b")],
        }
    )
    text = study_files.dump_yaml(spec)
    assert "&" not in text and "*" not in text
    assert study_files.load_yaml(text) == spec
