"""Study files: YAML text <-> validated :class:`StudySpec`, and the JSON Schema of the format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from server.errors import Invalid, TooLarge, validation_detail
from server.study_spec import StudySpec, char_name, control_char_problem, json_data_problem


def parse_spec(data: Any, prefix: tuple[str | int, ...] = ("spec",)) -> StudySpec:
    """Validate a decoded document as a study spec, raising :class:`Invalid` with field paths."""
    try:
        return StudySpec.model_validate(data)
    except ValidationError as exc:
        raise Invalid(
            "The study spec is not valid.",
            detail=validation_detail(exc.errors(include_url=False, include_input=False), prefix),
        ) from exc


# Study files are a few KiB of hand-written text; these bounds keep a hostile one cheap.
MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 32


class _StudyLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and nesting deeper than :data:`MAX_DEPTH`.

    Aliases are refused outright rather than counted: study files never need them (the
    exporter writes none), and without them a document's tree is no larger than its text,
    so nothing after parsing (validation, storage, JSON answers) can be made to blow up.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        mark = event.start_mark if isinstance(event.start_mark, yaml.Mark) else None
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                f"alias *{event.anchor} is not allowed in study files (write the value out)",
                mark,
            )
        # PyYAML composes recursively: without this bound a deep file ends in RecursionError.
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # Python refuses some YAML values (a 5,000-digit integer, 2001-13-45): say where.
        try:
            return super().construct_object(node, deep)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(None, None, str(exc), node.start_mark) from exc


def too_large() -> TooLarge:
    """The 413 for a study file over :data:`MAX_FILE_BYTES`."""
    return TooLarge(f"The study file is too large (limit {MAX_FILE_BYTES} bytes).")


def load_bytes(raw: bytes) -> StudySpec:
    """Parse a study file's bytes (UTF-8), as uploaded."""
    if len(raw) > MAX_FILE_BYTES:
        raise too_large()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Invalid(
            "The study file must be UTF-8 text.",
            detail=[{"loc": ["body"], "msg": "not UTF-8", "type": "encoding"}],
        ) from exc
    return load_yaml(text)


def _yaml_problem(exc: yaml.YAMLError, text: str) -> str:
    """What is wrong and at which line and column."""
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML refuses: no mark
        before = text[: exc.position]
        line, column = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        return f"control character {char_name(char)} is not allowed at line {line}, column {column}"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"{getattr(exc, 'problem', None) or 'malformed YAML'}{where}"


def load_yaml(text: str) -> StudySpec:
    """Parse a study file's text, within the size, alias and depth limits."""
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise too_large()
    loader: _StudyLoader | None = None
    try:
        # The reader checks every character as it is built: build it inside the ``try``.
        loader = _StudyLoader(text)
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise Invalid(
            "The study file is not valid YAML.",
            detail=[{"loc": ["body"], "msg": _yaml_problem(exc, text), "type": "yaml"}],
        ) from exc
    finally:
        if loader is not None:
            loader.dispose()
    if not isinstance(data, dict):
        raise Invalid(
            "The study file must be a mapping.",
            detail=[{"loc": ["body"], "msg": "expected a mapping at the top", "type": "yaml"}],
        )
    return parse_spec(data, prefix=())


class _StudyDumper(yaml.SafeDumper):
    """Writes multi-line text (Markdown instructions) as ``|`` blocks, as people write it."""

    def ignore_aliases(self, data: Any) -> bool:
        # The loader refuses aliases: a shared value is written out each time it appears.
        return True


def _str_block(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # YAML cannot keep trailing spaces in a block; such text stays quoted, unchanged.
    if "\n" in value and not any(line != line.rstrip() for line in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_StudyDumper.add_representer(str, _str_block)


def spec_data(spec: StudySpec) -> dict[str, Any]:
    """The values the designer set (even one equal to its default), as JSON data.

    What the database stores and files hold: a value left out stays out, so a later change
    of a default reaches it, and one written out stays written, even when equal to today's.
    """
    data = spec.model_dump(mode="json", exclude_unset=True)
    for env, model in zip(data.get("environments", []), spec.environments, strict=True):
        # The discriminator is a default too; files always name it.
        env["source"] = {"kind": model.source.kind, **env["source"]}
    return data


def render_yaml(data: dict[str, Any]) -> str:
    """YAML text of a mapping of JSON data, multi-line text as ``|`` blocks, keys in order."""
    return yaml.dump(data, Dumper=_StudyDumper, sort_keys=False, allow_unicode=True, width=100)


def dump_yaml(spec: StudySpec) -> str:
    """A study file's text: the values set (see :func:`spec_data`), keys in the model's order."""
    return render_yaml(spec_data(spec))


def render_form(data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The study file of the editor's form data, and its problems (empty when it is valid).

    A valid study is written as :func:`dump_yaml` writes it; one the designer has not
    finished (a name still empty) is written as given, so the YAML view can always show it.
    """
    where: tuple[str | int, ...] = ()
    problem = json_data_problem(data, MAX_DEPTH, MAX_FILE_BYTES)
    if problem is None and (found := control_char_problem(data)) is not None:
        where, problem = found
    if problem is not None:
        raise Invalid(
            "The study is not plain JSON data.",
            detail=[{"loc": ["body", "spec", *where], "msg": problem, "type": "value_error"}],
        )
    try:
        spec = StudySpec.model_validate(data)
    except ValidationError as exc:
        detail = validation_detail(exc.errors(include_url=False, include_input=False), ())
        return render_yaml(data), detail
    return dump_yaml(spec), []


def load_file(path: Path) -> StudySpec:
    """Read and validate one study file (the CLI, the sample studies)."""
    path = Path(path)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise too_large()
    return load_bytes(path.read_bytes())


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
    target = Path(__file__).resolve().parents[3] / "docs" / "study-schema.json"
    target.write_text(json_schema_text(), encoding="utf-8")
    print(f"wrote {target}")
