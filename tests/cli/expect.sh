# Sourced by the CLI-style test drivers (tests/cli/run.sh, tests/control/run.sh).
# Needs KILN, out, err (temporary files) and the counters pass and fail.
#
# expect STATUS STDERR-LINE -- ARGS...   (STDERR-LINE "" = stderr must be empty)
expect() {
	want_rc=$1 want_err=$2
	shift 3
	"$KILN" "$@" >"$out" 2>"$err"
	rc=$?
	got_err=$(cat "$err")
	if [ "$rc" -ne "$want_rc" ] || [ "$got_err" != "$want_err" ]; then
		echo "FAIL: kiln $*"
		echo "  exit $rc (want $want_rc)"
		echo "  stderr: $got_err"
		echo "  want:   $want_err"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}
