#!/bin/sh
# Runs the given command inside a private D-Bus session with a real, unlocked gnome-keyring
# (Secret Service), as TESTING.md describes. HOME and XDG_RUNTIME_DIR are fresh temp dirs, so the
# user's own keyring is never touched; everything ends with the D-Bus session.
# Usage: scripts/with-keyring.sh <command> [args...]
set -eu
if [ "$#" -eq 0 ]; then
  echo "usage: $0 <command> [args...]" >&2
  exit 2
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/aios-keyring.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
export HOME="$T/home" XDG_RUNTIME_DIR="$T/run"
mkdir -p "$HOME"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
# The inner shell unlocks (creating) the login keyring with a throwaway password, then runs the command.
set +e
dbus-run-session -- sh -c 'printf %s pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null && exec "$@"' sh "$@"
rc=$?
set -e
exit $rc
