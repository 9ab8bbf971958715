"""Who is asking: a logged-in user (admin or designer) or a participant of one study."""

from __future__ import annotations

from dataclasses import dataclass

from server.models import Role, Study

# How exports, filters and the review pages name a designer's test play: ``user:<user id>``.
# Participants' external ids share that namespace, so no participant may take such an id.
USER_PREFIX = "user:"


def is_reserved_participant_id(external_id: str) -> bool:
    """True for ids of the designers' test-play namespace (``user:...``, any case)."""
    return external_id[: len(USER_PREFIX)].lower() == USER_PREFIX


@dataclass(frozen=True)
class Principal:
    """The subject of every permission check.

    A user principal has ``user_id`` and ``role``; a participant principal (a crowd worker who
    came through a study's permalink) has ``study_id`` and ``participant_id`` and no user.
    """

    user_id: int | None = None
    role: Role | None = None
    study_id: int | None = None
    participant_id: int | None = None
    # a designer's preview as a participant (a test participant): its episodes are test plays
    test: bool = False

    @classmethod
    def for_user(cls, user_id: int, role: str) -> Principal:
        return cls(user_id=user_id, role=Role(role))

    @classmethod
    def for_participant(cls, study_id: int, participant_id: int, test: bool = False) -> Principal:
        return cls(study_id=study_id, participant_id=participant_id, test=test)

    @property
    def plays_tests(self) -> bool:
        """Its episodes are test plays: a designer's (or admin's), or a preview's."""
        return self.participant_id is None or self.test

    @property
    def is_user(self) -> bool:
        return self.user_id is not None

    @property
    def is_admin(self) -> bool:
        return self.role == Role.admin

    def can_manage(self, study: Study) -> bool:
        """Edit, export and review: the owner or an admin."""
        return self.is_admin or (self.is_user and study.owner_id == self.user_id)

    def can_play(self, study: Study) -> bool:
        """Play episodes: whoever manages it (test-play) or a participant of this study."""
        return self.can_manage(study) or (
            self.participant_id is not None and self.study_id == study.id
        )
