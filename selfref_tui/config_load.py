"""Loading the configuration: config.toml read and checked, then the environment and flags.

Apart from the values (``config``) because every layer imports those and only the front
ends load them: this is the part that reads a file, and each of its checks words the
one-line error that names the file, the table and what to change. Order: built-in
defaults < config.toml < environment < command-line flags (:func:`load_config`).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from .config import (
    DEFAULT_KEY,
    MAX_WINDOW,
    MEMORY_WRITES,
    MIN_WINDOW,
    AgentSettings,
    AppConfig,
    ConfigError,
    McpServerConfig,
    ProviderConfig,
    default_config_path,
    default_data_dir,
    demo_provider,
)

_PROFILE_TYPES: dict[str, tuple[type, ...]] = {
    "base_url": (str,), "api_key_env": (str,), "model": (str,), "context_window": (int,),
    "temperature": (int, float), "max_output_tokens": (int,), "timeout_s": (int, float),
    "connect_timeout_s": (int, float), "first_byte_timeout_s": (int, float),
    "idle_timeout_s": (int, float), "max_retries": (int,),
}
#: numbers with a floor: a timeout of 0 made every request time out, a negative retry count
#: or output limit reached the server as a 500 retried three times
_PROFILE_LEAST: dict[str, tuple[float, str]] = {
    **{name: (1e-3, "a number of seconds above 0") for name in (
        "timeout_s", "connect_timeout_s", "first_byte_timeout_s", "idle_timeout_s")},
    "max_retries": (0, "0 or more"),
    "max_output_tokens": (1, "a number of tokens above 0"),
}
#: environment variables for the provider's numbers: (variable, field, type)
_ENV_NUMBERS = (("SELFREF_CONNECT_TIMEOUT", "connect_timeout_s", float),
                ("SELFREF_FIRST_BYTE_TIMEOUT", "first_byte_timeout_s", float),
                ("SELFREF_IDLE_TIMEOUT", "idle_timeout_s", float),
                ("SELFREF_CONTEXT_WINDOW", "context_window", int))
_AGENT_FIELDS = {f.name for f in fields(AgentSettings)}
_TOP_LEVEL = {"default_provider", "providers", "agent", "keymap", "data_dir", "key", "mcp",
              "theme"}


def load_config(
    *,
    config_path: str | Path | None = None,
    model: str | None = None,
    base_url: str | None = None,
    demo: bool = False,
    data_dir: str | Path | None = None,
    key: str | None = None,
    profile: str | None = None,
    context_window: int | None = None,
    env: Mapping[str, str] = os.environ,
) -> AppConfig:
    """Built-in defaults < config.toml < environment < the arguments (command-line flags).

    A profile chosen with ``profile=`` is a flag, so its values beat the environment;
    ``default_provider`` from the file is below it. The API key is only ever read from
    the environment variable named by the profile's ``api_key_env``.
    ``demo=True`` returns the demo profile with an empty base URL: the caller starts the
    demo server and fills it in (``selfref_tui.demo.with_demo_url``).
    The context window: ``context_window=`` (the flag), then SELFREF_CONTEXT_WINDOW, then
    the profile's; none of them leaves it None for the runtime to ask the server.
    The timeouts: SELFREF_CONNECT_TIMEOUT, SELFREF_FIRST_BYTE_TIMEOUT and
    SELFREF_IDLE_TIMEOUT (seconds) beat the profile's values.
    """
    path = Path(config_path).expanduser() if config_path else default_config_path(env)
    data = _read_toml(path)
    profiles = {name: _profile(path, name, raw)
                for name, raw in _table(path, data, "providers").items()}
    agent = _agent(path, _table(path, data, "agent"))
    keymap = _keymap(path, _table(path, data, "keymap"))
    mcp = _mcp_servers(path, _table(path, data, "mcp"))
    resolved_dir, dir_source = _data_dir(path, data, data_dir, env)
    check_data_dir(resolved_dir, dir_source)
    memory_key = key or str(data.get("key") or DEFAULT_KEY)
    theme = data.get("theme", "")
    if not isinstance(theme, str):
        raise ConfigError(f"{path}: theme must be a theme's name in quotes (e.g. "
                          f"theme = \"nord\"), not {theme!r}")

    if demo:
        return AppConfig(provider=demo_provider(""), agent=agent, profiles=profiles,
                         keymap=keymap, data_dir=resolved_dir, data_dir_source=dir_source,
                         key=memory_key, resume=key is None, mcp_servers=mcp,
                         config_path=path, theme=theme)

    chosen = profile or data.get("default_provider")
    if chosen is not None and not isinstance(chosen, str):
        raise ConfigError(f"{path}: default_provider must be a profile name (a string)")
    if chosen and chosen not in profiles:
        known = ", ".join(sorted(profiles)) or "none defined"
        raise ConfigError(f"no provider profile named '{chosen}' in {path} (known: {known}); "
                          f"add a [providers.{chosen}] table or pick another")
    provider = profiles[chosen] if chosen else ProviderConfig()
    explicit_url = bool(chosen and "base_url" in _table(path, data, "providers")[chosen])
    url_source = f"base_url of [providers.{chosen}] in {path}" if explicit_url else "base_url"

    if not profile:  # the environment beats the file, not an explicitly chosen profile
        if env.get("OPENAI_BASE_URL"):
            provider = replace(provider, base_url=env["OPENAI_BASE_URL"])
            explicit_url, url_source = True, "OPENAI_BASE_URL"
        if env.get("SELFREF_MODEL"):
            provider = replace(provider, model=env["SELFREF_MODEL"])
    if base_url:
        provider = replace(provider, base_url=base_url)
        explicit_url, url_source = True, "--base-url"
    _check_url(provider.base_url, url_source)
    if model:
        provider = replace(provider, model=model)
    if provider.context_window is not None:
        provider = replace(provider, window_source="profile", context_window=_window(
            provider.context_window, f"context_window of the profile '{provider.name}'"))
    provider = _env_numbers(provider, env)
    if context_window is not None:
        provider = replace(provider, context_window=_window(context_window, "--context-window"),
                           window_source="flag")
    api_key = env.get(provider.api_key_env, "") if provider.api_key_env else ""
    provider = replace(provider, api_key=api_key, base_url=provider.base_url.rstrip("/"))
    return AppConfig(provider=provider, agent=agent, profiles=profiles, keymap=keymap,
                     data_dir=resolved_dir, data_dir_source=dir_source, key=memory_key,
                     resume=key is None, unconfigured=not api_key and not explicit_url,
                     mcp_servers=mcp, config_path=path, theme=theme)


def _check_url(url: str, source: str) -> None:
    """A base URL the client can use, or a usage error that says the fix.

    Why: ``localhost:11434/v1`` (no scheme) was tried three times and reported
    as "cannot reach … is the server running?" while the server ran fine.
    """
    from urllib.parse import urlsplit

    from selfref_tui.safety import inert_line, redact

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is not None and parts.scheme in ("http", "https") and host:
        return
    shown = inert_line(redact(url), 200)
    hint = (f" — did you mean http://{shown}?" if "://" not in url and url.strip()
            else "; give one like http://localhost:11434/v1")
    raise ConfigError(f"{source} is {shown!r}, not an http(s) URL{hint}")


def _data_dir(path: Path, data: Mapping[str, Any], flag: str | Path | None,
              env: Mapping[str, str]) -> tuple[Path, str]:
    """The data dir and what chose it, so an error can name the setting to change."""
    if flag:
        return Path(flag).expanduser(), "--data-dir"
    if env.get("SELFREF_DATA_DIR"):
        return default_data_dir(env), "SELFREF_DATA_DIR"
    if data.get("data_dir"):
        return Path(str(data["data_dir"])).expanduser(), f"data_dir in {path}"
    return default_data_dir(env), "the platform's data dir"


def check_data_dir(path: Path, source: str) -> None:
    """Refuse a data dir that can never work, naming the setting that chose it.

    A missing folder is fine (the store creates it on the first write); a file,
    an unreadable folder, or a file on the way to it is a usage error, found
    here once instead of as an odd OSError in whichever command touches it first.
    """
    fix = f"point {source} at a folder you can read and write"
    probe = path
    while not os.path.lexists(probe):
        if probe.parent == probe:
            return
        probe = probe.parent
    shown = str(path) if probe == path else f"{probe} (on the way to {path})"
    if not probe.is_dir():
        raise ConfigError(f"the data dir {shown} set by {source} is not a folder; {fix}")
    if probe == path and not os.access(path, os.R_OK | os.X_OK):
        raise ConfigError(f"the data dir {shown} set by {source} cannot be read; {fix}")


def _env_numbers(provider: ProviderConfig, env: Mapping[str, str]) -> ProviderConfig:
    """The provider's numbers from the environment (above the file, below the flags)."""
    for variable, name, kind in _ENV_NUMBERS:
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        try:
            value = kind(raw)
        except ValueError:
            raise ConfigError(f"{variable}={raw!r} is not a number; set it to "
                              f"{'a whole number of tokens' if kind is int else 'seconds'} "
                              "or unset it") from None
        if not value > 0:  # "nan" too: it is neither above nor below 0
            raise ConfigError(f"{variable} must be above 0, not {shown_number(raw)}")
        if name == "context_window":
            value = _window(value, variable)
        provider = replace(provider, **{name: value})
        if name == "context_window":
            provider = replace(provider, window_source="env")
    return provider


def _window(value: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (
            MIN_WINDOW <= value <= MAX_WINDOW):
        raise ConfigError(f"{where} must be a number of tokens from {MIN_WINDOW:,} to "
                          f"{MAX_WINDOW:,}, not {shown_number(value)}")
    return value


def shown_number(value: object) -> str:
    """A value for a message: an absurdly long number is described, not printed whole."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= 24:
        return text
    return f"a {len(text)}-digit number" if text.isdigit() else f"a {len(text)}-character value"


#: a config file is a few KB; more is not one (SELFREF_CONFIG=/dev/zero read without end)
MAX_CONFIG_BYTES = 1 << 20


def _read_config_text(path: Path) -> str | None:
    """The config file's text, None when there is none.

    Only a regular file (a link to one is followed: a config may live in a dotfiles
    repository) of at most :data:`MAX_CONFIG_BYTES` is read. The open does not wait: a
    FIFO named by SELFREF_CONFIG hung the program before its first line, a device was
    read without end; both are refused with one line.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(
                st.st_mode) else "a device or socket"
            raise ConfigError(f"config file {path} is {kind}, not a file; point "
                              "SELFREF_CONFIG or --config at a config.toml")
        data = os.read(fd, MAX_CONFIG_BYTES + 1)
        while len(data) <= MAX_CONFIG_BYTES and (more := os.read(fd, MAX_CONFIG_BYTES)):
            data += more
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES // (1 << 20)} MB, "
                          "not a config.toml; check the path")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"config file {path} is not UTF-8 text (line {line}); save it as "
                          "UTF-8") from None


def _read_toml(path: Path) -> dict[str, Any]:
    text = _read_config_text(path)
    if text is None:
        return {}
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc} — fix that line or move the file "
                          "away") from None
    _refuse_plain_keys(path, data, "")
    unknown = sorted(set(data) - _TOP_LEVEL)
    if unknown:
        raise ConfigError(f"{path}: unknown setting '{unknown[0]}'"
                          f"{_belongs(unknown[0], '')} (known: "
                          f"{', '.join(sorted(_TOP_LEVEL))})")
    return data


def _belongs(name: str, where: str) -> str:
    """Where a setting found in the wrong table goes (" — …"), or "": TOML puts every
    line below a ``[table]`` line into that table, so ``review_compaction = true``
    written at the top or appended after a profile is not in [agent]."""
    if name in _AGENT_FIELDS and where != "agent":
        return " — it is an [agent] setting: put it below an [agent] line"
    if name in _PROFILE_TYPES and not where.startswith("providers."):
        return (" — it is a provider setting: put it below a [providers.NAME] line "
                "(and default_provider = \"NAME\" at the top)")
    return ""


def _refuse_plain_keys(path: Path, table: Mapping[str, Any], where: str) -> None:
    for name, value in table.items():
        if name == "api_key":
            place = f"[{where}]" if where else "the top level"
            raise ConfigError(f"{path}: {place} holds a plain-text api_key; delete it, export "
                              "the key in an environment variable and set api_key_env = "
                              "\"THAT_VARIABLE\" instead")
        if isinstance(value, Mapping):
            _refuse_plain_keys(path, value, f"{where}.{name}" if where else name)


def _table(path: Path, data: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: '{name}' must be a table ([{name}])")
    return value


def _check(path: Path, where: str, name: str, value: Any, types: tuple[type, ...]) -> Any:
    # bool is an int to isinstance: a true/false is refused where a number is wanted
    if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
        wanted = " or ".join(t.__name__ for t in types)
        raise ConfigError(f"{path}: [{where}] {name} must be {wanted}, not {value!r}")
    return value


def _profile(path: Path, name: str, raw: Any) -> ProviderConfig:
    where = f"providers.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{where}] must be a table")
    values: dict[str, Any] = {}
    for field_name, value in raw.items():
        if field_name not in _PROFILE_TYPES:
            raise ConfigError(f"{path}: unknown setting '{field_name}' in [{where}]"
                              f"{_belongs(field_name, where)} (known: "
                              f"{', '.join(sorted(_PROFILE_TYPES))})")
        values[field_name] = _check(path, where, field_name, value, _PROFILE_TYPES[field_name])
        least, what = _PROFILE_LEAST.get(field_name, (None, ""))
        if least is not None and not value >= least:
            raise ConfigError(f"{path}: [{where}] {field_name} must be {what}, not "
                              f"{shown_number(value)}")
    if "temperature" in values:
        values["temperature"] = float(values["temperature"])
    return ProviderConfig(name=name, **values)


def _agent(path: Path, raw: dict[str, Any]) -> AgentSettings:
    defaults = AgentSettings()
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "system_prompt":
            name = "base_system_prompt"
        if name not in _AGENT_FIELDS:
            raise ConfigError(f"{path}: unknown setting '{name}' in [agent]"
                              f"{_belongs(name, 'agent')} (known: "
                              f"{', '.join(sorted(_AGENT_FIELDS))})")
        if name == "allowed_roots":
            roots = _check(path, "agent", name, value, (list,))
            values[name] = tuple(Path(str(r)).expanduser() for r in roots)
            continue
        default = getattr(defaults, name)
        types: tuple[type, ...] = (int, float) if isinstance(default, float) else (type(default),)
        values[name] = _check(path, "agent", name, value, types)
        if isinstance(default, float):
            values[name] = float(value)
    settings = replace(defaults, **values)
    if settings.step_limit < 1:
        raise ConfigError(f"{path}: [agent] step_limit must be at least 1")
    if not 0 < settings.auto_compact_ratio <= 1:
        raise ConfigError(f"{path}: [agent] auto_compact_ratio must be between 0 and 1")
    if settings.memory_writes not in MEMORY_WRITES:
        raise ConfigError(f"{path}: [agent] memory_writes must be one of "
                          f"{', '.join(repr(v) for v in MEMORY_WRITES)}, not "
                          f"{settings.memory_writes!r}")
    return settings


def _keymap(path: Path, raw: dict[str, Any]) -> dict[str, str]:
    return {str(binding): _check(path, "keymap", binding, keys, (str,))
            for binding, keys in raw.items()}


_MCP_TYPES: dict[str, tuple[type, ...]] = {
    "command": (str,), "args": (list,), "env": (dict,), "cwd": (str,), "url": (str,),
    "headers": (dict,), "trust": (list,), "enabled": (bool,), "start_timeout_s": (int, float),
    "call_timeout_s": (int, float), "max_message_mb": (int, float),
}
_SECRET_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}|^\$[A-Za-z_][A-Za-z0-9_]*$")


def _mcp_servers(path: Path, raw: dict[str, Any]) -> tuple[McpServerConfig, ...]:
    unknown = sorted(set(raw) - {"servers"})
    if unknown:
        raise ConfigError(f"{path}: unknown setting '{unknown[0]}' in [mcp] (known: servers)")
    servers = raw.get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: [mcp.servers] must be a table of [mcp.servers.NAME] tables")
    return tuple(_mcp_server(path, name, table) for name, table in servers.items())


def load_mcp_servers(path: Path) -> tuple[McpServerConfig, ...]:
    """Every ``[mcp.servers.NAME]`` of ``path`` as it reads now (``/mcp reload``): the
    whole ``[mcp]`` table must be right, as at start-up; ConfigError in its words."""
    return _mcp_servers(path, _table(path, _read_toml(path), "mcp"))


def load_mcp_server(path: Path, name: str) -> McpServerConfig | None:
    """``[mcp.servers.NAME]`` of ``path`` as it reads now, None when the file has no such
    table: a restart takes what the person fixed since the app started. Only that table
    is taken (another server's changes wait for the app's restart); ConfigError when
    the file or that table is not right, in the words a start would use."""
    data = _read_toml(path)
    servers = _table(path, data, "mcp").get("servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: [mcp.servers] must be a table of [mcp.servers.NAME] tables")
    raw = servers.get(name)
    return None if raw is None else _mcp_server(path, name, raw)


def _mcp_server(path: Path, name: str, raw: Any) -> McpServerConfig:
    where = f"mcp.servers.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{where}] must be a table")
    for key, value in raw.items():
        if key not in _MCP_TYPES:
            raise ConfigError(f"{path}: unknown setting '{key}' in [{where}] (known: "
                              f"{', '.join(sorted(_MCP_TYPES))})")
        if key == "enabled":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: [{where}] enabled must be true or false")
        else:
            _check(path, where, key, value, _MCP_TYPES[key])
    command, url = raw.get("command", ""), raw.get("url", "")
    if bool(command) == bool(url):
        raise ConfigError(f"{path}: [{where}] needs exactly one of command (a stdio server) or "
                          "url (a streamable HTTP server)")
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{path}: [{where}] url must start with http:// or https://")
    lists = {k: _strings(path, where, k, raw.get(k, [])) for k in ("args", "trust")}
    tables = {k: _string_table(path, where, k, raw.get(k, {})) for k in ("env", "headers")}
    for header, value in tables["headers"]:
        if not _SECRET_REF.search(value):
            raise ConfigError(f"{path}: [{where}] headers.{header} must name an environment "
                              f"variable (e.g. \"Bearer ${{DOCS_TOKEN}}\"), never hold the value")
    if command and tables["headers"]:
        raise ConfigError(f"{path}: [{where}] headers are for url servers; use env for a command")
    limits = {}
    for key, default, low in (("start_timeout_s", 30.0, 0.0), ("call_timeout_s", 300.0, 0.0),
                              ("max_message_mb", 20.0, 0.0)):
        limits[key] = float(raw.get(key, default))
        if not low < limits[key] < float("inf"):
            raise ConfigError(f"{path}: [{where}] {key} must be a number above 0")
    return McpServerConfig(
        name=name, command=command, args=lists["args"], env=tables["env"],
        cwd=raw.get("cwd"), url=url, headers=tables["headers"], trust=lists["trust"],
        enabled=raw.get("enabled", True), **limits,
    )


def _strings(path: Path, where: str, key: str, value: list) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: [{where}] {key} must be a list of strings")
    return tuple(value)


def _string_table(path: Path, where: str, key: str, value: dict) -> tuple[tuple[str, str], ...]:
    if not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{path}: [{where}] {key} values must be strings")
    return tuple((str(k), v) for k, v in value.items())
