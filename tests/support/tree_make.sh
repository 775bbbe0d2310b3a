# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run the tree's own make targets as a packager would (it_install.sh,
# it_systemd.sh, it_deb.sh); the caller sets $name and removes $T at exit.  Sets top (the
# source tree), bin ($PFI_BIN), build (the build directory it belongs to), san (1 when it is
# the ASan build), T (a new temporary directory), bad=0 and fail() (prints the failure and sets
# bad: the test goes on, and ends with exit $bad).  Function:
#   tree_make TARGET...  make -s in the tree on that build with the tree's own flags, so that
#                        make finds it up to date instead of rebuilding it another way
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${PFI_BIN:?PFI_BIN is not set}
build=$(cd "$(dirname "$bin")" && pwd)
san=""
nm "$bin" 2>/dev/null | grep -q __asan_init && san=1
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
bad=0
fail() { echo "FAIL: $*"; bad=1; }
tree_make() { make -s -C "$top" BUILD="$build" ${san:+SAN=1} "$@"; }
