# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that start a daemon (`pfi serve`, `pfi cluster serve`) in the background
# with --port-file.  The caller defines fail().
#   wait_listening PID FILE WHAT  waits until FILE (the port file) is written; fails the test
#                                 ("WHAT exited at start") when PID exits first, or after 30 s
wait_listening() { # PID FILE WHAT (above)
    i=0
    while [ ! -s "$2" ]; do
        kill -0 "$1" 2>/dev/null || fail "$3 exited at start"
        i=$((i + 1)); [ $i -gt 600 ] && fail "$3 did not start listening"
        sleep 0.05
    done
}
