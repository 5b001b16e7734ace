/*
 * test_batch.c - kiln_run against direct computation, for every batch size
 * 0..70 from compiled sizes {1, 4, 16}.
 *
 * Linked with (tests/batch/run.sh):
 *   rows        tests/batch/rows.onnx at 1,4,16 (every batch axis 0: in-place chunks)
 *   rows_ref    the same model at every size 1..70: the direct computation
 *   rows_baked  rows at 1,4,16 with --batch-rule 7:1,1,1,4
 *   seq, seq_ref  tests/batch/seq.onnx (batch on axis 1: every chunk staged)
 *   mixes       tests/batch/mixes.onnx at 1,4 (Softmax over the batch)
 *   nibbles, nibbles_seq (and _ref)  int4/uint4 and float8 inputs and
 *               outputs, 3 elements a sample: packed rows start mid-byte
 *
 * For each n: the staging area is poisoned first; kiln_run's outputs must
 * match the direct computation (kiln verify's tolerance), the padded rows
 * of the staged inputs must be zero, a run without a padded chunk on an
 * in-place model must not touch the staging area, and the chunk sequence
 * must be valid and as cheap as the cheapest cover by the cost model
 * (checked by an independent search). Then explicit rules, costs, rule
 * parsing statuses, argument checks and the refusal of a model that mixes
 * rows.
 */
#include <limits.h>

#include "common.h"
#include "rows.h"
#include "rows_baked.h"
#include "rows_ref.h"
#include "seq.h"
#include "seq_ref.h"
#include "mixes.h"
#include "nibbles.h"
#include "nibbles_ref.h"
#include "nibbles_seq.h"
#include "nibbles_seq_ref.h"

static int failures, checks;

#define CHECK(cond, ...)                                                     \
	do {                                                                     \
		checks++;                                                            \
		if (!(cond)) {                                                       \
			failures++;                                                      \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
		}                                                                    \
	} while (0)

enum { NMAX = 70 };

/* The cheapest cover of n by an independent exhaustive search (memoised):
 * any sequence of sizes whose sum reaches n, all but the last full. */
static double cheapest(const kiln_model *m, const double *cost, int64_t n, double *memo)
{
	if (n <= 0)
		return 0;
	if (memo[n] >= 0)
		return memo[n];
	double best = -1;
	for (int i = 0; i < m->nbatches; i++) {
		double v = cost[i] + cheapest(m, cost, n - m->batches[i], memo);
		if (best < 0 || v < best)
			best = v;
	}
	return memo[n] = best;
}

static double sequence_cost(const kiln_model *m, const double *cost, const int64_t *chunks, int k)
{
	double c = 0;
	for (int j = 0; j < k; j++)
		for (int i = 0; i < m->nbatches; i++)
			if (m->batches[i] == chunks[j])
				c += cost[i];
	return c;
}

/* Chunks: sizes compiled, all but the last full, the last padded less than its size. */
static int valid_sequence(const kiln_model *m, int64_t n, const int64_t *chunks, int k)
{
	int64_t sum = 0;
	for (int j = 0; j < k; j++) {
		int compiled = 0;
		for (int i = 0; i < m->nbatches; i++)
			compiled |= m->batches[i] == chunks[j];
		if (!compiled || (j < k - 1 && sum + chunks[j] >= n && n > 0))
			return 0;
		sum += chunks[j];
	}
	return n == 0 ? k == 0 : sum >= n && sum - n < chunks[k - 1];
}

static int all_bytes(const unsigned char *p, uint64_t n, unsigned char v)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* After a run whose last chunk (size s, `valid` rows) was staged: the padded
 * rows of every batched input in the staging area must be zero. */
static int padded_rows_zero(const kiln_model *m, kiln_context *ctx, int64_t s, int64_t valid)
{
	unsigned char *stg = kiln_context_staging(ctx, NULL);
	uint64_t off = 0;
	int64_t maxb = m->batches[m->nbatches - 1];
	for (int t = 0; t < m->ninputs; t++) {
		uint64_t outer, row;
		uint64_t bytes = tbytes(&m->inputs[t], maxb, &outer, &row);
		if (m->inputs[t].batch_axis >= 0 && is_4bit(m->inputs[t].dtype)) {
			for (uint64_t o = 0; o < outer; o++)
				for (uint64_t i = (o * (uint64_t)s + (uint64_t)valid) * row;
				     i < (o + 1) * (uint64_t)s * row; i++)
					if ((stg[off + i / 2] >> (4 * (i & 1))) & 15)
						return 0;
		} else if (m->inputs[t].batch_axis >= 0)
			for (uint64_t o = 0; o < outer; o++)
				if (!all_bytes(stg + off + (o * (uint64_t)s + (uint64_t)valid) * row,
				               (uint64_t)(s - valid) * row, 0))
					return 0;
		off += KILN_ALIGN64(bytes);
	}
	return 1;
}

/* One n through kiln_run, checked every way. */
static void check_n(const kiln_model *m, const kiln_model *ref, kiln_context *ctx, int64_t n,
                    uint64_t seed, const char *what)
{
	Bufs got, want;
	bufs_make(&got, m, n, seed, 0x7f);
	bufs_make(&want, m, n, seed, 0);
	uint64_t sbytes;
	unsigned char *stg = kiln_context_staging(ctx, &sbytes);
	memset(stg, 0xff, sbytes);   /* poison: NaN floats, -1 integers */
	int64_t chunks[128];
	int k = -1;
	CHECK(kiln_context_plan(ctx, n, chunks, 128, &k) == KILN_OK, "%s n=%lld: plan", what,
	      (long long)n);
	CHECK(valid_sequence(m, n, chunks, k), "%s n=%lld: invalid chunk sequence", what, (long long)n);
	int st = kiln_run(ctx, n, got.vin, got.vout);
	CHECK(st == KILN_OK, "%s n=%lld: kiln_run: %s", what, (long long)n, kiln_status_string(st));
	if (n == 0) {
		CHECK(all_bytes(stg, sbytes, 0xff), "%s n=0 touched the staging area", what);
		for (int t = 0; t < m->noutputs; t++)
			CHECK(all_bytes(got.out[t], tbytes(&m->outputs[t], 0, NULL, NULL), 0x7f),
			      "%s n=0 wrote an output", what);
	} else {
		CHECK(run_direct(ref, &got, &want) == KILN_OK, "%s n=%lld: direct run", what,
		      (long long)n);
		char why[256] = "";
		CHECK(outputs_match(m, &got, &want, why, sizeof why), "%s n=%lld: %s", what,
		      (long long)n, why);
		int64_t sum = 0;
		for (int j = 0; j < k; j++)
			sum += chunks[j];
		int inplace = 1;
		for (int t = 0; t < m->ninputs + m->noutputs; t++) {
			const kiln_tensor_desc *d = t < m->ninputs ? &m->inputs[t] : &m->outputs[t - m->ninputs];
			uint64_t outer, row;
			tbytes(d, 1, &outer, &row);
			/* 4-bit rows of odd length start mid-byte: every chunk is staged */
			inplace &= d->batch_axis < 0 || (outer == 1 && !(is_4bit(d->dtype) && (row & 1)));
		}
		if (sum > n)
			CHECK(padded_rows_zero(m, ctx, chunks[k - 1], chunks[k - 1] - (sum - n)),
			      "%s n=%lld: padded rows are not zero", what, (long long)n);
		else if (inplace)
			CHECK(all_bytes(stg, sbytes, 0xff), "%s n=%lld: full chunks were staged", what,
			      (long long)n);
	}
	bufs_free(&got);
	bufs_free(&want);
}

/* The chosen plan of every n is as cheap as the cheapest cover. */
static void check_costs(const kiln_model *m, kiln_context *ctx, const char *what)
{
	const double *cost = kiln_context_costs(ctx);
	double memo[NMAX + 1];
	for (int i = 0; i <= NMAX; i++)
		memo[i] = -1;
	for (int64_t n = 1; n <= NMAX; n++) {
		int64_t chunks[128];
		int k;
		kiln_context_plan(ctx, n, chunks, 128, &k);
		int compiled = 0;
		for (int i = 0; i < m->nbatches; i++)
			compiled |= m->batches[i] == n;
		if (compiled) {
			CHECK(k == 1 && chunks[0] == n, "%s n=%lld: a compiled size must run directly", what,
			      (long long)n);
			continue;
		}
		double got = sequence_cost(m, cost, chunks, k), best = cheapest(m, cost, n, memo);
		CHECK(fabs(got - best) <= 1e-9 * best, "%s n=%lld: plan costs %g, cheapest %g", what,
		      (long long)n, got, best);
	}
}

static void check_model(const kiln_model *m, const kiln_model *ref, const char *what)
{
	CHECK(m->batch_independent == 1, "%s: not batch independent: %s", what,
	      m->batch_mixing ? m->batch_mixing : "?");
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	CHECK(st == KILN_OK, "%s: context: %s", what, kiln_status_string(st));
	if (st)
		return;
	for (int64_t n = 0; n <= NMAX; n++)
		check_n(m, ref, ctx, n, 1000 + (uint64_t)n, what);
	check_costs(m, ctx, what);

	/* Other costs change the plans: size 1 cheapest per row. */
	double c1[3] = {1, 10, 100};
	CHECK(kiln_context_set_costs(ctx, c1) == KILN_OK, "%s: set_costs", what);
	check_costs(m, ctx, what);
	int64_t chunks[128];
	int k;
	kiln_context_plan(ctx, 7, chunks, 128, &k);
	CHECK(k == 7 && chunks[0] == 1, "%s: with size 1 cheapest, 7 must be 7 x 1", what);
	check_n(m, ref, ctx, 7, 7, what);
	/* Past the table's bound (256 here) chunks are counted at once: exact,
	 * saturated at INT_MAX, never a loop over n (issue 14). */
	k = 0;
	CHECK(kiln_context_plan(ctx, 300, chunks, 128, &k) == KILN_LIMIT && k == 300 &&
	      chunks[127] == 1, "%s: 300 must be 300 x 1 (got %d)", what, k);
	CHECK(kiln_context_plan(ctx, 1000000000000, chunks, 128, &k) == KILN_LIMIT && k == INT_MAX &&
	      chunks[0] == 1 && chunks[127] == 1, "%s: n = 10^12 must count %d chunks (got %d)", what,
	      INT_MAX, k);
	/* Equal costs: the fewest chunks, heavy padding (16 for 5). */
	double c2[3] = {100, 100, 100};
	kiln_context_set_costs(ctx, c2);
	kiln_context_plan(ctx, 5, chunks, 128, &k);
	CHECK(k == 1 && chunks[0] == 16, "%s: with equal costs, 5 must be one padded 16", what);
	check_n(m, ref, ctx, 5, 5, what);
	double bad[3] = {1, 0, 1};
	CHECK(kiln_context_set_costs(ctx, bad) == KILN_USAGE, "%s: a zero cost must be refused", what);

	/* Explicit rules are honoured, in order, even for a compiled size. */
	const char *rules[] = {"7:4,4", "5:1,4", "20:16,1,1,1,1", "4:1,1,1,1", "33:16,16,4"};
	const int64_t want[][6] = {{4, 4}, {1, 4}, {16, 1, 1, 1, 1}, {1, 1, 1, 1}, {16, 16, 4}};
	const int wantk[] = {2, 2, 5, 4, 3};
	for (int r = 0; r < 5; r++) {
		CHECK(kiln_context_set_rule(ctx, rules[r]) == KILN_OK, "%s: rule %s", what, rules[r]);
		int64_t b = atoll(rules[r]);
		kiln_context_plan(ctx, b, chunks, 128, &k);
		int same = k == wantk[r];
		for (int j = 0; j < k && same; j++)
			same = chunks[j] == want[r][j];
		CHECK(same, "%s: rule %s not honoured", what, rules[r]);
		check_n(m, ref, ctx, b, 77 + (uint64_t)r, what);
	}
	CHECK(kiln_context_set_rule(ctx, "7:1,1,1,4") == KILN_OK, "%s: replacing a rule", what);
	kiln_context_plan(ctx, 7, chunks, 128, &k);
	CHECK(k == 4 && chunks[3] == 4, "%s: the replaced rule for 7 is not used", what);
	CHECK(kiln_context_set_rule(ctx, "9:1,4,4") == KILN_OK &&
	      kiln_context_set_rule(ctx, "10:1,1,4,4") == KILN_OK &&
	      kiln_context_set_rule(ctx, "11:1,1,1,4,4") == KILN_OK,
	      "%s: rules up to the limit", what);
	CHECK(kiln_context_set_rule(ctx, "12:4,4,4") == KILN_LIMIT, "%s: a ninth rule", what);
	kiln_context_clear_rules(ctx);
	kiln_context_plan(ctx, 7, chunks, 128, &k);
	CHECK(!(k == 4 && chunks[0] == 1 && chunks[3] == 4), "%s: rules survive clearing", what);

	/* Calibration measures every size and keeps plans optimal for the new costs. */
	double ns[3];
	CHECK(kiln_context_calibrate(ctx, 5, ns) == KILN_OK, "%s: calibrate", what);
	CHECK(ns[0] > 0 && ns[2] > 0, "%s: calibrated times", what);
	check_costs(m, ctx, what);
	for (int64_t n = 1; n <= 40; n += 13)
		check_n(m, ref, ctx, n, 500 + (uint64_t)n, what);
	kiln_context_destroy(ctx);
}

static void check_rule_parsing(void)
{
	static const int64_t sizes[] = {1, 4, 16};
	static const struct {
		const char *text;
		int status;
	} cases[] = {
		{"5:4,1", KILN_OK}, {"5:1,4", KILN_OK}, {"5:16", KILN_OK}, {"5:4,4", KILN_OK},
		{"16:16", KILN_OK}, {"70:16,16,16,16,4,1,1", KILN_OK}, {"1:1", KILN_OK},
		{"", KILN_RULE_SYNTAX}, {"5", KILN_RULE_SYNTAX}, {"5,4,1", KILN_RULE_SYNTAX},
		{":4", KILN_RULE_SYNTAX}, {"5:", KILN_RULE_SYNTAX}, {"5:4,", KILN_RULE_SYNTAX},
		{"5:4,,1", KILN_RULE_SYNTAX}, {"5: 4,1", KILN_RULE_SYNTAX}, {"5:4;1", KILN_RULE_SYNTAX},
		{"0:1", KILN_RULE_SYNTAX}, {"-5:4,1", KILN_RULE_SYNTAX}, {"5:4,-1", KILN_RULE_SYNTAX},
		{"x:4", KILN_RULE_SYNTAX}, {"5:4:1", KILN_RULE_SYNTAX}, {"5:0,4,1", KILN_RULE_SYNTAX},
		{"99999999999:16", KILN_RULE_SYNTAX},
		{"5:3,4", KILN_RULE_SIZE}, {"5:8", KILN_RULE_SIZE}, {"2:2", KILN_RULE_SIZE},
		{"9:4,4", KILN_RULE_SHORT}, {"70:16,16,16,16", KILN_RULE_SHORT}, {"2:1", KILN_RULE_SHORT},
		{"5:4,1,4", KILN_RULE_PADDING}, {"1:1,1", KILN_RULE_PADDING},
		{"4:4,4", KILN_RULE_PADDING}, {"17:16,16", KILN_OK}, {"16:16,16", KILN_RULE_PADDING},
		{"33:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", KILN_LIMIT},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		kiln_rule r;
		int st = kiln_rule_parse(cases[i].text, sizes, 3, &r);
		CHECK(st == cases[i].status, "rule \"%s\": status %d (%s), want %d (%s)", cases[i].text,
		      st, kiln_status_string(st), cases[i].status, kiln_status_string(cases[i].status));
	}
	kiln_rule r;
	CHECK(kiln_rule_parse("7:4,1,1,4", sizes, 3, &r) == KILN_OK && r.batch == 7 && r.nchunks == 4 &&
	      r.chunks[3] == 4, "parsed rule contents");
	CHECK(kiln_rule_parse(NULL, sizes, 3, &r) == KILN_USAGE, "NULL rule");
}

static void check_mixing(void)
{
	const kiln_model *m = &mixes_model;
	CHECK(m->batch_independent == 0, "mixes: must not be batch independent");
	CHECK(m->batch_mixing && strstr(m->batch_mixing, "\"over_batch\"") &&
	      strstr(m->batch_mixing, "Softmax"), "mixes: reason must name the node: %s",
	      m->batch_mixing ? m->batch_mixing : "(none)");
	kiln_context *ctx;
	CHECK(kiln_context_create(&ctx, m) == KILN_OK, "mixes: context");
	for (int64_t n = 0; n <= 9; n++) {
		Bufs got;
		bufs_make(&got, m, n, 3, 0);
		int st = kiln_run(ctx, n, got.vin, got.vout);
		int compiled = n == 0 || n == 1 || n == 4;
		CHECK(st == (compiled ? KILN_OK : KILN_BATCH_MIXING), "mixes n=%lld: status %s",
		      (long long)n, kiln_status_string(st));
		bufs_free(&got);
	}
	int64_t chunks[4];
	int k;
	CHECK(kiln_context_plan(ctx, 3, chunks, 4, &k) == KILN_BATCH_MIXING, "mixes: plan of 3");
	CHECK(kiln_context_set_rule(ctx, "3:4") == KILN_BATCH_MIXING, "mixes: a rule");
	kiln_context_destroy(ctx);
}

static void check_arguments(void)
{
	const kiln_model *m = &rows_model;
	CHECK(kiln_context_bytes(m) == ROWS_CONTEXT_BYTES && m->context_bytes == ROWS_CONTEXT_BYTES,
	      "context bytes: runtime %llu, header %llu", (unsigned long long)kiln_context_bytes(m),
	      (unsigned long long)ROWS_CONTEXT_BYTES);
	static unsigned char mem[ROWS_CONTEXT_BYTES + 1];
	kiln_context *ctx;
	CHECK(kiln_context_init(&ctx, m, mem, ROWS_CONTEXT_BYTES - 1) == KILN_USAGE, "too few bytes");
	CHECK(kiln_context_init(&ctx, m, mem + 1, ROWS_CONTEXT_BYTES) == KILN_OK, "unaligned memory");
	Bufs b;
	bufs_make(&b, m, 5, 9, 0);
	CHECK(kiln_run(NULL, 5, b.vin, b.vout) == KILN_USAGE, "NULL context");
	CHECK(kiln_run(ctx, -1, b.vin, b.vout) == KILN_USAGE, "negative n");
	CHECK(kiln_run(ctx, 6, b.vin, b.vout) == KILN_USAGE, "buffers too small for n");
	b.vin[1].dtype = KILN_INT32;
	CHECK(kiln_run(ctx, 5, b.vin, b.vout) == KILN_USAGE, "wrong element type");
	b.vin[1].dtype = KILN_INT64;
	CHECK(kiln_run(ctx, 5, b.vin, b.vout) == KILN_OK, "valid call");
	/* The typed wrapper of the generated header. */
	CHECK(rows_run(ctx, 5, b.in[0], b.in[1], b.in[2], b.out[0], b.out[1]) == KILN_OK, "rows_run");
	bufs_free(&b);

	/* The baked rule of rows_baked (kiln compile --batch-rule 7:1,1,1,4). */
	CHECK(rows_baked_model.nrules == 1, "baked rule count");
	kiln_context *bctx;
	CHECK(kiln_context_create(&bctx, &rows_baked_model) == KILN_OK, "baked context");
	int64_t chunks[8];
	int k;
	kiln_context_plan(bctx, 7, chunks, 8, &k);
	CHECK(k == 4 && chunks[0] == 1 && chunks[3] == 4, "the baked rule for 7 is not used");
	check_n(&rows_baked_model, &rows_ref_model, bctx, 7, 71, "rows_baked");
	kiln_context_destroy(bctx);
}

/* The typed entry of a model with 4-bit and float8 inputs and outputs
 * sizes their buffers as libkiln does: 5 rows of int4 [N,3] are 8 bytes. */
static void check_nibbles_typed(void)
{
	CHECK(kiln_tensor_bytes(&nibbles_model.inputs[0], 5) == 8 &&
	      kiln_tensor_bytes(&nibbles_model.outputs[2], 5) == 15, "nibbles: tensor bytes");
	kiln_context *ctx;
	CHECK(kiln_context_create(&ctx, &nibbles_model) == KILN_OK, "nibbles: context");
	Bufs got, want;
	bufs_make(&got, &nibbles_model, 5, 99, 0x7f);
	bufs_make(&want, &nibbles_model, 5, 99, 0);
	CHECK(nibbles_run(ctx, 5, got.in[0], got.in[1], got.out[0], got.out[1], got.out[2]) == KILN_OK,
	      "nibbles_run");
	CHECK(run_direct(&nibbles_ref_model, &got, &want) == KILN_OK, "nibbles: direct run");
	char why[256] = "";
	CHECK(outputs_match(&nibbles_model, &got, &want, why, sizeof why), "nibbles_run: %s", why);
	got.vin[0].bytes = 7;   /* a byte short of 15 int4 elements */
	CHECK(kiln_run(ctx, 5, got.vin, got.vout) == KILN_USAGE, "nibbles: a short int4 buffer");
	got.vin[0].bytes = 8;
	got.vin[0].dtype = KILN_UINT4;
	CHECK(kiln_run(ctx, 5, got.vin, got.vout) == KILN_USAGE, "nibbles: uint4 for int4");
	bufs_free(&got);
	bufs_free(&want);
	kiln_context_destroy(ctx);
}

int main(void)
{
	check_rule_parsing();
	check_model(&rows_model, &rows_ref_model, "rows");
	check_model(&seq_model, &seq_ref_model, "seq");
	check_mixing();
	check_arguments();
	check_model(&nibbles_model, &nibbles_ref_model, "nibbles");
	check_model(&nibbles_seq_model, &nibbles_seq_ref_model, "nibbles_seq");
	check_nibbles_typed();
	printf("batch: %d checks, %d failed\n", checks, failures);
	return failures != 0;
}
