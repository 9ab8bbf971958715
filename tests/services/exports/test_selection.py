"""What an export takes of a study: each environment's language instruction."""

from __future__ import annotations

from server.services.exports import selection
from tests.factories import spec_dict


def test_the_language_instruction_is_the_environments_never_the_studys_page(factory) -> None:  # type: ignore[no-untyped-def]
    """The study's instructions are the Markdown page a participant reads first; an
    environment without instructions of its own has none to export."""
    spec = {**spec_dict("Two games"), "instructions": "# Welcome\n\n- **Arrows**: move"}
    plain = {**spec["environments"][0], "id": "plain", "name": "Plain"}
    told = {**plain, "id": "told", "name": "Told", "instructions": "  Lift the cube.  "}
    study = factory.study(factory.user(), {**spec, "environments": [plain, told]})
    assert selection.instructions_of(study) == {"plain": "", "told": "Lift the cube."}
