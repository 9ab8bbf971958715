"""What a live session is given when it is made and keeps unchanged (:class:`SessionContext`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from server.core.config import Settings
from server.principal import Principal
from server.runtime.warm_pool import WarmPool
from server.study_spec import StudySpec


@dataclass(frozen=True)
class SessionContext:
    """Who plays which study, with which settings and database, and the registry's hooks:
    ``on_closed(live)`` forgets a closed session, ``workers_in_use(study_id)`` counts the
    workers running here (of one study, when given)."""

    study_id: int
    spec: StudySpec
    principal: Principal
    settings: Settings
    db: sessionmaker[Session]
    on_closed: Callable[[Any], None]
    workers_in_use: Callable[[int | None], int]
    warm: WarmPool | None = None  # workers started before they are asked for
