"""Shared test set-up: every test gets its own data dir and config, each process its own
tiktoken cache.

The whole suite runs on two pytest-xdist workers per core (``-n auto`` in
pyproject.toml), its slowest tests handed out first; a run of chosen files or
tests stays in one process, where starting workers would cost more than it
saves (see :func:`pytest_xdist_auto_num_workers`). Tests must therefore be safe
to run in parallel: their own tmp dirs and ports (0: the system picks), no
fixed names in shared places.
"""

from __future__ import annotations

import gc
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest

#: workers per usable core for the whole suite
WORKERS_PER_CORE = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers per usable core for the suite, none for chosen tests.

    A test spends much of its time waiting, not computing: for a server or MCP
    subprocess to start, a child writer to fsync, an app to go idle between
    keys. With one worker per core those waits left the cores idle for about a
    third of the run; a second worker per core computes meanwhile. Each worker
    collects the whole suite and imports Textual and the runtime (seconds of
    CPU), which a run of one file never wins back. An explicit ``-n N`` on the
    command line is obeyed as it is; ``-n auto`` typed there means the suite's
    count whatever the arguments.
    """
    typed = any(arg == "-n" or arg.startswith(("-n", "--numprocesses"))
                for arg in config.invocation_params.args)
    if not typed and config.args_source == pytest.Config.ArgsSource.ARGS:
        return 0
    if not hasattr(os, "sched_getaffinity"):
        return None
    return WORKERS_PER_CORE * len(os.sched_getaffinity(0))


#: the files that hold the suite's longest tests (``pytest --durations=30``), run first, in
#: this order: pytest-xdist hands tests out in collection order, and one of these started
#: last keeps its worker busy long after the others have finished
SLOWEST_FIRST = (
    "tests/ui/test_themes.py",
    "tests/selfref/test_durability.py",
    "tests/context/test_history_resume.py",
    "tests/cli/test_cli_hostile.py",
    "tests/ui/test_hostile_screen.py",
    "tests/context/test_apply_properties.py",
    "tests/cli/test_cli_local_time.py",
    "tests/ui/test_app_save_search.py",
    "tests/ui/test_app_keys_export.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of :data:`SLOWEST_FIRST` ahead of the rest, every file's own order kept."""
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


#: the collector's thresholds in a test process: Python's, but the oldest generation waits
#: for 100 collections of the middle one instead of 10
TEST_GC_THRESHOLDS = (700, 10, 100)


def _collect_oldest_less_often() -> None:
    """Let the oldest generation of the collector run a tenth as often as Python's default.

    A test process builds hundreds of apps, each allocating fast as it parses its
    CSS and draws, and with Python's thresholds a full collection ran every few
    tests, each walking everything alive in the process: a fifth of a worker's CPU
    time went to the collector. The app sets its own thresholds while it runs and
    gives these back when it stops (ui/gc_pauses.py); the young generations
    collect as usual, and the garbage that waits for the oldest costs a worker
    about 50 MB.
    """
    gc.set_threshold(*TEST_GC_THRESHOLDS)


#: full collections at the end of a test process: pytest's own count (unraisableexception)
FINAL_COLLECTIONS = 5


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Collect the process's garbage now, then freeze what is left, before the worker says
    it is done.

    pytest collects five times more once the run is over, and only then lets
    the process end. For a pytest-xdist worker that comes after it has told the
    main process it is done; the main process then shuts it down, and execnet
    sends a worker whose work still runs 5 s later a SIGINT. A worker that has
    built hundreds of apps walks about 700,000 live objects per collection: 3 s
    of CPU for the five, 27 s of wall time at load 24. So the last worker to
    finish was interrupted every run (the KeyboardInterrupt showed in
    hypothesis's gc callback, as a warning). Collected here (this hook runs
    before the worker reports), the garbage is gone, and with the survivors
    frozen pytest's own passes walk only what comes after. An unraisable
    exception from a finalizer run here is still reported: pytest's hook for
    them is in place until its own passes are over.
    """
    for _ in range(FINAL_COLLECTIONS):
        if not gc.collect():
            break
    gc.freeze()


def _parse_each_stylesheet_once() -> None:
    """Textual's parsed CSS rules shared by every app of a test process.

    Each app parses its stylesheet (the app's file and every widget's default
    CSS, with the theme's variables) into rule sets, and parses it again at
    each change of theme; Textual keeps them only in that app's stylesheet, so
    the hundreds of apps a process runs parsed the same text each time (about
    30 ms of CPU per app). Here the rule sets are kept per process, by the
    same key Textual's own cache uses plus the variables they were parsed
    with: the rule sets an app gets are the ones it would have parsed (Textual
    already hands the same ones to each parse of one app's stylesheet, which
    only reads them), and CSS that does not parse still raises each time.
    """
    from textual.css.stylesheet import Stylesheet

    parse_rules = getattr(Stylesheet, "_parse_rules", None)
    if parse_rules is None:
        return  # a Textual laid out otherwise: each app parses its own
    parsed: dict[tuple, list] = {}

    def shared_parse_rules(self, css, read_from, is_default_rules=False, tie_breaker=0,
                           scope=""):
        key = (css, read_from, is_default_rules, tie_breaker, scope,
               tuple(self._variables.items()))
        rules = parsed.get(key)
        if rules is None:
            rules = parsed[key] = parse_rules(self, css, read_from, is_default_rules,
                                              tie_breaker, scope)
        return rules

    Stylesheet._parse_rules = shared_parse_rules


#: the folder of the system's temp dir that keeps the tests' compiled modules between runs
#: when the environment asks for none beside the sources (one per user)
BYTECODE_FOLDER = "selfref-tui-test-bytecode-{uid}"


def _compile_each_module_once() -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set, compiled modules kept in a private folder
    of the temp dir (Python's ``PYTHONPYCACHEPREFIX``) instead of nowhere.

    With nothing written, every process compiled every module it imported from
    source, every run: each worker spent 4.5 s of CPU on compiling the package and
    compiling and rewriting the test modules as it collected them (8.3 s instead
    of 3.8 s), and each ``selfref-tui`` the tests start as a real process 0.25 s
    on the package (tests/cli: 19 s of CPU instead of 13.5 s). The sources stay
    free of bytecode, as the setting asks. Set here for this process and, through
    the environment, for the workers and the processes the tests start. A folder
    that is not this user's alone (a link, another owner, open to others) is not
    used: compiled code found there would run.
    """
    if not sys.dont_write_bytecode or sys.pycache_prefix or not hasattr(os, "getuid"):
        return  # bytecode beside the sources (Python's default), or a place already chosen
    folder = Path(tempfile.gettempdir()) / BYTECODE_FOLDER.format(uid=os.getuid())
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return
    try:
        st = os.lstat(folder)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


#: how long Textual's Pilot sleeps between checks for an idle app while it types a string
TYPING_IDLE_SLICE_S = 0.002


def pytest_configure(config: pytest.Config) -> None:
    """Compiled modules kept (:func:`_compile_each_module_once`), the collector's
    thresholds (:func:`_collect_oldest_less_often`), each stylesheet
    parsed once per process (:func:`_parse_each_stylesheet_once`), and Pilot typing
    all but the last key of a ``press`` with a 2 ms idle check.

    ``Pilot.press`` waits twice per key for a slice in which the process used
    (nearly) no CPU, and each wait sleeps at least one 20 ms slice: typing
    ``/rewind 3`` cost half a second of sleep, most of the UI tests' time. The
    keys before the last are still sent one at a time, each once the app has
    handled the one before it (the same idle share of a shorter slice). The
    last key, and ``Pilot.pause``, keep Textual's 20 ms slice: longer than a
    frame, so what a test reads next has been laid out and drawn.
    """
    _compile_each_module_once()
    _collect_oldest_less_often()
    _parse_each_stylesheet_once()
    from textual import _wait
    from textual.app import App

    press_keys = getattr(App, "_press_keys", None)
    if press_keys is None or not all(
            hasattr(_wait, name) for name in ("SLEEP_GRANULARITY", "SLEEP_IDLE")):
        return  # a Textual laid out otherwise: its own pace, slower but the same tests

    async def typing_press_keys(self: App, keys) -> None:
        if not keys:
            return await press_keys(self, keys)
        *head, last = keys
        if head:
            normal = _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE
            _wait.SLEEP_GRANULARITY = TYPING_IDLE_SLICE_S
            _wait.SLEEP_IDLE = TYPING_IDLE_SLICE_S / 20
            try:
                await press_keys(self, head)
            finally:
                _wait.SLEEP_GRANULARITY, _wait.SLEEP_IDLE = normal
        await press_keys(self, [last])

    App._press_keys = typing_press_keys


@pytest.fixture(scope="session")
def _tiktoken_cache(tmp_path_factory) -> str:
    """One tiktoken cache for the tests of a process, away from the person's.

    The app places its bundled encoding there, checked against tiktoken's hash,
    whenever it starts (selfref/encodings.py): in an empty folder that is 25 ms of
    unzipping and hashing per app; a file already placed is checked and kept.
    """
    return str(tmp_path_factory.mktemp("tiktoken"))


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch, _tiktoken_cache):
    """Keep tests away from the person's real store, config and caches."""
    monkeypatch.setenv("SELFREF_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SELFREF_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", _tiktoken_cache)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SELFREF_MODEL"):
        monkeypatch.delenv(name, raising=False)
