"""Study files: YAML text <-> validated :class:`StudySpec`, and the JSON Schema of the format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from server.errors import Invalid, validation_detail
from server.study_spec import StudySpec


def parse_spec(data: Any, prefix: tuple[str | int, ...] = ("spec",)) -> StudySpec:
    """Validate a decoded document as a study spec, raising :class:`Invalid` with field paths."""
    try:
        return StudySpec.model_validate(data)
    except ValidationError as exc:
        raise Invalid(
            "The study spec is not valid.",
            detail=validation_detail(exc.errors(include_url=False, include_input=False), prefix),
        ) from exc


def load_yaml(text: str) -> StudySpec:
    """Parse a study file's text."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise Invalid(
            "The study file is not valid YAML.",
            detail=[{"loc": ["body"], "msg": f"{problem}{where}", "type": "yaml"}],
        ) from exc
    if not isinstance(data, dict):
        raise Invalid(
            "The study file must be a mapping.",
            detail=[{"loc": ["body"], "msg": "expected a mapping at the top", "type": "yaml"}],
        )
    return parse_spec(data, prefix=())


class _StudyDumper(yaml.SafeDumper):
    """Writes multi-line text (Markdown instructions) as ``|`` blocks, as people write it."""


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # YAML cannot keep trailing spaces in a block; such text stays quoted, unchanged.
    if "\n" in value and not any(line != line.rstrip() for line in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_StudyDumper.add_representer(str, _str_block)


def dump_yaml(spec: StudySpec) -> str:
    """A study file's text: defaults left out, keys in the model's order."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    for env, model in zip(data["environments"], spec.environments, strict=True):
        # The discriminator is a default too; files always name it.
        env["source"] = {"kind": model.source.kind, **env["source"]}
    return yaml.dump(data, Dumper=_StudyDumper, sort_keys=False, allow_unicode=True, width=100)


def load_file(path: Path) -> StudySpec:
    """Read and validate one study file."""
    return load_yaml(Path(path).read_text(encoding="utf-8"))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of study files (``docs/study-schema.json``)."""
    schema = StudySpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "RLDS Studio study file"
    return schema


def json_schema_text() -> str:
    """The schema as the text committed in docs/."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    # Regenerates docs/study-schema.json.
    target = Path(__file__).resolve().parents[2] / "docs" / "study-schema.json"
    target.write_text(json_schema_text(), encoding="utf-8")
    print(f"wrote {target}")
