# Written by the goalbox grader for one grade and removed after it; not part of the exercise.
#
# pytest loads this before it collects the tests, so before the solution is imported. It takes the grade's nonce
# from the grade's private folder ($GOALBOX_DIR) and removes the file; it notes the assertion methods of
# unittest.TestCase as they are before any solution code runs. Each test's result goes to the grade's collector
# through descriptor 3 as pytest reports it; only after the session has finished (pytest_unconfigure, after the
# JUnit XML report is written) does it write the end line (the nonce, and any assertion method that was replaced
# since) and close the descriptor, before any exit handler of the solution's can run.
import os as _os
import unittest as _unittest


def _goalbox_hooks():
    folder = _os.environ.get("GOALBOX_DIR", "")
    state = {}

    def emit(line):
        try:
            _os.write(3, (line.replace("\n", " ") + "\n").encode())
        except OSError:
            pass

    def pytest_configure(config):
        path = _os.path.join(folder, "nonce")
        try:
            with open(path) as f:
                state["nonce"] = f.read()
            _os.remove(path)
        except OSError:
            pass
        state["asserts"] = {n: v for n, v in vars(_unittest.TestCase).items() if n.startswith(("assert", "fail", "run", "_call", "__call__"))}

    def pytest_runtest_logreport(report):
        parts = report.nodeid.split("::")
        name = parts[-2] + "." + parts[-1] if len(parts) > 2 else parts[0].rsplit("/", 1)[-1][:-3] + "." + parts[-1]
        if report.failed:
            emit("fail\t" + name)
        elif report.when == "call":
            emit(("skip\t" if report.skipped else "pass\t") + name)
        elif report.skipped:
            emit("skip\t" + name)

    def pytest_unconfigure(config):
        if "nonce" not in state:
            return
        changed = sorted(n for n, v in state["asserts"].items() if vars(_unittest.TestCase).get(n) is not v)
        end = "end\t" + state["nonce"]
        if changed:
            end += "\ttampered unittest.TestCase." + " unittest.TestCase.".join(changed)
        emit(end)
        try:
            _os.close(3)
        except OSError:
            pass

    return pytest_configure, pytest_runtest_logreport, pytest_unconfigure


pytest_configure, pytest_runtest_logreport, pytest_unconfigure = _goalbox_hooks()
del _goalbox_hooks
