"""load_config: defaults < config.toml < environment < flags, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfref_tui.config import DEFAULT_BASE_URL, DEFAULT_MODEL, ConfigError
from selfref_tui.config_load import load_config

TOML = """
default_provider = "local"

[providers.local]
base_url = "http://localhost:11434/v1/"
model = "llama3.1"
context_window = 32768
temperature = 0.2
max_output_tokens = 2048

[providers.openai]
api_key_env = "MY_OPENAI_KEY"
model = "gpt-4.1"

[agent]
step_limit = 7
auto_compact_ratio = 0.5
allowed_roots = ["~/src"]

[keymap]
abort = "ctrl+c"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file(tmp_path):
    config = load_config(config_path=tmp_path / "missing.toml", env={})
    assert config.provider.base_url == DEFAULT_BASE_URL and config.provider.model == DEFAULT_MODEL
    assert config.unconfigured and config.key == "main" and config.agent.step_limit == 25


def test_config_path_from_env(tmp_path, monkeypatch):
    path = write(tmp_path, TOML)
    monkeypatch.setenv("SELFREF_CONFIG", str(path))
    assert load_config().provider.model == "llama3.1"


def test_file_profiles_agent_and_keymap(tmp_path):
    config = load_config(config_path=write(tmp_path, TOML), env={})
    provider = config.provider
    assert (provider.name, provider.base_url, provider.model) == (
        "local", "http://localhost:11434/v1", "llama3.1")
    assert provider.context_window == 32768 and provider.temperature == 0.2
    assert provider.max_output_tokens == 2048
    assert not config.unconfigured  # a base URL was configured
    assert set(config.profiles) == {"local", "openai"}
    assert config.agent.step_limit == 7 and config.agent.auto_compact_ratio == 0.5
    assert config.agent.allowed_roots == (Path("~/src").expanduser(),)
    assert config.keymap == {"abort": "ctrl+c"}


def test_the_theme_is_read_for_the_app_and_for_the_demo(tmp_path):
    path = write(tmp_path, 'theme = "solarized-light"\n' + TOML)
    assert load_config(config_path=path, env={}).theme == "solarized-light"
    assert load_config(config_path=path, env={}, demo=True).theme == "solarized-light"
    assert load_config(config_path=tmp_path / "missing.toml", env={}).theme == ""
    with pytest.raises(ConfigError, match=r'theme must be .*theme = "nord"'):
        load_config(config_path=write(tmp_path, "theme = 3\n"), env={})


def test_environment_beats_file_and_flags_beat_environment(tmp_path):
    path = write(tmp_path, TOML)
    env = {"OPENAI_BASE_URL": "http://env:1/v1", "SELFREF_MODEL": "env-model",
           "OPENAI_API_KEY": "sk-env"}
    config = load_config(config_path=path, env=env)
    assert config.provider.base_url == "http://env:1/v1"
    assert config.provider.model == "env-model" and config.provider.api_key == "sk-env"
    flagged = load_config(config_path=path, env=env, model="flag-model",
                          base_url="http://flag:2/v1")
    assert flagged.provider.model == "flag-model"
    assert flagged.provider.base_url == "http://flag:2/v1"


def test_profile_flag_reads_its_own_key_variable(tmp_path):
    env = {"MY_OPENAI_KEY": "sk-profile", "OPENAI_API_KEY": "sk-other",
           "SELFREF_MODEL": "env-model"}
    config = load_config(config_path=write(tmp_path, TOML), env=env, profile="openai")
    assert config.provider.api_key == "sk-profile" and config.provider.model == "gpt-4.1"
    assert config.provider.base_url == DEFAULT_BASE_URL and not config.unconfigured


def test_key_never_appears_in_repr(tmp_path):
    config = load_config(config_path=tmp_path / "none.toml", env={"OPENAI_API_KEY": "sk-secret"})
    assert config.provider.api_key == "sk-secret" and not config.unconfigured
    assert "sk-secret" not in repr(config)


def test_plain_text_api_key_refused(tmp_path):
    path = write(tmp_path, '[providers.x]\nmodel = "m"\napi_key = "sk-123"\n')
    with pytest.raises(ConfigError) as info:
        load_config(config_path=path, env={})
    assert "[providers.x]" in str(info.value) and "api_key_env" in str(info.value)
    assert "sk-123" not in str(info.value)


def test_bad_toml_names_file_and_line(tmp_path):
    path = write(tmp_path, '[agent]\nstep_limit = 3\nbroken = = 1\n')
    with pytest.raises(ConfigError) as info:
        load_config(config_path=path, env={})
    message = str(info.value)
    assert str(path) in message and "line 3" in message and "\n" not in message


@pytest.mark.parametrize(("text", "fragment"), [
    ('[agent]\nstep_limit = "many"\n', "step_limit must be int"),
    ('[agent]\nstepLimit = 3\n', "unknown setting 'stepLimit'"),
    ('[providers.a]\ncontext_window = 1.5\n', "context_window must be int"),
    ('default_provider = "nope"\n', "no provider profile named 'nope'"),
    ('[agent]\nauto_compact_ratio = 2\n', "auto_compact_ratio must be between 0 and 1"),
    ('[agent]\nstep_limit = true\n', "step_limit must be int, not True"),
    ('[agent]\nmemory_writes = "sometimes"\n', "memory_writes must be one of 'allow', 'ask'"),
    ('[agent]\nreview_compaction = "yes"\n', "review_compaction must be bool"),
    ('colour = "red"\n', "unknown setting 'colour' (known: agent,"),
    # a setting in the wrong table (at the top, or appended below a profile) says where
    ('review_compaction = true\n', "unknown setting 'review_compaction' — it is an [agent] "
                                    "setting: put it below an [agent] line"),
    ('[providers.a]\nmodel = "m"\nmemory_writes = "ask"\n',
     "'memory_writes' in [providers.a] — it is an [agent] setting"),
    ('model = "llama3.1"\n', "'model' — it is a provider setting: put it below a "
                             "[providers.NAME] line"),
    ('[agent]\nbase_url = "http://x"\n', "'base_url' in [agent] — it is a provider setting"),
    ('[providers.a]\nconnect_timeout_s = 0\n', "connect_timeout_s must be a number of "
                                                "seconds above 0, not 0"),
    ('[providers.a]\nidle_timeout_s = -1.5\n', "idle_timeout_s must be a number of seconds"),
    ('[providers.a]\ntimeout_s = 0\n', "timeout_s must be a number of seconds above 0"),
    ('[providers.a]\nmax_retries = -1\n', "max_retries must be 0 or more, not -1"),
    ('[providers.a]\nmax_output_tokens = 0\n', "max_output_tokens must be a number of "
                                                 "tokens above 0, not 0"),
])
def test_invalid_values_are_one_clear_line(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        load_config(config_path=write(tmp_path, text), env={})
    assert fragment in str(info.value) and str(tmp_path) in str(info.value)


def test_the_person_s_say_over_memory_is_configured_in_agent(tmp_path):
    path = write(tmp_path, '[agent]\nreview_compaction = true\nmemory_writes = "ask"\n'
                           'refs_enabled = false\n')
    agent = load_config(config_path=path, env={}).agent
    assert agent.review_compaction is True and agent.memory_writes == "ask"
    assert agent.refs_enabled is False and agent.allow_memory is False
    defaults = load_config(config_path=tmp_path / "missing.toml", env={}).agent
    assert (defaults.review_compaction, defaults.memory_writes) == (False, "allow")


def test_data_dir_and_key_priority(tmp_path):
    path = write(tmp_path, 'data_dir = "/from/file"\nkey = "work"\n')
    assert load_config(config_path=path, env={}).data_dir == Path("/from/file")
    assert load_config(config_path=path, env={}).key == "work"
    env = {"SELFREF_DATA_DIR": str(tmp_path / "env")}
    assert load_config(config_path=path, env=env).data_dir == tmp_path / "env"
    flagged = load_config(config_path=path, env=env, data_dir=tmp_path / "flag", key="k2")
    assert flagged.data_dir == tmp_path / "flag" and flagged.key == "k2"


def test_demo_profile(tmp_path):
    config = load_config(config_path=write(tmp_path, TOML), env={}, demo=True)
    assert config.provider.demo and config.provider.model == "selfref-demo"
    assert not config.unconfigured and config.agent.step_limit == 7
