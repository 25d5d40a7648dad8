#!/usr/bin/env bash
# Idempotent machine setup for p4reduce: Debian packages (when root) and the pinned .venv.
# Called by `make setup`; every other make target depends on it.
set -euo pipefail
cd "$(dirname "$0")/.."

# nftables: link loss emulation where the kernel has no netem (mininet_topos/links.py).
# gcc (+ libc6-dev): p4sim's native data plane compiles each P4 program to C at pipeline load.
# tshark: the p4reduce Wireshark dissector (make wireshark) and its test.
APT_PKGS="mininet iproute2 cpp tcpdump ethtool iputils-ping procps nftables python3-venv gcc libc6-dev tshark"
missing=""
for cmd in mnexec cpp tcpdump ip ethtool ping nft gcc tshark; do
    command -v "$cmd" >/dev/null 2>&1 || missing="$missing $cmd"
done
/usr/bin/python3 -c 'import mininet.net' >/dev/null 2>&1 || missing="$missing python3-mininet"
[ -e /usr/include/stdio.h ] || missing="$missing libc6-dev"
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing Debian packages (missing:$missing)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq $APT_PKGS >/dev/null
    else
        echo "setup: warning: missing$missing and not root: install '$APT_PKGS' yourself" >&2
    fi
fi

PY=${PYTHON:-python3}
VENV=.venv
stamp=$VENV/.p4reduce-stamp
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: creating $VENV with pinned dependencies"
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r requirements.txt
    "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e .
    # torch (CPU) is optional: the DDP hook and the gloo baseline use it. The machine carries a wheel.
    "$VENV/bin/pip" install -q --disable-pip-version-check torch==2.13.0 \
        || echo "setup: torch 2.13.0 not installable here; the DDP hook and gloo baseline will be skipped" >&2
    echo "$want" > "$stamp"
fi

# Debian's mininet module lives in /usr/lib/python3/dist-packages; expose only it to the venv.
mn_src=$(/usr/bin/python3 -c 'import mininet, os; print(os.path.dirname(mininet.__file__))' 2>/dev/null || true)
if [ -n "$mn_src" ]; then
    mkdir -p "$VENV/mininet-only"
    ln -sfn "$mn_src" "$VENV/mininet-only/mininet"
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$(cd "$VENV/mininet-only" && pwd)" > "$site/mininet-only.pth"
fi
if ! "$VENV/bin/python" -c 'import mininet.net' 2>/dev/null; then
    echo "setup: warning: the venv cannot import mininet (Debian package 'mininet' missing?)" >&2
fi
