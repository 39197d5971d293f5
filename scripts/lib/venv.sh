# Sourced by scripts/serve and scripts/test: make sure .venv exists and holds this project.
# Re-installs only when pyproject.toml changed since the last install.
ensure_venv() {
  local root="$1" extras="$2"
  local python="${GW_PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "gw needs Python >= 3.11; set GW_PYTHON to one" >&2
    return 1
  fi
  if [ ! -x "$root/.venv/bin/python" ]; then
    echo "creating $root/.venv" >&2
    "$python" -m venv "$root/.venv"
  fi
  local stamp="$root/.venv/.gw-installed" want
  want="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)-$extras"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing gw into .venv ($extras)" >&2
    "$root/.venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -e "$root[$extras]"
    echo "$want" > "$stamp"
  fi
}
