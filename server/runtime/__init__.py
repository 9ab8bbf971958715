"""Environment runtime: a worker process per player (or a few light ones), recording every step.

API for the app (all methods are coroutines unless noted; none blocks the event loop)::

    w = await EnvWorker.start(env_spec, allowed=AllowedEnvironments.from_settings(settings),
                              study_id=..., data_root=..., timeout=60.0,
                              reply_timeout=10.0, flush_interval_s=0.2,
                              sessions_per_worker=1)
    w.info            # dict: observation_spec, action_spec, action_meanings, cameras,
                      #       camera, controls (resolved bindings, labels, problems),
                      #       fps, mode ("sync" | "async"), catalog_key
    ev = await w.begin_episode(episode_id, seed)     # StepEvent of the first frame (step 0)
    ev = await w.send_input(input, timing, acks)     # sync: steps, returns the StepEvent
                                                     # async: updates the held input, None
    async for ev in w.events(): ...                  # async mode: events pushed by the clock
    await w.pause(); await w.resume(); await w.set_speed(2.0)
    await w.set_quality("high"); await w.set_camera(name)
    summary = await w.end_episode(reason, episode_id)  # finalizes the log; None if none open
    await w.close(timeout=5.0)                       # close; the process's last hosted env:
                                                     #   join → terminate → kill

``StepEvent``: episode_id, step, reward, return_, terminated, truncated, end_reason
(``terminated``, ``truncated``, ``max_steps``, ``max_duration``), frame (JPEG bytes),
worker_ms, work_ms; ``done``. An episode that ends (LAST step) is finalized by the worker at once.

Errors: :class:`WorkerTimeout` (the worker was killed), :class:`WorkerClosed` (use after
close, or the process died), :class:`RemoteError` (an exception in the worker: ``kind``,
``message``, ``traceback``; ``kind == "ProtocolError"`` for out-of-order calls).

The worker builds only sources ``allowed`` allows (:mod:`allowlist`: the catalog and what the
operator lists or installs); any other is refused (``RemoteError`` of kind ``NotAllowed``)
before anything is imported.

Also: :func:`catalog.validate_environment` and :mod:`probe` (study checks), :mod:`catalog`
(known envs), :mod:`input_mapping` (browser input → actions). See ``docs/runtime.md``.
"""

from server.runtime.worker import (
    EnvWorker,
    RemoteError,
    StepEvent,
    WorkerClosed,
    WorkerError,
    WorkerTimeout,
)

__all__ = [
    "EnvWorker",
    "RemoteError",
    "StepEvent",
    "WorkerClosed",
    "WorkerError",
    "WorkerTimeout",
]
