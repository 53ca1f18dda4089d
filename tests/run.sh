#!/usr/bin/env bash
# The test command: installs what the tests need and is missing (Debian or
# Ubuntu, with apt-get; root or sudo), sets up the platform's official SDKs
# under target/sdk/ (this needs the package registries: PyPI and npm), then
# runs `cargo test --locked`, passing on its arguments. The first build
# takes several minutes.
#
#   bash tests/run.sh                # everything
#   bash tests/run.sh --test it      # one test binary
set -euo pipefail
cd "$(dirname "$0")/.."

# What each tool is for:
#   cc          the bundled SQLite and the TLS library's assembly
#   python3     the independent HMAC and metrics checks, the Python SDK (venv)
#   node, npm   the Node SDK
#   tmux        the end-to-end console tests
#   sqlite3     reads the store apart from earshot (retention tests)
#   promtool    checks the observer's metrics and alert rules
#   postgresql  the PostgreSQL store's tests start a throwaway server of
#               their own (initdb, postgres; no service is used)
#   kill, pgrep the signal tests (procps; a minimal Debian has neither, and
#               bash's builtin kill hides it from `command -v`)
missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
{ type -P kill && type -P pgrep; } >/dev/null 2>&1 || missing+=(procps)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "tests/run.sh: run as root or install sudo, or install these yourself: $*" >&2
    exit 1
  fi
}

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: no apt-get here; install the packages for: $*" >&2
    exit 1
  fi
  echo "tests/run.sh: installing $*" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

if [ "${#missing[@]}" -gt 0 ]; then
  apt_install "${missing[@]}"
fi
# Some Node packages (NodeSource's) bundle npm and conflict with Debian's
# npm package: install it only where node came without it.
if ! command -v npm >/dev/null 2>&1; then
  apt_install npm
fi

bash tests/sdk/setup.sh
# The whole suite is one build, read once: no incremental cache and no
# line tables for earshot's own crates (its dependencies have none), which
# takes 44 % off their test build's CPU (docs/performance.md, "Building
# earshot"). A developer's own `cargo test` keeps both. Set either
# variable to choose for yourself.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-false}"
cargo test --locked "$@"
