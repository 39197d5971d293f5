# Sourced by scripts/test: smoke tests of gw as a user installs it (dist/gw.pyz, the wheel).
#
#   smoke_gw LABEL EXPECT PY GW...
#       Runs gw from an empty directory with an empty environment (a fresh HOME, no venv,
#       PATH /usr/bin:/bin and the interpreter PY as pythonX.Y, where a zipapp run as
#       ./gw.pyz looks for it): serve on a free port, answer a chat completion on the mock,
#       fetch a dashboard file, explain the request from its trace, print the version, stop
#       on SIGTERM. GW... is the command that runs gw (e.g. `python3.12 dist/gw.pyz`, or a
#       pipx venv's gw); EXPECT is what `gw version` must say: "zipapp" (the zipapp line says
#       yes, the lock hash is requirements/runtime.lock's) or "installed" (zipapp no).
#       PY also runs the test's own HTTP client. Waits are bounded; on failure the reason and the server's log are printed.
#   find_python VERSION
#       Prints a CPython VERSION (e.g. 3.12) interpreter: $GW_PYTHON_3_12, else pythonX.Y on
#       PATH, else pyenv's newest X.Y.*; returns 1 with the places looked at when none runs.
#
# Expects $root (the checkout).

find_python() {
  local version="$1" candidate var="GW_PYTHON_${1//./_}" found=()
  local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
  candidate="${!var:-}"
  [ -n "$candidate" ] && found+=("$candidate")
  found+=("python$version")
  # pyenv's shims on PATH answer only for versions pyenv has enabled: look at its versions too.
  while IFS= read -r candidate; do found+=("$candidate"); done < <(
    ls -d "$pyenv_root"/versions/"$version".*/bin/python"$version" 2>/dev/null | sort -V -r)
  found+=("/usr/bin/python$version")
  for candidate in "${found[@]}"; do
    # The interpreter itself (sys.executable), not a shim that needs pyenv's environment.
    if "$candidate" -c "import sys; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$version' or sys.implementation.name != 'cpython')" 2>/dev/null; then
      "$candidate" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  echo "no CPython $version found (tried \$$var, python$version on PATH, $pyenv_root/versions/$version.*, /usr/bin/python$version)" >&2
  return 1
}

smoke_gw() {
  local label="$1" expect="$2" py="$3"
  shift 3
  local gw=("$@") tmp
  tmp="$(mktemp -d)"
  mkdir "$tmp/home" "$tmp/work" "$tmp/state" "$tmp/bin"
  ln -s "$py" "$tmp/bin/$("$py" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')"
  cd "$tmp/work"
  # Every command is bounded (timeout), so a hang fails the test instead of stalling it.
  bare() { env -i PATH="$tmp/bin:/usr/bin:/bin" HOME="$tmp/home" LANG=C.UTF-8 timeout 300 "$@"; }
  local server="" pid="" url="" id="" deadline out
  finish() {  # $1: the failure, or empty for success
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
      kill -KILL "$server" 2>/dev/null
      wait "$server" 2>/dev/null
    fi
    if [ -n "$1" ]; then
      echo "$label smoke test: $1" >&2
      echo "--- gw serve output" >&2
      tail -n 30 "$tmp/serve.log" >&2
    fi
    cd "$root"
    rm -rf "$tmp"
    [ -z "$1" ]
  }

  echo "$label: ${gw[*]}"
  bare "${gw[@]}" serve --port 0 --state-dir "$tmp/state" > "$tmp/serve.log" 2>&1 &
  server=$!
  # A zipapp's first run installs the bundled wheels into a venv under HOME: seconds.
  deadline=$((SECONDS + 90))
  until url="$(bare "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' \
                 "$tmp/state/server.json" 2>/dev/null)"; do
    kill -0 "$server" 2>/dev/null || { finish "gw serve exited before listening"; return 1; }
    [ "$SECONDS" -lt "$deadline" ] || { finish "no server.json after 90 s"; return 1; }
    sleep 0.2
  done
  pid="$(bare "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' \
           "$tmp/state/server.json")"
  echo "serving on $url (pid $pid)"

  id="$(bare "$py" - "$url" <<'PY'
import json, sys, urllib.request

body = {"model": "mock", "messages": [{"role": "user", "content": "hi"}]}
request = urllib.request.Request(
    sys.argv[1] + "/v1/chat/completions",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json"},
)
# The dashboard's static files shipped as package data.
with urllib.request.urlopen(sys.argv[1] + "/dashboard/assets/app.js", timeout=30) as response:
    assert b"import" in response.read(), "the dashboard's app.js is missing"
with urllib.request.urlopen(request, timeout=30) as response:
    answer = json.load(response)
    assert answer["choices"][0]["message"]["content"], answer
    print(response.headers["x-gw-request-id"])
PY
)" || { finish "the chat completion failed"; return 1; }
  echo "answered request $id"

  # Traces are written off the hot path: wait for this one to land. A zipapp is run as
  # ./gw.pyz here: its /bin/sh boot finds a Python on PATH.
  local direct=("${gw[@]}")
  [ "$expect" = zipapp ] && direct=("${gw[-1]}")
  deadline=$((SECONDS + 30))
  until out="$(bare "${direct[@]}" explain "$id" --state-dir "$tmp/state" 2>&1)"; do
    [ "$SECONDS" -lt "$deadline" ] || { finish "explain $id: $out"; return 1; }
    sleep 0.2
  done
  grep -q "mock" <<< "$out" || { finish "explain $id shows no route: $out"; return 1; }
  echo "explain $id: $(wc -l <<< "$out") lines"

  out="$(bare "${gw[@]}" version --state-dir "$tmp/state")" || { finish "version failed"; return 1; }
  echo "$out"
  [[ "$(head -n 1 <<< "$out")" == "gw "* ]] || { finish "version's first line: $out"; return 1; }
  grep -q "^python $("$py" -c 'import platform; print(platform.python_version())') " <<< "$out" \
    || { finish "gw did not run on $py"; return 1; }
  if [ "$expect" = zipapp ]; then
    grep -q "^zipapp yes" <<< "$out" || { finish "version does not say zipapp"; return 1; }
    grep -q "^lock sha256:$(sha256sum "$root/requirements/runtime.lock" | cut -d' ' -f1) " <<< "$out" \
      || { finish "version's lock hash is not requirements/runtime.lock's"; return 1; }
  else
    grep -q "^zipapp no" <<< "$out" || { finish "an installed gw says it is a zipapp"; return 1; }
  fi

  kill -TERM "$pid"
  deadline=$((SECONDS + 30))
  while kill -0 "$server" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || { finish "still running 30 s after SIGTERM"; return 1; }
    sleep 0.1
  done
  wait "$server" || true  # a SIGTERM'd uvicorn may exit non-zero; it stopped, which counts
  server=""
  finish ""
}
