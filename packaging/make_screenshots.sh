#!/usr/bin/env bash
# The README's screenshots, made with `ckptscope --screenshot` from the demo
# experiments (written by `packaging/bootstrap.sh run`, or here when missing).
#
#   packaging/make_screenshots.sh [BUILD_DIR]   (default build/dev)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$REPO/build/dev}"
APP="$BUILD/app/gui/ckptscope"
DEMO="$REPO/build/demo-experiments"
OUT="$REPO/docs/screenshots"
[[ -x "$APP" ]] || { echo "make_screenshots: build $APP first (packaging/bootstrap.sh test)" >&2; exit 1; }
[[ -d "$DEMO" ]] || /usr/bin/python3 "$REPO/resources/demo/make_demo.py" "$DEMO"
mkdir -p "$OUT"
export QT_QPA_PLATFORM=offscreen
"$APP" --screenshot "$OUT/inspect.png" --view inspect "$DEMO"
"$APP" --screenshot "$OUT/curves.png" --view curves "$DEMO"
"$APP" --screenshot "$OUT/compare.png" --view compare \
  "$DEMO/shakespeare-pretrain/shakespeare-pretrain_final.pt" "$DEMO/shakespeare-sft/shakespeare-sft_final.pt"
ls -l "$OUT"
