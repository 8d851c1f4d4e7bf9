#!/usr/bin/env bash
# Install the agent CLIs pinned in tests/e2e/agents.lock into a cache OUTSIDE the repository,
# for the end-to-end suite (tests/e2e/README.md). Later runs reuse what is already there: a CLI
# whose pinned version is installed is skipped in well under a second.
#
#   bash tests/e2e/install_agents.sh [adapter ...]     # default: every adapter in agents.lock
#
# Cache: ${GITFLOW_AGENTS_E2E_CACHE:-$HOME/.cache/gitflow-agents-e2e}
#   <cache>/<adapter>-<version>/             npm --prefix (bin: node_modules/.bin/<exe>)
#   <cache>/<adapter>-<version>/venv/        a venv for PyPI CLIs (bin: venv/bin/<exe>)
#   <cache>/<adapter>-<version>/.installed   written last: its presence means "complete"
# Exit status: 0 when every requested CLI is installed, 1 when any failed (the others are
# still installed; the e2e tests of a missing CLI skip with the command to install it).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lock="$here/agents.lock"
cache="${GITFLOW_AGENTS_E2E_CACHE:-$HOME/.cache/gitflow-agents-e2e}"
install_timeout="${GITFLOW_AGENTS_E2E_INSTALL_TIMEOUT:-900}"
python="${PYTHON:-python3}"
mkdir -p "$cache"

wanted=" $* "
failed=0
start_all=$SECONDS

while read -r adapter registry package version exe; do
    case "$adapter" in '' | '#'*) continue ;; esac
    if [ $# -gt 0 ] && [[ "$wanted" != *" $adapter "* ]]; then
        continue
    fi
    dest="$cache/$adapter-$version"
    if [ -f "$dest/.installed" ]; then
        echo "e2e-install: $adapter $version already in $dest"
        continue
    fi
    echo "e2e-install: $adapter: installing $package@$version into $dest"
    # Installed straight into place (a venv records its own path); .installed is written last,
    # so an interrupted install is wiped and redone by the next run.
    rm -rf "$dest"
    mkdir -p "$dest"
    log="$dest/install.log"
    start=$SECONDS
    case "$registry" in
        npm)
            # --prefix keeps everything inside the cache; optional dependencies carry the
            # platform binaries (claude, codex, opencode); install scripts are allowed because
            # claude's postinstall links its binary.
            timeout "$install_timeout" npm install --prefix "$dest" --no-audit --no-fund \
                --loglevel=error "$package@$version" >"$log" 2>&1 </dev/null
            status=$?
            bin="node_modules/.bin/$exe"
            ;;
        pip)
            "$python" -m venv "$dest/venv" >"$log" 2>&1 </dev/null &&
                timeout "$install_timeout" "$dest/venv/bin/python" -m pip install -q \
                    "$package==$version" >>"$log" 2>&1 </dev/null
            status=$?
            bin="venv/bin/$exe"
            ;;
        *)
            echo "e2e-install: $adapter: unknown registry '$registry' in $lock" >&2
            failed=1
            continue
            ;;
    esac
    if [ "$status" -ne 0 ]; then
        echo "e2e-install: $adapter: install FAILED (exit $status), last lines of the log:" >&2
        tail -n 15 "$log" >&2
        failed=1
        continue
    fi
    if ! version_out="$(timeout 120 "$dest/$bin" --version 2>&1 </dev/null)"; then
        echo "e2e-install: $adapter: '$dest/$bin --version' FAILED: $version_out" >&2
        failed=1
        continue
    fi
    echo "$package $version $bin" >"$dest/.installed"
    echo "e2e-install: $adapter: $(echo "$version_out" | tail -n 1) in $((SECONDS - start)) s," \
        "$(du -sh "$dest" | cut -f1)"
done <"$lock"

echo "e2e-install: done in $((SECONDS - start_all)) s; cache $cache is $(du -sh "$cache" | cut -f1)"
exit "$failed"
