#!/usr/bin/env bash
# Installs the platform's official SDKs that tests/it/sdk_compat.rs drives
# against `earshot emulator`, under target/sdk/ (nothing outside the repo):
#
#   target/sdk/py-pydantic2/  Python virtualenv: assemblyai 1.8.x, pydantic 2
#                             (with pydantic-settings, so the SDK uses its
#                             pydantic v2 models)
#   target/sdk/py-pydantic1/  Python virtualenv: assemblyai 1.8.x, pydantic 1
#   target/sdk/node/          npm prefix: the assemblyai Node SDK 4.41.x
#
# Needs python3 (with its venv module), npm and the PyPI and npm registries;
# tests/run.sh installs the tools with apt-get when missing. Idempotent: an environment whose recorded
# requirements match is left as it is, so a second run takes a second.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON_SDK='assemblyai~=1.8.2'
NODE_SDK='assemblyai@~4.41.5'
SDK_DIR=target/sdk

mkdir -p "$SDK_DIR"

# python_env NAME REQUIREMENT...: a virtualenv at target/sdk/NAME with
# exactly these requirements, skipped when already installed.
python_env() {
  local name=$1
  shift
  local dir="$SDK_DIR/$name"
  local wanted="$*"
  if [[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$wanted" ]] &&
    "$dir/bin/python" -c 'import assemblyai' 2>/dev/null; then
    echo "sdk setup: $name up to date ($wanted)"
    return
  fi
  if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
    echo "sdk setup: python3 has no venv/ensurepip module; install python3-venv" >&2
    exit 1
  fi
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
  echo "$wanted" >"$dir/.installed"
  echo "sdk setup: $name installed: $("$dir/bin/python" -m pip freeze --disable-pip-version-check | grep -iE '^(assemblyai|pydantic)' | tr '\n' ' ')"
}

python_env py-pydantic2 "$PYTHON_SDK" 'pydantic>=2,<3' 'pydantic-settings>=2,<3'
python_env py-pydantic1 "$PYTHON_SDK" 'pydantic>=1.10.17,<2'

node_dir="$SDK_DIR/node"
if [[ -f "$node_dir/.installed" && "$(cat "$node_dir/.installed")" == "$NODE_SDK" &&
  -f "$node_dir/node_modules/assemblyai/package.json" ]]; then
  echo "sdk setup: node up to date ($NODE_SDK)"
else
  if ! command -v npm >/dev/null 2>&1; then
    echo "sdk setup: npm not found; install nodejs and npm" >&2
    exit 1
  fi
  rm -rf "$node_dir"
  mkdir -p "$node_dir"
  echo '{ "name": "earshot-sdk-compat", "private": true }' >"$node_dir/package.json"
  npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error "$NODE_SDK"
  echo "$NODE_SDK" >"$node_dir/.installed"
  echo "sdk setup: node installed: assemblyai $(node -p "require('./$node_dir/node_modules/assemblyai/package.json').version")"
fi
