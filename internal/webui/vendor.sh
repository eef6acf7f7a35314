#!/usr/bin/env bash
# Refreshes the console's vendored libraries from npm (run by hand when
# upgrading; the output is committed, so `go build` needs no Node). Usage:
#   bash internal/webui/vendor.sh [preact@VER htm@VER uplot@VER]
# Bare module specifiers ("preact") are rewritten to relative paths, since
# the console loads plain ES modules with no import map (CSP: no inline script).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$here/static/vendor
pkgs=("${@:-preact htm uplot}")
[ $# -gt 0 ] || pkgs=(preact htm uplot)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
for p in "${pkgs[@]}"; do npm pack --silent "$p" >/dev/null; done
for f in *.tgz; do mkdir -p "x/${f%.tgz}"; tar xzf "$f" -C "x/${f%.tgz}"; done
pre=$(ls -d x/preact-*/package); htm=$(ls -d x/htm-*/package); up=$(ls -d x/uplot-*/package)
cp "$pre/dist/preact.mjs" "$out/preact.mjs"
sed 's#from"preact"#from"./preact.mjs"#g; s#from "preact"#from "./preact.mjs"#g' "$pre/hooks/dist/hooks.mjs" > "$out/hooks.mjs"
cp "$htm/dist/htm.mjs" "$out/htm.mjs"
cp "$up/dist/uPlot.esm.js" "$out/uPlot.esm.js"
cp "$up/dist/uPlot.min.css" "$out/uPlot.min.css"
if grep -q 'from *"preact"' "$out/hooks.mjs"; then echo "vendor.sh: a bare import is left in hooks.mjs" >&2; exit 1; fi
{
	echo "# Vendored libraries of the console"
	echo
	echo "Fetched from npm by \`internal/webui/vendor.sh\` on $(date -u +%Y-%m-%d). Not modified, except"
	echo "\`hooks.mjs\`, whose \`from \"preact\"\` import is rewritten to \`./preact.mjs\`."
	echo
	echo "| package | version | license | files |"
	echo "|---|---|---|---|"
	for d in "$pre" "$htm" "$up"; do
		name=$(node -p "require('./$d/package.json').name"); ver=$(node -p "require('./$d/package.json').version"); lic=$(node -p "require('./$d/package.json').license")
		case $name in preact) files="preact.mjs, hooks.mjs";; htm) files="htm.mjs";; uplot) files="uPlot.esm.js, uPlot.min.css";; esac
		echo "| $name | $ver | $lic | $files |"
		cp "$d/LICENSE" "$out/LICENSE.$name"
	done
} > "$out/VERSIONS.md"
echo "vendored into $out"
