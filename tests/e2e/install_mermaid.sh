#!/usr/bin/env bash
# Install the Mermaid parser (npm `mermaid`, plus `jsdom`: mermaid's sanitizer needs a DOM) into
# a cache OUTSIDE the repository, for tests/render/test_mermaid_parse.py, which parses every chart the
# tests draw with tests/e2e/mermaid_parse.mjs. .ci/run calls this and exports MERMAID_PREFIX.
#
#   bash tests/e2e/install_mermaid.sh [DIR]
#       DIR default: ${XDG_CACHE_HOME:-$HOME/.cache}/gitflow-agents-ci/mermaid-<version>
#       prints DIR (the value for MERMAID_PREFIX) on its last line
# A complete install (DIR/.installed, written last) is reused in well under a second.
set -euo pipefail

mermaid_version=11.17.2
jsdom_version=26.1.0
dest="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/gitflow-agents-ci/mermaid-$mermaid_version}"
if [ ! -f "$dest/.installed" ]; then
    rm -rf "$dest"
    mkdir -p "$dest"
    npm install --silent --no-audit --no-fund --prefix "$dest" \
        "mermaid@$mermaid_version" "jsdom@$jsdom_version" </dev/null >&2
    echo "mermaid@$mermaid_version jsdom@$jsdom_version" >"$dest/.installed"
fi
echo "$dest"
