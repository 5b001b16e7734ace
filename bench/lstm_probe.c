/*
 * lstm_probe.c - one LSTM alone at batch 1, the way deepjet_like's runs:
 * kiln_f32_rnn with the default activations and W, R packed in gate blocks
 * (what the compiler stores), I = 8 inputs (or the fourth argument), T = 25
 * steps, only Y_h wanted.
 * The weights are random (the time does not depend on their values); the
 * call is repeated so that R^T stays in L2, as in the model.
 *
 * Prints the CPU time per call (median and minimum of 7 runs of CALLS
 * calls each, after 2000 warm-up calls) and a sum of Y_h, which is the
 * same for two builds whose kernels do the same operations in the same
 * order (a quick check that a change kept the bits). docs/kernels-log.md
 * ("Batch 1, the narrow block, bounded") has what it measured.
 *
 * build: cc -std=c11 -O2 -Iinclude bench/lstm_probe.c build/runtime/libkiln.a -lm -lpthread
 *        -o lstm_probe
 * usage: taskset -c 1 ./lstm_probe [H [CALLS [MEM [I [B [CHUNK]]]]]]
 *        (defaults 150, 4000, malloc, 8, 1, the compiler's chunk)
 *        MEM: malloc (R^T from aligned_alloc), huge (R^T copied into 2 MiB-aligned
 *        memory marked MADV_HUGEPAGE; the AnonHugePages line says what the
 *        kernel gave), small (the same marked MADV_NOHUGEPAGE), hugeall
 *        (R^T and the work buffer in huge pages)
 *        I: input features
 *        B: batch rows (layout 0, X [T, B, I]), in chunks of as many rows as
 *        fit the compiler's 4 MiB of scratch (ops/rnn.c's rnn_chunk), or of
 *        CHUNK rows
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "pages.h"
#include "timing.h"

enum { T = 25, RUNS = 7, WARM = 2000 };

static float *floats(int64_t n, float scale)
{
	float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
	if (!p) {
		fprintf(stderr, "lstm_probe: out of memory\n");
		exit(1);
	}
	for (int64_t i = 0; i < n; i++)
		p[i] = scale * ((float)rand() / (float)RAND_MAX - 0.5f);
	return p;
}

/* A copy of p[0..n) in fresh 2 MiB-aligned memory asked to be huge pages
 * (advice MADV_HUGEPAGE) or small ones (MADV_NOHUGEPAGE). */
static float *moved(float *p, int64_t n, int advice)
{
	float *q = aligned_pages((size_t)n * sizeof *p, advice);
	memcpy(q, p, (size_t)n * sizeof *p);
	free(p);
	return q;
}

int main(int argc, char **argv)
{
	int64_t H = argc > 1 ? atoll(argv[1]) : 150, calls = argc > 2 ? atoll(argv[2]) : 4000;
	const char *mem = argc > 3 ? argv[3] : "malloc";
	int64_t I = argc > 4 ? atoll(argv[4]) : 8, N = argc > 5 ? atoll(argv[5]) : 1;
	if (H < 1 || H > 4096 || calls < 1 || I < 1 || I > 4096 || N < 1 || N > 4096) {
		fprintf(stderr, "usage: lstm_probe [H (1..4096) [CALLS [malloc|huge|small|hugeall [I "
		                "(1..4096) [B (1..4096)]]]]]\n");
		return 2;
	}
	kiln_rnn_params p = {
		.cell = KILN_RNN_LSTM, .seq_length = T, .batch = N, .input_size = I, .hidden_size = H,
		.x_step_stride = N * I, .x_row_stride = I, .y_step_stride = N * H, .y_row_stride = H,
		.state_row_stride = H, .chunk_rows = 1, .gate_blocks = 1,
		.act = {{KILN_RNN_SIGMOID, 0, 0}, {KILN_RNN_TANH, 0, 0}, {KILN_RNN_TANH, 0, 0}},
	};
	{  /* rnn_chunk: the rows that fit 4 MiB with the fixed part */
		int64_t f1 = kiln_f32_rnn_work_floats(&p);
		p.chunk_rows = 2;
		int64_t row = kiln_f32_rnn_work_floats(&p) - f1, chunk = ((4 << 20) / 4 - (f1 - row)) / row;
		p.chunk_rows = chunk < 1 ? 1 : chunk > N ? N : chunk;
		if (argc > 6 && atoll(argv[6]) >= 1 && atoll(argv[6]) <= N)
			p.chunk_rows = atoll(argv[6]);
	}
	/* R small enough that the state stays away from saturation */
	float *X = floats(T * N * I, 1.0f), *W = floats(4 * H * I, 1.0f), *R = floats(4 * H * H, 0.1f);
	float *B = floats(8 * H, 1.0f), *Yh = floats(N * H, 0.0f);
	float *work = floats(kiln_f32_rnn_work_floats(&p), 0.0f);
	if (!strcmp(mem, "huge") || !strcmp(mem, "hugeall"))
		R = moved(R, 4 * H * H, MADV_HUGEPAGE);
	else if (!strcmp(mem, "small"))
		R = moved(R, 4 * H * H, MADV_NOHUGEPAGE);
	if (!strcmp(mem, "hugeall"))
		work = moved(work, kiln_f32_rnn_work_floats(&p), MADV_HUGEPAGE);
	kiln_rnn_io io = {.X = X, .Wp = W, .Rp = R, .B = B, .Y_h = Yh};
	for (int64_t i = 0; i < (WARM / N > 10 ? WARM / N : 10); i++)
		if (kiln_f32_rnn(&p, &io, work) != KILN_OK) {
			fprintf(stderr, "lstm_probe: kiln_f32_rnn failed\n");
			return 1;
		}
	double us[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double t0 = cpu_ns();
		for (int64_t i = 0; i < calls; i++)
			kiln_f32_rnn(&p, &io, work);
		us[r] = (cpu_ns() - t0) / (double)calls / 1e3;
	}
	qsort(us, RUNS, sizeof us[0], cmp_double);
	double sum = 0;
	for (int64_t j = 0; j < N * H; j++)
		sum += (double)Yh[j];
	print_huge_pages("");
	printf("%s H %lld B %lld (chunks of %lld): %.2f us a call (median of %d), min %.2f; sum of Y_h %.9g\n", mem,
	       (long long)H, (long long)N, (long long)p.chunk_rows, us[RUNS / 2], RUNS, us[0], sum);
	return 0;
}
