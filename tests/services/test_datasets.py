"""Datasets on the real database and real recordings: sources refused when not the
designer's own, the split rule (seeded, stratified, fractions by largest remainder, no
participant in two splits) and the preview's counts across two studies."""

from __future__ import annotations

from collections import Counter

import pytest

from server.core.security import salted_hash
from server.errors import Invalid
from server.models import Dataset
from server.schemas.datasets import DatasetCreate, DatasetUpdate
from server.services.datasets import datasets, preview, splits
from server.services.datasets.splits import Unit
from tests.api.routes.recorded import Inserter, dataset_studies, two_env_spec
from tests.factories import spec_dict

F_811 = {"train": 0.8, "validation": 0.1, "test": 0.1}


def _units(n: int, strata: int = 1, size: int = 1) -> list[Unit]:
    return [Unit(f"u{i:03d}", (f"env{i % strata}", ""), size) for i in range(n)]


# --- the split rule ------------------------------------------------------------------------
def test_the_same_seed_splits_the_same_way_and_another_seed_otherwise() -> None:
    units = _units(60, strata=3)
    first = splits.assign(units, F_811, seed=7)
    assert splits.assign(list(reversed(units)), F_811, seed=7) == first  # input order is moot
    other = splits.assign(units, F_811, seed=8)
    assert Counter(other.values()) == Counter(first.values())  # the same sizes...
    assert other != first  # ...other episodes in them


def test_fractions_are_met_exactly_by_largest_remainder_for_episodes() -> None:
    assert splits.targets(10, F_811) == {"train": 8, "validation": 1, "test": 1}
    # 7 x (0.5, 0.25, 0.25) = 3.5, 1.75, 1.75: floors 3, 1, 1; the two left go to the
    # largest remainders (0.75, 0.75 before 0.5), in split order
    assert splits.targets(7, {"train": 0.5, "validation": 0.25, "test": 0.25}) == {
        "train": 3, "validation": 2, "test": 2,
    }  # fmt: skip
    for n in (1, 2, 3, 9, 10, 101):
        got = Counter(splits.assign(_units(n, strata=4), F_811, seed=1).values())
        assert {s: got[s] for s in splits.SPLITS} == splits.targets(n, F_811)


def test_a_split_with_fraction_zero_gets_nothing() -> None:
    got = splits.assign(_units(25, strata=2, size=3), {"train": 0.6, "validation": 0.4,
                                                      "test": 0.0}, seed=3)  # fmt: skip
    assert set(got.values()) == {"train", "validation"}


def test_each_stratum_is_split_near_the_fractions() -> None:
    units = _units(60, strata=3)  # 20 per (environment, task)
    got = splits.assign(units, F_811, seed=11)
    per = Counter((u.stratum[0], got[u.key]) for u in units)
    for env in ("env0", "env1", "env2"):
        assert abs(per[(env, "train")] - 16) <= 1
        assert 1 <= per[(env, "validation")] <= 3 and 1 <= per[(env, "test")] <= 3
    # unstratified, one environment could take the validation set whole; here none does


def test_participants_are_split_as_closely_as_their_episode_counts_allow() -> None:
    units = [Unit(f"p{i}", ("env", ""), size) for i, size in enumerate([9, 1, 1, 3, 2, 2, 1, 1])]
    got = splits.assign(units, F_811, seed=5)
    per_split = Counter()
    for u in units:
        per_split[got[u.key]] += u.size
    assert sum(per_split.values()) == 20
    assert set(got.values()) == set(splits.SPLITS)  # every split has someone
    assert per_split["validation"] <= 4 and per_split["test"] <= 4
    assert splits.dominant_stratum([("b", ""), ("a", "x"), ("b", ""), ("a", "x")]) == ("a", "x")


# --- sources ------------------------------------------------------------------------------
def test_another_designers_study_and_a_study_twice_are_refused_at_the_field(factory, db) -> None:  # type: ignore[no-untyped-def]
    me, other = factory.user(), factory.user()
    mine, theirs = factory.study(me), factory.study(other)
    with pytest.raises(Invalid) as refused:
        body = {"name": "d", "sources": [{"study_id": mine.id}, {"study_id": theirs.id}]}
        datasets.create_dataset(db, me.id, DatasetCreate.model_validate(body))
    assert refused.value.detail == [
        {
            "loc": ["body", "sources", 1, "study_id"],
            "msg": f"there is no study {theirs.id} of yours",
        }
    ]
    with pytest.raises(Invalid) as twice:
        datasets.create_dataset(db, me.id, DatasetCreate.model_validate(
            {"name": "d", "sources": [{"study_id": mine.id}, {"study_id": mine.id}]}))  # fmt: skip
    assert twice.value.detail[0]["loc"] == ["body", "sources", 1, "study_id"]
    made = datasets.create_dataset(
        db, me.id, DatasetCreate.model_validate({"name": "d", "sources": [{"study_id": mine.id}]})
    )
    with pytest.raises(Invalid) as taken:
        datasets.create_dataset(db, me.id, DatasetCreate.model_validate(
            {"name": " d ", "sources": [{"study_id": mine.id}]}))  # fmt: skip
    assert taken.value.detail[0]["loc"] == ["body", "name"]
    with pytest.raises(Invalid):
        datasets.update_dataset(db, made, DatasetUpdate.model_validate(
            {"sources": [{"study_id": theirs.id}]}))  # fmt: skip
    db.refresh(made)
    assert made.sources[0]["study_id"] == mine.id
    assert db.query(Dataset).count() == 1


# --- the preview --------------------------------------------------------------------------
def _dataset(db, owner, studies, split) -> Dataset:  # type: ignore[no-untyped-def]
    body = {"name": "set", "sources": [{"study_id": s.id} for s in studies], "split": split}
    return datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(body))


def test_a_participant_split_across_two_studies_keeps_each_person_in_one_split(
    factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    split = {"by": "participant", "train": 0.5, "validation": 0.25, "test": 0.25, "seed": 4}
    dataset = _dataset(db, owner, [pilot, main], split)
    out = preview.preview(db, dataset, settings.secret_key, settings.data_root)

    # the excluded episode of worker-1 is left out: four episodes of three people
    assert out["episodes"] == 4 and out["participants"] == 3 and out["message"] is None
    assert out["steps"] == sum(recorded["cartpole"][i].num_steps for i in (0, 2, 3, 4))
    agent = {w: salted_hash(settings.secret_key, w) for w in ("worker-1", "worker-2", "worker-3")}
    by_agent = {r["participant"]: r for r in out["by_participant"]}
    assert set(by_agent) == set(agent.values())  # pseudonymous, as exports write them
    assert by_agent[agent["worker-1"]]["episodes"] == 2  # one in each study
    ids = [r["episode_id"] for r in out["assignments"]]
    assert ids == [recorded["cartpole"][i].episode_id for i in (0, 2, 3, 4)]  # study, start
    split_of = {r["episode_id"]: r["split"] for r in out["assignments"]}
    w1 = {split_of[recorded["cartpole"][i].episode_id] for i in (0, 4)}
    assert w1 == {by_agent[agent["worker-1"]]["split"]}  # worker-1's two studies: one split
    assert sum(s["episodes"] for s in out["splits"]) == 4
    assert [s["participants"] for s in out["splits"]] == [
        len({r["participant"] for r in out["by_participant"] if r["split"] == name})
        for name in splits.SPLITS
    ]
    studies_ = {r["label"]: r for r in out["studies"]}
    assert studies_["Pilot"]["episodes"] == 2 and studies_["Main"]["episodes"] == 2
    tasks = {r["label"]: r["episodes"] for r in out["tasks"]}
    assert tasks == {"red": 1, "blue": 1, "no task": 2}
    assert out["environments"][0]["key"] == "cartpole"
    assert sum(out["environments"][0]["per_split"].values()) == 4
    # the same answer again (a seeded rule), and by episode every episode has one split
    assert preview.preview(db, dataset, settings.secret_key, settings.data_root) == out
    datasets.update_dataset(db, dataset, DatasetUpdate.model_validate(
        {"split": {**split, "by": "none"}}))  # fmt: skip
    none = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert [s["episodes"] for s in none["splits"]] == [4, 0, 0]


def test_a_sources_filter_and_excluded_episodes_when_asked(factory, db, settings, recorded) -> None:  # type: ignore[no-untyped-def]
    owner, pilot, main = dataset_studies(factory, db, settings.data_root, recorded)
    body = {"name": "red", "sources": [{"study_id": pilot.id,
            "filter": {"task": "red", "excluded": None}}, {"study_id": main.id,
            "filter": {"participants": ["worker-3"]}}]}  # fmt: skip
    dataset = datasets.create_dataset(db, owner.id, DatasetCreate.model_validate(body))
    out = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert {r["episode_id"] for r in out["assignments"]} == {
        recorded["cartpole"][i].episode_id for i in (0, 1, 3)
    }


def test_an_empty_selection_is_counted_and_said(factory, db, settings) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    dataset = _dataset(db, owner, [factory.study(owner)], {"by": "episode"})
    out = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert out["episodes"] == 0 and out["steps"] == 0 and out["assignments"] == []
    assert "No episode matches" in out["message"]
    assert [s["share"] for s in out["splits"]] == [0.0, 0.0, 0.0]


def test_two_studies_with_different_spaces_are_refused_naming_them(
    factory, db, settings, recorded
) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    carts = factory.study(owner, spec_dict("Carts"))
    cars = factory.study(owner, two_env_spec("Cars"))
    ins = Inserter(db, settings.data_root)
    ins.add(carts, recorded["cartpole"][0])
    ins.add(cars, recorded["mountaincar"][0], env_key="mountaincar")
    dataset = _dataset(db, owner, [carts, cars], {"by": "episode"})
    with pytest.raises(Invalid) as refused:
        preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert refused.value.code == "incompatible_environments"
    (detail,) = refused.value.detail
    assert detail["environments"] == [f"study {carts.id}/cartpole", f"study {cars.id}/mountaincar"]
    assert detail["fields"] == ["observation"]  # 4 floats against 2 (both one discrete action)
    assert "different observation or action spaces" in refused.value.message
    # one study alone fits
    datasets.update_dataset(db, dataset, DatasetUpdate.model_validate(
        {"sources": [{"study_id": cars.id}]}))  # fmt: skip
    assert preview.preview(db, dataset, settings.secret_key, settings.data_root)["episodes"] == 1


def test_a_deleted_source_study_is_named_by_the_preview(factory, db, settings) -> None:  # type: ignore[no-untyped-def]
    owner = factory.user()
    study = factory.study(owner)
    dataset = _dataset(db, owner, [study], {"by": "episode"})
    db.delete(study)
    db.commit()
    with pytest.raises(Invalid) as gone:
        preview.preview(db, dataset, settings.secret_key, settings.data_root)
    assert gone.value.detail[0]["loc"] == ["body", "sources", 0, "study_id"]
