#!/usr/bin/env bash
# fuzz.sh FUZZTIME PACKAGE:FUNCTION... — search for new fuzz inputs without
# touching the tree.
#
# `go test -fuzz` writes a failing input into the package's testdata/fuzz/,
# where every later `go test` would fail on it. So the search runs in a
# throwaway copy of the tree (tracked and untracked-but-not-ignored files,
# the committed corpora with them); a crasher it finds is kept outside the
# tree and printed with the commands that reproduce it in the checkout.
# The copy is removed at the end; the crashers' directory is kept only
# when there is one. Exit status: 0 when no target failed, 1 otherwise.
set -euo pipefail

fuzztime=${1:?usage: fuzz.sh FUZZTIME PACKAGE:FUNCTION...}
shift
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/toold-fuzz.XXXXXX")
trap 'rm -rf "$work/src"; rmdir "$work" 2>/dev/null || true' EXIT

mkdir "$work/src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$work/src"

failed=0
for t in "$@"; do
	pkg=${t%%:*} fn=${t##*:}
	echo "fuzz $fn ($pkg) for $fuzztime"
	if (cd "$work/src" && go test -run '^$' -fuzz "^$fn\$" -fuzztime "$fuzztime" "$pkg"); then
		continue
	fi
	failed=1
	dir=${pkg#./}/testdata/fuzz/$fn
	found=0
	for f in "$work/src/$dir"/*; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		[ -e "$root/$dir/$name" ] && continue
		found=1
		mkdir -p "$work/crashers/$dir"
		cp "$f" "$work/crashers/$dir/$name"
		echo
		echo "CRASHER in $fn: $work/crashers/$dir/$name"
		echo "  reproduce:  cp $work/crashers/$dir/$name $dir/ && go test -run '^$fn/$name\$' $pkg"
		echo "  then fix the code and commit the input with the fix."
	done
	[ "$found" = 1 ] || echo "$fn failed without writing an input (a build or test error above)"
done
exit "$failed"
