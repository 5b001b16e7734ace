#!/bin/sh
# CLI driver test: flags, exit codes and the exact one-line errors of the
# `kiln` command. usage: run.sh KILN FIXTURE_DIR CLI_DIR
# Each case runs from the fixture folder so paths in messages are stable.
set -u
KILN=$1
FIX=$2
HERE=$3
pass=0
fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
. "$(cd "$(dirname "$0")/../cli" && pwd)/expect.sh"
cd "$FIX" || exit 2

# expect_out FILE -- compares stdout of the last command with FILE.
expect_out() {
	if ! diff -u "$HERE/expected/$1" "$out" >/dev/null; then
		echo "FAIL: stdout differs from expected/$1:"
		diff -u "$HERE/expected/$1" "$out" | head -20
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

E="kiln: error:"
# ---- usage
expect 0 "" -- --help
grep -q "^usage: kiln <command>" "$out" && pass=$((pass + 1)) || { echo "FAIL: --help text"; fail=$((fail + 1)); }
expect 0 "" -- --version
grep -q "^kiln [0-9]*\.[0-9]*\.[0-9]*$" "$out" && pass=$((pass + 1)) || { echo "FAIL: --version text"; fail=$((fail + 1)); }
expect 2 "$E no command given
Try 'kiln --help'." --
expect 2 "$E unknown command 'frobnicate'
Try 'kiln --help'." -- frobnicate mlp.onnx
expect 2 "$E 'info' needs a MODEL file
Try 'kiln --help'." -- info
expect 2 "$E unknown option '--frob'
Try 'kiln --help'." -- info --frob mlp.onnx
expect 2 "$E --json goes with 'info', not 'check'
Try 'kiln --help'." -- check --json mlp.onnx
expect 2 "$E --max-memory needs a size in MiB, got 'lots'
Try 'kiln --help'." -- info --max-memory=lots mlp.onnx
expect 2 "$E unexpected argument 'extra.onnx'
Try 'kiln --help'." -- info mlp.onnx extra.onnx

# ---- good models
expect 0 "" -- info mlp.onnx
expect_out mlp.info
expect 0 "" -- info --json mlp.onnx
expect_out mlp.json
expect 0 "" -- check mlp.onnx
expect_out mlp.check
expect 1 "" -- check unsupported.onnx
expect_out unsupported.check
expect 1 "" -- check custom_domain.onnx
expect_out custom_domain.check
expect 0 "" -- dump if_outer.onnx
expect_out if_outer.dump
expect 0 "" -- info --json external/model.onnx
expect_out external.json

# ---- int4 weights stay packed (two a byte): w [7,5] 18 B + s [3,5] 60 B + z [3,5] 8 B
expect 0 "" -- info int4_weights.onnx
grep -q "^weight bytes: 86$" "$out" && pass=$((pass + 1)) || { echo "FAIL: int4 weight bytes"; fail=$((fail + 1)); }
int4_dir=$(mktemp -d)
expect 0 "" -- compile int4_weights.onnx --batch 1 -o "$int4_dir"
grep -q "int4_weights_weights.o (3 symbols, 86 bytes)$" "$out" && pass=$((pass + 1)) ||
	{ echo "FAIL: int4 weights object size"; cat "$out"; fail=$((fail + 1)); }
rm -rf "$int4_dir"

# ---- batch signatures and shape inference
expect 0 "" -- info --batch 2,7 shape_chain.onnx
expect_out shape_chain.info
expect 0 "" -- info --json --batch=4 mlp.onnx
expect_out mlp_batch4.json
expect 0 "" -- dump --batch 3 shape_chain.onnx
expect_out shape_chain.dump
expect 0 "" -- dump --batch 2 --plan shape_chain.onnx
expect_out shape_chain_plan.dump
expect 0 "" -- info --json --plan --batch 1,64 ../../examples/jet_tagger/model.onnx
expect_out jet_tagger_plan.json
expect 2 "$E mlp.onnx: --shape names \"nope\", which is not a graph input" -- info --shape=nope=1,2 mlp.onnx
expect 2 "$E mlp.onnx: --shape x: dim 1 is 5; the model declares 4" -- info --shape=x=2,5 mlp.onnx
expect 2 "$E mlp.onnx: --batch-dim x=5: the input has rank 2" -- info --batch-dim=x=5 mlp.onnx
expect 2 "$E unsupported.onnx: node 1 \"svm\" (SVMRegressor, ai.onnx.ml opset 3): not supported by kiln yet" -- info --batch 2 unsupported.onnx
expect 2 "$E --batch needs sizes like 1,8,64, got '0'
Try 'kiln --help'." -- info --batch=0 mlp.onnx
expect 2 "$E --batch lists a size twice: '1,1'
Try 'kiln --help'." -- info --batch 1,1 mlp.onnx
expect 2 "$E --shape needs INPUT=D0,D1,..., got 'x'
Try 'kiln --help'." -- info --shape x mlp.onnx
expect 2 "$E --plan goes with 'info' or 'dump', not 'check'
Try 'kiln --help'." -- check --plan mlp.onnx
expect 2 "$E --shape, --dim, --batch-dim and --freeze go with 'info', 'check', 'dump' or 'compile', not 'verify'; verify takes one --batch
Try 'kiln --help'." -- verify --shape=x=2,4 .
expect 2 "$E --tolerance needs RTOL,ATOL (two numbers >= 0), got '1e-3'
Try 'kiln --help'." -- verify --tolerance=1e-3 .
expect 2 "$E --tolerance needs RTOL,ATOL (two numbers >= 0), got '-1,0'
Try 'kiln --help'." -- verify --tolerance=-1,0 .
expect 2 "$E --tolerance needs RTOL,ATOL (two numbers >= 0), got '0.01,inf'
Try 'kiln --help'." -- verify --tolerance=0.01,inf .
expect 2 "$E --tolerance goes with 'verify', not 'info'
Try 'kiln --help'." -- info --tolerance=0.01,0 mlp.onnx

# ---- check --batch: compile's shape inference and plans, so what it passes compiles
expect 0 "" -- check --batch 1,64 mlp.onnx
printf 'mlp.onnx: all 3 nodes supported\nmlp.onnx: shapes inferred and buffers planned at batch 1,64\n' > "$err"
cmp -s "$err" "$out" && pass=$((pass + 1)) || { echo "FAIL: check --batch output"; cat "$out"; fail=$((fail + 1)); }
expect 1 "" -- check --shape=x=2,5 mlp.onnx
printf '%s\n' 'mlp.onnx: all 3 nodes supported' 'mlp.onnx: --shape x: dim 1 is 5; the model declares 4' 'mlp.onnx: cannot be compiled at batch 1' > "$err"
cmp -s "$err" "$out" && pass=$((pass + 1)) || { echo "FAIL: check --shape finding"; cat "$out"; fail=$((fail + 1)); }
expect 1 "" -- check --batch 2 unsupported.onnx
expect_out unsupported.check
expect 1 "" -- check --batch 1000000 --max-arena=1 mlp.onnx
grep -q "^mlp.onnx: cannot be compiled at batch 1000000$" "$out" && pass=$((pass + 1)) ||
	{ echo "FAIL: check --max-arena finding"; cat "$out"; fail=$((fail + 1)); }

# ---- bad models: one line naming the file and the tensor or node, exit 2
expect 2 "$E missing.onnx: cannot open missing.onnx: No such file or directory" -- info missing.onnx
expect 2 "$E external: external is not a regular file" -- info external
fifo=$(mktemp -u)
mkfifo "$fifo"
expect 2 "$E $fifo: $fifo is not a regular file" -- info "$fifo"
rm -f "$fifo"
expect 2 "$E bad_empty.onnx: empty file: not an ONNX model" -- info bad_empty.onnx
expect 2 "$E bad_truncated.onnx: not a valid ONNX file: onnx.ModelProto.graph at byte offset 17 runs past the end of its message (truncated file?)" -- info bad_truncated.onnx
expect 2 "$E bad_not_onnx.onnx: not a valid ONNX file: unsupported wire type 4 for onnx.ModelProto.metadata_props at byte offset 0" -- check bad_not_onnx.onnx
expect 2 "$E bad_bad_wire.onnx: not a valid ONNX file: truncated field tag at byte offset 17" -- info bad_bad_wire.onnx
expect 2 "$E bad_no_graph.onnx: not an ONNX model: no graph (an empty or non-ONNX protobuf file?)" -- info bad_no_graph.onnx
expect 2 "$E bad_dtype.onnx: initializer \"W1\" has unknown element type 99" -- info bad_dtype.onnx
expect 2 "$E bad_dup_output.onnx: node 1 \"second\" (Sigmoid, ai.onnx opset 13): output \"h\" is already produced by node 0 \"first\"" -- info bad_dup_output.onnx
expect 2 "$E bad_undefined_input.onnx: node 0 \"use\" (Add, ai.onnx opset 13): input 1 \"ghost\" is not defined by any earlier node, graph input or initializer" -- check bad_undefined_input.onnx
expect 2 "$E bad_raw_size.onnx: initializer \"w\" has 12 bytes of raw_data but its shape and type need 16" -- info bad_raw_size.onnx
expect 2 "$E bad_int4_raw.onnx: initializer \"w\" has 3 bytes of raw_data but its shape and type need 4" -- compile bad_int4_raw.onnx --batch 1 -o /nonexistent/never
expect 2 "$E bad_negative_dim.onnx: initializer \"w\" has negative dimension -2 at axis 0" -- info bad_negative_dim.onnx
expect 2 "$E ext_absolute.onnx: initializer \"w\": external data location \"/etc/hostname\" is an absolute path; it must be relative to the model's folder" -- info ext_absolute.onnx
expect 2 "$E ext_dotdot.onnx: initializer \"w\": external data location \"../weights.bin\" contains \"..\"; it must stay inside the model's folder" -- info ext_dotdot.onnx
expect 2 "$E ext_missing.onnx: initializer \"w\": cannot open external data file \"./missing.bin\": No such file or directory" -- info ext_missing.onnx
expect 2 "$E ext_range.onnx: initializer \"w\": external data bytes 64..80 lie outside \"external/weights.bin\" (72 bytes)" -- info ext_range.onnx
expect 2 "$E ext_length.onnx: initializer \"w\": external data length 4096 does not match its shape (16 bytes)" -- info ext_length.onnx
expect 2 "$E mlp.onnx: compiler memory limit of 1 MiB exceeded (see --max-memory)" -- info --max-memory=1 mlp.onnx

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
