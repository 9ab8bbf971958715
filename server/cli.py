"""``rlds-studio``: serve the app and manage studies and users from the shell."""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.core.config import Settings, get_settings
from server.core.db import make_engine, make_sessionmaker
from server.errors import DomainError
from server.export import registry
from server.models import EpisodeStatus, Role, Study, User
from server.schemas.exports import ExportOptionsIn, ExportSelection, RegenerateIn
from server.schemas.users import UserCreate
from server.services import bootstrap, users
from server.services.review import quality
from server.services.studies import studies, study_files
from server.services.studies.env_check import allowed_environments, require_allowed

if TYPE_CHECKING:
    from server.export import EpisodeInput, ExportOptions


def _session(settings: Settings) -> Session:
    bootstrap.prepare(settings)
    return make_sessionmaker(make_engine(settings.database_url))()


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    """Wait for the database, migrate and bootstrap (once across replicas starting together)."""
    report = bootstrap.start_replica(settings)
    _announce(report, settings)
    return 0


def _announce(report: bootstrap.StartReport, settings: Settings) -> None:
    migrated = f"migrated from {report.migrated_from}" if report.migrated_from else "at head"
    print(f"  database {migrated}; {report.samples_loaded} sample studies loaded", flush=True)
    password = report.admin_password
    if password:
        print(
            f"\n  First start: created admin {settings.admin_email} with password {password}\n"
            "  (shown once; set STUDIO_ADMIN_PASSWORD to choose it)\n",
            flush=True,
        )


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    """Migrate and bootstrap (once across replicas), then serve."""
    import uvicorn

    from server.main import SERVE_OPTIONS, create_app

    _announce(bootstrap.start_replica(settings), settings)
    host = args.host or settings.host
    port = args.port or settings.port
    print(f"  RLDS Studio on http://{host}:{port}  (API docs at /docs)", flush=True)
    settings = settings.model_copy(update={"host": host, "port": port})  # the replica's address
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info", **SERVE_OPTIONS)
    return 0


def cmd_import_study(args: argparse.Namespace, settings: Settings) -> int:
    """Import a study file as a draft."""
    spec = study_files.load_file(Path(args.file))
    require_allowed(spec, allowed_environments(settings), prefix=())
    with _session(settings) as db:
        owner = _owner(db, args.owner or settings.admin_email)
        study = studies.create_study(db, owner.id, spec)
        print(f"imported study {study.id}: {study.name}")
    return 0


def cmd_export_study(args: argparse.Namespace, settings: Settings) -> int:
    """Print a study file (or write it to --out)."""
    with _session(settings) as db:
        study = _study(db, args.id)
        text = study_files.dump_yaml(studies.spec_of(study))
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_create_user(args: argparse.Namespace, settings: Settings) -> int:
    """Create a designer or admin account."""
    password = args.password or getpass.getpass("Password: ")
    with _session(settings) as db:
        user = users.create_user(
            db, UserCreate(email=args.email, name=args.name, password=password, role=args.role)
        )
        print(f"created {user.role} {user.email} (id {user.id})")
    return 0


TESTS_HELP = "include designers' test plays (left out by default)"


def cmd_episodes(args: argparse.Namespace, settings: Settings) -> int:
    """List a study's episodes as a table."""
    from server.services.review import review

    with _session(settings) as db:
        study = _study(db, args.study)
        flt = review.EpisodeFilter(
            statuses=args.status or [], tags=args.tag or [], include_tests=args.include_tests
        )
        page = review.list_episodes(
            db, study, flt, sort="started_at", limit=review.MAX_PAGE, count_cap=None
        )
        externals = review.external_ids(db, page.items)
        # steps: the actions taken, as the pages count them (the export has one more)
        print(f"{'episode':32}  {'env':12} {'status':10} {'ended by':12} {'steps':>6} "
              f"{'return':>9}  participant")  # fmt: skip
        for e in page.items:
            print(
                f"{e.id:32}  {e.env_key[:12]:12} {e.status:10} {e.ended_by or '-':12} "
                f"{max(e.steps - 1, 0):6d} {e.total_reward:9.3f}  {review.agent_key(e, externals)}"
                + (f"  [{', '.join(sorted(t.name for t in e.tags))}]" if e.tags else "")
            )
        shown = len(page.items)
        total = page.total or 0
        more = f" (first {shown})" if total > shown else ""
        print(f"{total} episode(s){more}")
    return 0


def cmd_quality(args: argparse.Namespace, settings: Settings) -> int:
    """Compute the quality signals of episodes that have none, from their logs."""
    with _session(settings) as db:
        if args.study is not None:
            _study(db, args.study)
        done = quality.backfill(db, args.study, recompute=args.recompute)
    print(f"computed the quality signals of {done} episode(s)")
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """Export a study's episodes to --out, with a progress bar."""
    from server.services.exports import exports

    with _session(settings) as db:
        study = _study(db, args.study)
        selection = ExportSelection(
            statuses=args.status or ["completed"],
            environments=args.env or [],
            tags=args.tag or [],
            exclude_tags=args.exclude_tag or [],
            include_tests=args.include_tests,
            outcomes=args.outcome or [],
            include_excluded=args.include_excluded,
            task=args.task,
        )
        opts = ExportOptionsIn(
            format=args.format,
            strip_step_metadata=args.strip,
            end_tags=args.end_tag or [],
            profile=args.profile,
            videos=args.videos,
            archive=args.archive,
            name=args.name,
            engine=args.engine,
            split_by_env=args.split_by_env,
            regenerate=_regenerate(args),
        )
        episodes, options, inputs = exports.prepare(
            db,
            study,
            selection,
            opts,
            secret_key=settings.secret_key,
            data_root=settings.data_root,
            engines=exports.Engines.from_settings(settings),
        )
    env_keys = tuple(e.env_key for e in episodes) if opts.split_by_env else None
    return _write_with_bar(args, inputs, options, sum(e.steps for e in episodes), "", env_keys)


def _write_with_bar(
    args: argparse.Namespace,
    inputs: list[EpisodeInput],
    options: ExportOptions,
    total_steps: int,
    what: str,
    env_keys: tuple[str, ...] | None = None,
) -> int:
    """Write the export to ``args.out`` (``args.archive``) with a progress bar in steps."""
    from tqdm import tqdm

    from server.export import ExportError
    from server.export.runner import write_output

    out = Path(args.out)
    if args.archive != "folder" and not out.name.endswith(f".{args.archive}"):
        out = out.with_name(f"{out.name}.{args.archive}")
    with tqdm(total=total_steps, unit="step", desc=f"export {len(inputs)} episodes") as bar:

        def progress(done: int, total: int, steps: int) -> None:
            bar.set_postfix_str(f"{done}/{total} episodes")
            bar.update(steps - bar.n)

        report: list[str] = []
        try:
            path = write_output(
                inputs, options, args.archive, out, progress=progress, env_keys=env_keys,
                phase=bar.set_description, report=report,
            )  # fmt: skip
        except ExportError as exc:
            print(f"error: export failed: {exc}", file=sys.stderr)
            return 2
    engine = " on Apache Beam" if options.beam is not None else ""
    print(f"exported {len(inputs)} episodes{what} ({total_steps} steps){engine} to {path}")
    for line in report:  # episodes the regeneration left out
        print(line)
    return 0


def cmd_datasets(args: argparse.Namespace, settings: Settings) -> int:
    """List datasets, or print what one selects and how its split divides it."""
    from server.models import Dataset
    from server.services.datasets import preview

    with _session(settings) as db:
        if args.action == "list":
            query = select(Dataset).order_by(Dataset.id)
            if args.owner:
                query = query.where(Dataset.owner_id == _owner(db, args.owner).id)
            rows = db.scalars(query).all()
            print(f"{'id':>5}  {'owner':>5}  {'studies':12} {'split':22} name")
            for d in rows:
                studies_ = ",".join(str(s["study_id"]) for s in d.sources)
                split = d.split
                how = f"{split.get('by', 'participant')} seed {split.get('seed', 0)}"
                print(f"{d.id:5d}  {d.owner_id:5d}  {studies_[:12]:12} {how[:22]:22} {d.name}")
            print(f"{len(rows)} dataset(s)")
            return 0
        if args.id is None:
            raise SystemExit(f"error: give the dataset's id: rlds-studio datasets {args.action} ID")
        dataset = db.get(Dataset, args.id)
        if dataset is None:
            raise SystemExit(f"no dataset {args.id}")
        if args.action == "export":
            return _export_dataset(args, settings, db, dataset)
        out = preview.preview(db, dataset, settings.secret_key, settings.data_root)
    _print_preview(dataset.name, out)
    return 0


def _export_dataset(args: argparse.Namespace, settings: Settings, db: Session, dataset: Any) -> int:
    """Export a dataset's splits to --out, with a progress bar."""
    from server.services.datasets import exports as dataset_exports
    from server.services.exports import exports

    if not args.out:
        raise SystemExit("error: give --out, the folder (or archive) to create")
    opts = ExportOptionsIn(format=args.format, profile=args.profile, name=args.name,
                           strip_step_metadata=args.strip, archive=args.archive)  # fmt: skip
    rows, options, inputs, edited = dataset_exports.prepare(
        db, dataset, opts, secret_key=settings.secret_key, data_root=settings.data_root,
        engines=exports.Engines.from_settings(settings),
    )  # fmt: skip
    counts = Counter(ep.split for ep in inputs)
    splits = ", ".join(f"{n} {s}" for s, n in counts.items())
    steps = sum(e.steps - sum(edited[e.id].trim) for e in rows)
    return _write_with_bar(args, inputs, options, steps, f" ({splits})")


def _print_preview(name: str, out: dict) -> None:
    """The preview's counts as tables (steps: RLDS steps, as exports write them)."""
    print(f"dataset {out['dataset_id']} {name!r}: {out['episodes']} episodes, {out['steps']} "
          f"steps, {out['participants']} participants (split by {out['split_by']}, seed "
          f"{out['seed']})")  # fmt: skip
    if out["message"]:
        print(out["message"])
    print(f"{'split':12} {'fraction':>8} {'episodes':>8} {'steps':>8} {'participants':>12}")
    for s in out["splits"]:
        print(f"{s['split']:12} {s['fraction']:8.2f} {s['episodes']:8d} {s['steps']:8d} "
              f"{s['participants']:12d}")  # fmt: skip
    for title, rows in (("study", out["studies"]), ("environment", out["environments"]),
                        ("task", out["tasks"])):  # fmt: skip
        print(f"per {title}:")
        for r in rows:
            per = "  ".join(f"{k} {v}" for k, v in r["per_split"].items())
            print(f"  {r['label'][:30]:30} {r['episodes']:6d} episodes  {per}")
    print("per participant:")
    for p in out["by_participant"]:
        print(f"  {p['participant']:24} {p['split']:10} {p['episodes']:6d} episodes")
    edits = out.get("edits") or {}  # what the dataset's edits change
    for x in edits.get("excluded", []):
        print(f"excluded {x['episode_id']} ({x['steps']} steps): {x['reason']}")
    if edits.get("trimmed"):
        print(f"trimmed: {edits['trimmed']} episodes, {edits['steps_trimmed']} steps dropped")
    for task, text in (edits.get("relabelled") or {}).items():
        print(f"relabelled task {task}: {text}")


def _regenerate(args: argparse.Namespace) -> RegenerateIn | None:
    """The regeneration --regenerate-size and --regenerate-camera ask for (None: none)."""
    if args.regenerate_size is None and not args.regenerate_camera:
        return None
    try:
        return RegenerateIn(image_size=args.regenerate_size, cameras=args.regenerate_camera)
    except ValueError as exc:
        raise SystemExit(f"error: bad regeneration options: {exc}") from exc


def _study(db: Session, study_id: int) -> Study:
    study = db.get(Study, study_id)
    if study is None:
        raise SystemExit(f"no study {study_id}")
    return study


def _owner(db: Session, email: str) -> User:
    user = db.scalar(select(User).where(User.email == email.lower()))
    if user is None:
        raise SystemExit(f"no user {email}: create it with `rlds-studio create-user`")
    return user


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="rlds-studio", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="migrate, load sample studies, serve the app")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(func=cmd_serve)

    mig = sub.add_parser(
        "migrate", help="wait for the database, migrate, create the admin, load sample studies"
    )
    mig.set_defaults(func=cmd_migrate)

    imp = sub.add_parser("import-study", help="import a study YAML file as a draft")
    imp.add_argument("file")
    imp.add_argument("--owner", help="owner's email (default: the admin)")
    imp.set_defaults(func=cmd_import_study)

    exp = sub.add_parser("export-study", help="print a study as YAML")
    exp.add_argument("id", type=int)
    exp.add_argument("--out")
    exp.set_defaults(func=cmd_export_study)

    user = sub.add_parser("create-user", help="create a designer or admin account")
    user.add_argument("email")
    user.add_argument("--name", default="")
    user.add_argument("--password", help="prompted when left out")
    user.add_argument("--role", choices=[r.value for r in Role], default=Role.designer.value)
    user.set_defaults(func=cmd_create_user)

    eps = sub.add_parser("episodes", help="list a study's episodes")
    eps.add_argument("--study", type=int, required=True)
    eps.add_argument("--status", action="append", choices=[s.value for s in EpisodeStatus])
    eps.add_argument("--tag", action="append", help="required episode tag (repeatable)")
    eps.add_argument("--include-tests", action="store_true", help=TESTS_HELP)
    eps.set_defaults(func=cmd_episodes)

    qual = sub.add_parser(
        "quality", help="compute episodes' quality signals from their logs (where not computed)"
    )
    qual.add_argument("--study", type=int, help="only this study (default: every study)")
    qual.add_argument("--recompute", action="store_true", help="also episodes that have them")
    qual.set_defaults(func=cmd_quality)

    export = sub.add_parser("export", help="export a study's episodes as an RLDS dataset")
    export.add_argument("--study", type=int, required=True)
    export.add_argument(
        "--status",
        action="append",
        choices=[s.value for s in EpisodeStatus],
        help="episode status to include (repeatable; default: completed)",
    )
    export.add_argument("--env", action="append", help="environment key (repeatable)")
    export.add_argument("--tag", action="append", help="required episode tag (repeatable)")
    export.add_argument("--exclude-tag", action="append", help="excluded episode tag")
    export.add_argument(
        "--task", help="only episodes of this task (its id; '-': episodes without a task)"
    )
    export.add_argument("--include-tests", action="store_true", help=TESTS_HELP)
    export.add_argument("--end-tag", action="append", help="step tag that ends an episode")
    export.add_argument(
        "--outcome", action="append", choices=["success", "failure", "unset"],
        help="effective outcome (repeatable)",
    )  # fmt: skip
    export.add_argument(
        "--include-excluded", action="store_true", help="export episodes marked excluded too"
    )
    export.add_argument(
        "--split-by-env", action="store_true", help="one dataset per environment (mixed spaces)"
    )
    export.add_argument("--strip", action="store_true", help="strip step metadata")
    export.add_argument("--format", choices=registry.names(), default=registry.default())
    export.add_argument(
        "--videos", action="store_true", help="add one MP4 per episode (what the player saw)"
    )
    profiles = "; ".join(f"{n}: {s}" for f in registry.formats() for n, s in f.profiles.items())
    export.add_argument(
        "--profile",
        choices=registry.profile_names(),
        help=f"{profiles} ({' or '.join(registry.with_profiles())} format only)",
    )
    export.add_argument("--archive", choices=["folder", "zip", "tar.gz"], default="folder")
    export.add_argument(
        "--engine",
        choices=["auto", "single", "beam"],
        default="auto",
        help="beam: an Apache Beam pipeline on STUDIO_BEAM_RUNNER "
        f"({' or '.join(registry.on_beam())} format); auto: beam from STUDIO_BEAM_MIN_STEPS steps",
    )
    export.add_argument(
        "--regenerate-size", type=int, help="regenerate the observations' images at N px by replay"
    )
    export.add_argument(
        "--regenerate-camera",
        action="append",
        help="regenerate the observations with this camera's images (repeatable)",
    )
    export.add_argument("--name", help="dataset name (snake_case; default from the study)")
    export.add_argument("--out", required=True, help="folder, or archive file, to create")
    export.set_defaults(func=cmd_export)
    dsets = sub.add_parser(
        "datasets", help="list datasets, or preview one's split (docs/export.md, Datasets)"
    )
    dsets.add_argument("action", choices=["list", "preview", "export"])
    dsets.add_argument("id", nargs="?", type=int, help="the dataset to preview or export")
    dsets.add_argument("--owner", help="list only this designer's (email)")
    dsets.add_argument("--format", choices=registry.names(), default=registry.default())
    dsets.add_argument("--profile", choices=registry.profile_names(), help="export: a profile")
    dsets.add_argument("--strip", action="store_true", help="export: strip step metadata")
    dsets.add_argument("--archive", choices=["folder", "zip", "tar.gz"], default="folder")
    dsets.add_argument("--name", help="export: dataset name (default from the dataset's)")
    dsets.add_argument("--out", help="export: the folder, or archive file, to create")
    dsets.set_defaults(func=cmd_datasets)
    rts = sub.add_parser(
        "runtimes", help="list the environment runtimes, or install them from their locks"
    )
    rts.add_argument("action", nargs="?", choices=["list", "install"], default="list")
    rts.add_argument("names", nargs="*", help="runtimes to install (default: all)")
    rts.set_defaults(func=cmd_runtimes)
    return parser


def cmd_runtimes(args: argparse.Namespace, settings: Settings) -> int:
    """List the environment runtimes and their states, or install some from their locks."""
    from server.runtime import runtime_install, runtimes

    if args.action == "install":
        names = args.names or sorted(runtimes.RUNTIMES)
        unknown = [n for n in names if n not in runtimes.RUNTIMES]
        if unknown:
            known = ", ".join(sorted(runtimes.RUNTIMES))
            print(f"error: unknown runtime {', '.join(unknown)} (known: {known})", file=sys.stderr)
            return 2
        results = [runtime_install.install(name, say=lambda line: print(line, flush=True))
                   for name in names]  # fmt: skip
        return 0 if all(found.ok for found in results) else 1
    print(f"runtimes in {runtimes.root()}:")
    for name, found in runtimes.states().items():
        runtime = runtimes.RUNTIMES.get(name)
        suites = ", ".join(runtime.suites) if runtime else "every other suite"
        print(f"  {name:<11} {found.state:<13} suites: {suites}")
        if not found.ok:
            print(f"  {'':<11} {found.message}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    settings = get_settings()
    from server.runtime import runtimes

    runtimes.configure(settings.runtimes_dir)
    try:
        return int(args.func(args, settings))
    except DomainError as exc:
        detail = f"\n{exc.detail}" if exc.detail else ""
        print(f"error: {exc.message}{detail}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        # e.g. create-user with a short password: the fields and problems, no traceback
        for err in exc.errors():
            where = ".".join(str(part) for part in err["loc"])
            print(f"error: {where + ': ' if where else ''}{err['msg']}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
