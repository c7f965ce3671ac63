#!/usr/bin/env bash
# Installs the system packages the tests use as real peers (see ../shared/TESTING.md):
# socat (serial pty pairs), gnome-keyring + dbus (Secret Service), chromium (login and renderer tests),
# cups/ippeveprinter + fonts-wqy-microhei (the CJK font text is printed in) + poppler-utils (pdffonts) (printer), tmux (tty prompts), ffmpeg, dunst/xvfb (notifications), udev, util-linux (setpriv: the unprivileged agent of the serial test; socat tied to its parent), bubblewrap (the sandbox of MCP adapters),
# postgresql (Debian 12's PostgreSQL 15: the clustered bridge's store; test/helpers/postgres.ts starts a private instance per run, never the system's cluster).
# Idempotent: installs only what is missing. Needs root (CI runs as root); otherwise prints what to install.
set -euo pipefail
pkgs=(cups cups-ipp-utils socat libsecret-1-dev gnome-keyring dbus chromium ffmpeg libnotify-bin dunst xvfb xauth udev tmux openssl fonts-wqy-microhei poppler-utils util-linux bubblewrap postgresql pgbouncer)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test peers: all system packages present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "test peers: missing ${missing[*]}; install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "test peers: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "test peers: installed"
