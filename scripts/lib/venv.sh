# Sourced by scripts/serve, scripts/test, scripts/lock and scripts/build-zipapp.
#
#   gw_python               the interpreter that builds venvs: $GW_PYTHON, else python3 (>= 3.11)
#   ensure_venv ROOT LOCK   ROOT/.venv holding requirements/LOCK.lock (hash-checked) and gw
#   ensure_tools ROOT NAME REQUIREMENT...
#                           ROOT/build/tools-NAME, a throwaway venv with pinned build tools;
#                           prints its bin directory
#
# The dev venv and dist/gw.pyz are built from the same locks (requirements/), so what is
# tested is what ships: requirements/dev.lock is requirements/runtime.lock plus the dev
# tools, compiled against it (./scripts/lock).

# This machine's pip configuration names local mirrors that lack some packages, and pip
# warns once per such package: harmless, and hundreds of lines. Dropped from its stderr.
quiet_pip() {
  "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

gw_python() {
  local python="${GW_PYTHON:-python3}"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "gw needs Python >= 3.11; set GW_PYTHON to one" >&2
    return 1
  fi
  printf '%s\n' "$python"
}

# Re-installs only when the lock or pyproject.toml changed since the last install (the
# stamp). pip installs the lock with --require-hashes, so an incomplete lock or a file whose
# hash does not match fails here; then gw itself goes in editable and with --no-deps, so
# nothing outside the lock is pulled in by pyproject's looser ranges.
ensure_venv() {
  local root="$1" lock_name="$2"
  local lock="$root/requirements/$lock_name.lock" venv="$root/.venv" python
  python="$(gw_python)" || return 1
  if [ ! -f "$lock" ]; then
    echo "missing $lock: run ./scripts/lock" >&2
    return 1
  fi
  if ! "$venv/bin/python" -c '' 2>/dev/null; then
    # Missing, or its interpreter went away (a pyenv upgrade): build it afresh.
    echo "creating $venv" >&2
    "$python" -m venv --clear "$venv"
  fi
  local stamp="$venv/.gw-installed" want
  want="$lock_name $(cat "$lock" "$root/requirements/pip.lock" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing requirements/$lock_name.lock and gw into .venv" >&2
    local pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
    quiet_pip "${pip[@]}" install --require-hashes -r "$root/requirements/pip.lock"
    quiet_pip "${pip[@]}" install --require-hashes -r "$lock"
    quiet_pip "${pip[@]}" install --no-deps -e "$root"
    echo "$want" > "$stamp"
  fi
}

ensure_tools() {
  local root="$1" name="$2"
  shift 2
  local venv="$root/build/tools-$name" python
  local stamp="$venv/.gw-tools" want="$*"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! "$venv/bin/python" -c '' 2>/dev/null; then
    python="$(gw_python)" || return 1
    echo "installing $* into build/tools-$name" >&2
    "$python" -m venv --clear "$venv" >&2
    quiet_pip "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" >&2
    echo "$want" > "$stamp"
  fi
  printf '%s\n' "$venv/bin"
}
