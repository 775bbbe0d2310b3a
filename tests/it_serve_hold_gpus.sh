#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_serve_hold_gpus.sh: a node daemon under a controller's caps that restarts over fewer GPUs
# (some fell off the bus), then over all of them again, holds every one at no more than its
# held cap from its first answer on (review p31 F3).  Eight simulated H200s held at 225 W
# through PUT /v1/caps (`pfi ctl caps`, as a controller sends them); kill -9; a start over four
# of them (same UUIDs); kill -9; a start over the eight with a fresh simulator state (a reboot:
# every limit at its 700 W default).  Before, the four-GPU start saved a hold of four GPUs and
# the eight-GPU start left GPUs 4-7 at 700 W until the controller's next caps.  Second, a GPU
# that no hold ever named (held over four, back over eight) is put at its minimum limit, and
# the log says so.  Both times `pfi restore` puts every GPU back at its original 700 W.
# Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
name=it_serve_hold_gpus
. "$(dirname "$0")/support/node_env.sh"
ctl() { "$PFI" ctl --socket "$T/n.sock" --token-file "$T/token" "$@"; }
# Four GPUs with the UUIDs of h200x8-idle's first four (same simulator seed).
cat >"$T/four.json" <<'EOF'
{"name": "h200x4", "gpu": {"type": "H200-SXM"}, "gpus": 4, "gpus_per_host": 4, "seed": 1}
EOF
EIGHT="--backend sim --sim h200x8-idle"
FOUR="--backend sim --sim $T/four.json"
limits() { "$PFI" gpus $HW --read-only --json | jq -c '[.gpus[].limit_w]'; }
uuids() { "$PFI" gpus $HW --read-only --json | jq -c '[.gpus[].uuid]'; }
# reboot: the daemon killed, the node's GPUs back at their defaults (a fresh simulator state)
reboot() { kill -9 "$SERVE"; wait "$SERVE" 2>/dev/null; SERVE=""; rm -f "$PFI_SIM_STATE"; }
caps_all() { # N W EPOCH: every one of N GPUs capped at W W
    list=""
    i=0
    while [ $i -lt "$1" ]; do list="$list${list:+,}$i=$2"; i=$((i + 1)); done
    ctl caps "$list" --epoch "$3" >/dev/null || fail "caps $list"
}
restore_all() { # the originals back, then every GPU of the eight at 700 W
    "$PFI" restore $EIGHT --journal "$T/n.journal" >"$T/restore.out" 2>&1 ||
        fail "pfi restore: $(cat "$T/restore.out")"
    HW=$EIGHT
    [ "$(limits)" = "[700,700,700,700,700,700,700,700]" ] ||
        fail "pfi restore left $(limits), not every GPU at its original 700 W"
}

# ---- held over eight, restarted over four, then over eight at their defaults ----
HW=$EIGHT
start_node n
caps_all 8 225 1
[ "$(limits)" = "[225,225,225,225,225,225,225,225]" ] || fail "caps 225 W: $(limits)"
reboot
HW=$FOUR
[ "$(uuids)" = "$(HW=$EIGHT uuids | jq -c '.[:4]')" ] || fail "the four GPUs are not the eight's first four"
start_node n
[ "$(limits)" = "[225,225,225,225]" ] || fail "the start over four GPUs: $(limits), not their held 225 W"
ctl caps 0=230 --epoch 2 >/dev/null || fail "caps 0=230" # a decision over four: the hold saved again
reboot
HW=$EIGHT
start_node n
# Right after the daemon answers, before any controller: no GPU above its held cap.
got=$(limits)
[ "$got" = "[230,225,225,225,225,225,225,225]" ] ||
    fail "the start over eight GPUs again: $got, GPUs 4-7 must be at their held 225 W"
first=$got
[ "$(ctl health | jq -r .mode)" = external ] || fail "the held caps are not in external mode"
grep -q "4 GPU(s) held before the restart are not on the node now" "$T/serve.log" ||
    fail "the start over four GPUs does not say four held GPUs are missing"
stop_serve KILL
restore_all

# ---- held over four, back over eight: GPUs 4-7 were never held ----
rm -f "$T/serve.db" "$T/n.journal" "$PFI_SIM_STATE"
HW=$FOUR
start_node n
caps_all 4 300 1
reboot
HW=$EIGHT
start_node n
got=$(limits)
[ "$got" = "[300,300,300,300,200,200,200,200]" ] ||
    fail "over eight after a hold of four: $got, GPUs 4-7 (never held) must be at their 200 W minimum"
grep -q "4 GPU(s) the hold does not name put at their minimum limit" "$T/serve.log" ||
    fail "the start does not say the GPUs the hold does not name went to their minimum"
[ "$(ctl gpus | jq -c '[.gpus[].original_limit_w]')" = "[700,700,700,700,700,700,700,700]" ] ||
    fail "the originals: $(ctl gpus | jq -c '[.gpus[].original_limit_w]')"
stop_serve KILL
restore_all
echo "$name: 8 GPUs held, a restart over 4, then over 8 at 700 W: $first; a hold of 4 back over 8: $got; pfi restore put all 8 back at 700 W both times"
