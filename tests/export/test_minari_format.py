"""Minari spaces from dm_env specs, and the specs Minari cannot hold refused by field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dm_env import specs

from server.export import ExportError, ExportOptions, export_dataset
from server.export.episode import EnvSpecs
from server.export.formats.minari.dataset import check_specs, dataset_id, space_of
from tests.export.conftest import episode_input
from tests.export.recordings import Recording

REWARD = specs.Array((), np.float64)


def test_spaces_follow_the_specs() -> None:
    obs = {
        "pos": specs.BoundedArray((2,), np.float32, -1.0, [1.0, 2.0]),
        "free": specs.Array((), np.float64),
        "count": specs.Array((3,), np.int16),
        "dir": specs.DiscreteArray(4),
    }
    spaces = check_specs(EnvSpecs(obs, specs.BoundedArray((2,), np.int64, 0, 2), REWARD, REWARD))
    sub = spaces["observation_space"]["subspaces"]
    assert sub["pos"] == {
        "type": "Box",
        "dtype": "float32",
        "shape": [2],
        "low": [-1.0, -1.0],
        "high": [1.0, 2.0],
    }
    assert sub["free"]["low"] == -np.inf and sub["free"]["shape"] == []
    assert sub["count"]["low"] == [-32768] * 3 and sub["count"]["high"] == [32767] * 3
    assert sub["dir"] == {"type": "Discrete", "dtype": "int64", "start": 0, "n": 4}
    assert spaces["action_space"]["low"] == [0, 0] and spaces["action_space"]["high"] == [2, 2]
    assert dataset_id("my_ds", "2.0.1") == "my_ds-v2"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"ok": specs.Array((), np.float32), "flag": specs.Array((2,), bool)}, "observation/flag"),
        ({"text": specs.Array((), object)}, "observation/text"),
        ((specs.Array((), np.float32),), "observation"),
    ],
)
def test_specs_minari_cannot_hold_name_the_field(spec: object, field: str) -> None:
    with pytest.raises(ExportError, match=f"field {field}:"):
        space_of(spec, "observation")


def test_vector_reward_is_refused() -> None:
    obs = specs.Array((2,), np.float32)
    with pytest.raises(ExportError, match="field reward:"):
        check_specs(EnvSpecs(obs, obs, specs.Array((2,), np.float64), REWARD))


def test_layout_and_metadata(recordings: dict[str, list[Recording]], tmp_path: Path) -> None:
    recs = recordings["cartpole"]
    options = ExportOptions(name="ds", format="minari", study="S")
    result = export_dataset([episode_input(r, tags=("x",)) for r in recs], options, tmp_path / "o")
    data = result.path / "ds-v1" / "data"
    meta = json.loads((data / "metadata.json").read_text())
    assert meta["dataset_id"] == "ds-v1" and meta["data_format"] == "arrow"
    assert meta["total_episodes"] == 3
    assert meta["total_steps"] == sum(r.num_steps - 1 for r in recs)
    assert json.loads(meta["action_space"])["type"] == "Discrete"
    for i, r in enumerate(recs):
        ep = json.loads((data / str(i) / "metadata.json").read_text())
        assert (ep["id"], ep["episode_id"], ep["tags"]) == (i, r.episode_id, ["x"])
        assert (data / str(i) / "part-0.arrow").is_file()
    card = (result.path / "README.md").read_text()
    assert 'minari.load_dataset("ds-v1")' in card
    assert not list(result.path.rglob("*.hdf5"))
    # docs/export.md says what is written: Arrow files, never an HDF5 file to install for
    doc = (Path(__file__).resolve().parents[2] / "docs" / "export.md").read_text()
    assert "main_data.hdf5" not in doc and "minari[hdf5]" not in doc
    assert doc.count('pip install "minari[arrow]"') >= 1
