"""Run check scripts one after another in this (consumer venv's) Python, importing its
libraries once (tests/export/consumers.py starts it).

Each line on stdin is ``{"script": path, "args": [...]}``; the script runs as ``__main__``
with those arguments, and one line answers on stdout: ``{"code": exit status, "stdout": what
it printed, "stderr": what it wrote to sys.stderr}``. Only the standard library: this runs in
the consumer venvs, which have none of the app's packages.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
import traceback


def run(script: str, args: list[str]) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    sys.argv = [script, *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:  # sys.exit(n) or sys.exit("message"), as a process would
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            err.write(f"{exc.code}\n")
            code = 1
    except BaseException:  # the traceback a process would have printed
        err.write(traceback.format_exc())
        code = 1
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        answers.write(json.dumps(run(request["script"], request["args"])) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
