# tests/tally.sh - the count of checks of the shell test drivers, sourced
# after `set -u`:   . "$(dirname "$0")/../tally.sh"
# ok and bad count a check (bad prints FAIL: and the reason); `tally [LABEL]`
# prints "[LABEL: ]N passed, M failed" and returns non-zero after a failure,
# so a driver ends with it.
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
tally() { echo "${1:+$1: }$pass passed, $fail failed"; [ "$fail" -eq 0 ]; }
