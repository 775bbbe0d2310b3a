#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Manual pages and help: the pages `make` writes (pfi help --man) are valid roff (groff -ww and
# man --warnings say nothing), each command's page names every option its --help lists (for a
# family, every option of every subcommand), every --help ends with 1-3 examples, `pfi help CMD`
# is `pfi CMD --help`, pfi-serve.conf(5) names every setting the daemon takes, bash completion
# completes commands and options, and no user-facing text speaks of internal process.
set -u
for t in groff man; do
  command -v $t >/dev/null 2>&1 || { echo "FAIL: $t not found (scripts/install-deps.sh test)"; exit 1; }
done
top=$(cd "$(dirname "$0")/.." && pwd)
PFI=${PFI_BIN:?PFI_BIN is not set}
mandir=$(cd "$(dirname "$PFI")" && pwd)/man
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_man.XXXXXX")
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
export LC_ALL=C.UTF-8 MANWIDTH=100

cmds=$(sed -n 's/^PFI_COMMAND.\([a-z]*\),.*/\1/p' "$top/src/cli/commands.def")
[ "$(echo "$cmds" | wc -w)" -ge 20 ] || fail "commands.def lists only: $cmds"
# The options a help text lists ("  --name ..." lines).
opts_of() { sed -n 's/^  \(--[a-z0-9][a-z0-9-]*\).*/\1/p'; }
# The subcommands a family's help lists.
subs_of() { awk '$0 == "subcommands:" { on = 1; next } on && /^$/ { exit } on { print $1 }'; }
# The examples section: the lines after "examples:" up to the end.
check_examples() { # WHAT, help file
  awk '/^examples:$/ { on = 1; n = 0; next } on && /^  [^ ]/ { n++; next } on { on = 0; n = -1 }
       END { exit !(on && n >= 1 && n <= 3) }' "$2" || fail "$1 --help does not end with 1-3 examples"
  if grep -A3 '^examples:$' "$2" | grep -v '^examples:$' | grep -qv '^  pfi \|^  [A-Z_]*=[^ ]* pfi '; then
    fail "$1: an example is not a pfi command line: $(grep -A3 '^examples:$' "$2")"
  fi
}

# help_refuses WORDS EXTRA [MESSAGE]: pfi help WORDS EXTRA is bad input (exit 2, nothing on
# stdout) whose message names EXTRA and says what to ask (pfi help WORDS) -- or says MESSAGE.
help_refuses() {
  # shellcheck disable=SC2086
  "$PFI" help $1 $2 > "$T/ro" 2> "$T/re"
  rc=$?
  [ $rc -eq 2 ] && [ ! -s "$T/ro" ] || { fail "pfi help $1 $2: exit $rc, expected 2 and no help"; return; }
  if [ -n "${3:-}" ]; then
    grep -qF "$3" "$T/re" || fail "pfi help $1 $2 does not say \"$3\": $(cat "$T/re")"
  else
    grep -qF "unexpected argument '$2' after '${1#--man }'" "$T/re" && grep -qF "pfi help $1)" "$T/re" ||
      fail "pfi help $1 $2 does not name '$2' and pfi help $1: $(cat "$T/re")"
  fi
}

# mandoc -T lint, where installed: no warning (the pages had no date in .TH, and a .PP right
# under every .SH and .SS); without it that part is skipped (exit 77 at the end).
mandoc=$(command -v mandoc 2>/dev/null)
n_pages=0
for p in "$mandir"/*.[15]; do
  [ -f "$p" ] || continue
  n_pages=$((n_pages + 1))
  grep -m1 '^\.TH ' "$p" | grep -qE '^\.TH "[^"]+" "[15]" "[0-9]{4}-[0-9]{2}-[0-9]{2}" ' ||
    fail "$(basename "$p"): no date in its .TH line: $(grep -m1 '^\.TH ' "$p")"
  if [ -n "$mandoc" ]; then
    mandoc -T lint -W warning "$p" > "$T/mandoc.err" 2>&1
    [ -s "$T/mandoc.err" ] && fail "mandoc -T lint $(basename "$p"): $(head -n 3 "$T/mandoc.err")"
  fi
  groff -man -ww -z -Tutf8 "$p" > "$T/groff.err" 2>&1
  [ -s "$T/groff.err" ] && fail "groff -ww $(basename "$p"): $(head -n 3 "$T/groff.err")"
  man --warnings -l "$p" 2> "$T/man.err" | col -b > "$T/$(basename "$p").txt"
  [ -s "$T/man.err" ] && fail "man --warnings $(basename "$p"): $(head -n 3 "$T/man.err")"
done
want=$(($(echo "$cmds" | wc -w) + 2))
[ $n_pages -eq $want ] || fail "$n_pages manual pages in $mandir, expected $want (pfi, each command, serve.conf)"

"$PFI" --help > "$T/top" || fail "pfi --help exited $?"
check_examples "pfi" "$T/top"
for c in $cmds; do
  "$PFI" "$c" --help > "$T/h" 2>&1 || fail "pfi $c --help exited $?"
  page="$mandir/pfi-$c.1"
  [ -f "$page" ] || { fail "no page for $c"; continue; }
  cp "$T/pfi-$c.1.txt" "$T/page"
  grep -q "^NAME" "$T/page" && tr -s ' \t' '  ' < "$T/page" | grep -q " pfi-$c - " ||
    fail "pfi-$c(1) has no NAME line"
  check_examples "pfi $c" "$T/h"
  subs=$(subs_of < "$T/h")
  helps="$T/h"
  for s in $subs; do
    "$PFI" "$c" "$s" --help > "$T/h.$s" 2>&1 || fail "pfi $c $s --help exited $?"
    "$PFI" help "$c" "$s" > "$T/hh.$s" 2>&1 && cmp -s "$T/hh.$s" "$T/h.$s" ||
      fail "pfi help $c $s differs from pfi $c $s --help"
    help_refuses "$c $s" extra
    check_examples "pfi $c $s" "$T/h.$s"
    helps="$helps $T/h.$s"
    grep -q "pfi $c $s" "$T/page" || fail "pfi-$c(1) has no section for $s"
  done
  for o in $(cat $helps | opts_of | sort -u); do
    grep -q -- "$o\b" "$T/page" || fail "pfi-$c(1) lacks $o, which pfi $c${subs:+ SUB} --help lists"
  done
  # A command that takes an action (pfi help ctl job: tests/it_cli.sh) names them instead.
  if [ -n "$subs" ]; then help_refuses "$c" no-such-sub "pfi $c has no subcommand"
  else case $c in
    cluster|ctl|event) help_refuses "$c" extra "pfi $c has no action 'extra' (its actions: " ;;
    *) help_refuses "$c" extra ;;
  esac; fi
  # pfi help CMD: the command's help (the topics index and predict come first, then it).
  "$PFI" help "$c" > "$T/hh" 2>&1 || fail "pfi help $c exited $?"
  case "$c" in
    index|predict) tail -n "$(wc -l < "$T/h")" "$T/hh" | cmp -s - "$T/h" ||
                     fail "pfi help $c does not end with pfi $c --help" ;;
    *) cmp -s "$T/hh" "$T/h" || fail "pfi help $c differs from pfi $c --help" ;;
  esac
done
"$PFI" help sim run > "$T/a" && "$PFI" sim run --help > "$T/b" && cmp -s "$T/a" "$T/b" ||
  fail "pfi help sim run differs from pfi sim run --help"
help_refuses no-such-thing "" "no topic or command 'no-such-thing'"
help_refuses no-such-thing extra "no topic or command 'no-such-thing'"
for t in $("$PFI" help | sed -n 's/^  \([a-z]*\) .*/\1/p'); do help_refuses "$t" extra; done
help_refuses "--man sim" run

# pfi(1) lists every command; pfi-serve.conf(5) every setting, each in docs/serve.md too.
cp "$T/pfi.1.txt" "$T/pfi1"
for c in $cmds; do grep -q "^       $c\b" "$T/pfi1" || fail "pfi(1) does not list $c"; done
cp "$T/pfi-serve.conf.5.txt" "$T/conf5"
keys=$(sed -n 's/^       \([a-z_]*\) = .*/\1/p' "$T/conf5" | sort -u | grep .)
[ "$(echo "$keys" | wc -l)" -ge 20 ] || fail "pfi-serve.conf(5) lists only: $keys"
# (tests/test_serve_config.c checks that the daemon takes every key of its table.)
for k in $keys; do
  grep -q "^| \`$k\`" "$top/docs/serve.md" || fail "docs/serve.md's settings do not list '$k'"
done
for k in $(sed -n 's/^# *\([a-z_]*\) *=.*/\1/p; s/^\([a-z_]*\) *=.*/\1/p' "$top/contrib/pfi-serve.conf.example" | sort -u); do
  echo "$keys" | grep -qx "$k" || fail "the example config's '$k' is not in pfi-serve.conf(5)"
done

# Bash completion reads the same help.
if command -v bash >/dev/null 2>&1; then
  comp() { PATH=$(dirname "$PFI"):$PATH bash -c ". '$top/contrib/bash-completion/pfi'; COMP_WORDS=($1); COMP_CWORD=$2; _pfi; echo \${COMPREPLY[*]}"; }
  [ "$(comp 'pfi swe' 1)" = sweep ] || fail "completion of 'pfi swe': $(comp 'pfi swe' 1)"
  comp 'pfi sweep --atta' 2 | grep -qx -- --attach || fail "completion of 'pfi sweep --atta'"
  comp 'pfi sim vali' 2 | grep -qx validate || fail "completion of 'pfi sim vali'"
  comp 'pfi sim run --cap-' 3 | grep -qx -- --cap-at || fail "completion of 'pfi sim run --cap-'"
  # The actions of the commands that take one (no "subcommands:" section), as each names them
  # when given an unknown one: all offered, and again after the command's options.
  for c in cluster ctl event; do
    "$PFI" "$c" nosuch 2>&1 >/dev/null | sed 's/(pfi [a-z]* --help)//; s/; pfi [a-z]* --help//' |
      tr -c 'a-z\n' ' ' | tr ' ' '\n' | grep -vxE "|pfi|$c|unknown|command|action|nosuch|expected|or|options" |
      sort >"$T/want"
    [ "$(wc -l <"$T/want")" -ge 4 ] || fail "pfi $c names only these actions: $(cat "$T/want")"
    comp "pfi $c ''" 2 | tr ' ' '\n' | sort >"$T/got"
    cmp -s "$T/want" "$T/got" || fail "completion of 'pfi $c ': $(echo $(cat "$T/got")), its actions: $(echo $(cat "$T/want"))"
    comp "pfi $c --token-file /x ''" 4 | tr ' ' '\n' | sort | cmp -s "$T/want" - ||
      fail "completion of 'pfi $c --token-file /x ': $(comp "pfi $c --token-file /x ''" 4)"
  done
  # After an action, its own words where the help names some, not the actions again.
  [ "$(comp "pfi ctl budget ''" 3)" = "set clear" ] || fail "'pfi ctl budget ' offers: $(comp "pfi ctl budget ''" 3)"
  [ "$(comp "pfi ctl --socket /s job ''" 5)" = "add rm throughput" ] ||
    fail "'pfi ctl --socket /s job ' offers: $(comp "pfi ctl --socket /s job ''" 5)"
  [ -z "$(comp "pfi ctl health ''" 3)" ] || fail "'pfi ctl health ' offers: $(comp "pfi ctl health ''" 3)"
  [ -z "$(comp "pfi ctl job add ''" 4)" ] || fail "'pfi ctl job add ' offers: $(comp "pfi ctl job add ''" 4)"
fi

# No internal process words in what users read.
{ cat "$T"/h* "$T/top" "$T/pfi1" "$T/conf5"; cat "$top/README.md" "$top"/docs/*.md; } > "$T/all"
if grep -niE '\bissue [0-9]+|paper\.md|\bsession\b|sub-?agent|\bhelper\b' "$T/all" | head -n 5 | grep .; then
  fail "user-facing text mentions internal process (above)"
fi
[ $bad -eq 0 ] && echo "$n_pages manual pages checked; help of $(echo "$cmds" | wc -w) commands"
[ $bad -eq 0 ] && [ -z "$mandoc" ] && { echo "mandoc not found: the pages were not linted (scripts/install-deps.sh test)"; exit 77; }
exit $bad
