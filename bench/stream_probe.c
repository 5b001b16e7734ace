/*
 * stream_probe.c - what one core can read per call when the weights of a
 * batch-1 network do not fit in its L2: the floor under ff25_256 at batch 1.
 *
 * At batch 1 a dense layer reads each weight once (f32-gemv), so a call
 * costs the time to bring every weight byte to the core. ff25_256 holds
 * 6.1 MiB of float32 weights, three times this machine's 2 MiB L2 per core:
 * under the L2's (near-)LRU replacement each call evicts everything the last
 * one left, so every byte comes from the L3. This probe reads 25 "layers"
 * of 256 KiB (ff25_256's 256 x 256 weights) the way f32-gemv/avx512.c
 * reads a packed weight (two 32-float panels side by side, two rows at a
 * time) and times it three ways:
 *
 *   l2      6 layers only (1.5 MiB): they stay in L2 from call to call;
 *   l3      all 25 layers with ordinary loads (what kiln does);
 *   nta     the first 6 layers with ordinary loads and the other 19 behind
 *           PREFETCHNTA (DIST floats ahead in each panel), which on Intel
 *           cores fills L1 and not L2: the idea that the 6 layers then stay
 *           in L2 across calls while the rest streams past;
 *   l3-2m   as l3, from a copy of the layers in memory marked
 *           MADV_HUGEPAGE (2 MiB pages where the kernel gives them: the
 *           line after says how many kB it gave), to see whether fewer TLB
 *           misses or whole-page prefetch make the stream faster.
 *
 * For each it prints the CPU time per call (median of 5 runs) and the
 * median wall time per layer over the calls of the last run, so one sees
 * which level served each layer (a layer from L2 takes about a quarter of
 * one from the L3). The reads feed a sum that is printed, so they cannot be
 * dropped. docs/kernels-log.md ("GEMM: batch 1 beyond L2") has its results.
 *
 * build: cc -std=c11 -O2 -march=native bench/stream_probe.c -o stream_probe
 * usage: taskset -c 1 ./stream_probe [CALLS [DIST]]     (defaults 1000, 64)
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pages.h"
#include "timing.h"

enum { NLAYERS = 25, DIM = 256, PANEL = 32, NRESIDENT = 6, RUNS = 5 };

typedef float V16 __attribute__((vector_size(64)));

static V16 load(const float *p)
{
	V16 v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* Sum of one DIM x DIM layer, read as f32-gemv reads a packed weight; with
 * nta, each panel row's lines are first asked for with PREFETCHNTA
 * (__builtin_prefetch locality 0) dist floats ahead. */
static V16 read_layer(const float *w, int nta, int64_t dist)
{
	V16 a0 = {0}, a1 = a0, a2 = a0, a3 = a0;
	for (int64_t n0 = 0; n0 < DIM; n0 += 2 * PANEL) {
		const float *b = w + n0 * DIM, *c = w + (n0 + PANEL) * DIM;
		for (int64_t k = 0; k < DIM; k += 2) {
			const float *r = b + k * PANEL, *s = c + k * PANEL;
			if (nta)
				for (int j = 0; j < 4; j++) {
					__builtin_prefetch(r + dist + 16 * j, 0, 0);
					__builtin_prefetch(s + dist + 16 * j, 0, 0);
				}
			a0 += load(r) + load(r + 32);
			a1 += load(r + 16) + load(r + 48);
			a2 += load(s) + load(s + 32);
			a3 += load(s + 16) + load(s + 48);
		}
	}
	return (a0 + a1) + (a2 + a3);
}

static float sink;

/* One form: nlayers layers per call, the first `plain` with ordinary loads
 * and the rest behind PREFETCHNTA. */
static void probe(const char *name, const float *w, int nlayers, int plain, int64_t dist,
                  int calls)
{
	double cpu[RUNS];
	double *lay = malloc((size_t)calls * NLAYERS * sizeof *lay);
	if (!lay) {
		fprintf(stderr, "stream_probe: out of memory\n");
		exit(1);
	}
	V16 acc = {0};
	for (int run = 0; run < RUNS; run++) {
		double t0 = cpu_ns();
		for (int c = 0; c < calls; c++)
			for (int l = 0; l < nlayers; l++) {
				double l0 = now_ns();
				acc += read_layer(w + (size_t)l * DIM * DIM, l >= plain, dist);
				lay[(size_t)l * calls + c] = now_ns() - l0;
			}
		cpu[run] = (cpu_ns() - t0) / calls;
	}
	for (int j = 0; j < 16; j++)
		sink += acc[j];
	qsort(cpu, RUNS, sizeof *cpu, cmp_double);
	double bytes = (double)nlayers * DIM * DIM * sizeof(float);
	printf("%-4s %2d layers (%d ordinary, %d PREFETCHNTA): %7.1f us/call CPU, %5.1f GB/s\n",
	       name, nlayers, plain, nlayers - plain, cpu[RUNS / 2] / 1e3, bytes / cpu[RUNS / 2]);
	printf("     median us per layer:");
	for (int l = 0; l < nlayers; l++) {
		double *v = lay + (size_t)l * calls;
		qsort(v, (size_t)calls, sizeof *v, cmp_double);
		printf(" %.1f", v[calls / 2] / 1e3);
	}
	printf("\n");
	free(lay);
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 1000;
	int64_t dist = argc > 2 ? atoll(argv[2]) : 64;
	if (calls < 1 || dist < 0) {
		fprintf(stderr, "usage: stream_probe [CALLS [DIST]]\n");
		return 2;
	}
	/* DIST + 64 floats past the last layer: where its prefetches point */
	size_t n = (size_t)NLAYERS * DIM * DIM, nalloc = (n + (size_t)dist + 64 + 1023) / 1024 * 1024;
	float *w = aligned_alloc(4096, nalloc * sizeof *w);
	if (!w) {
		fprintf(stderr, "stream_probe: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < nalloc; i++)
		w[i] = (float)(i % 1000) * 1e-6f;
	probe("l2", w, NRESIDENT, NRESIDENT, dist, calls);
	probe("l3", w, NLAYERS, NLAYERS, dist, calls);
	probe("nta", w, NLAYERS, NRESIDENT, dist, calls);

	/* the same floats in 2 MiB-aligned memory asked to be huge pages */
	float *h = aligned_pages(nalloc * sizeof *w, MADV_HUGEPAGE);
	memcpy(h, w, nalloc * sizeof *w);
	probe("l3-2m", h, NLAYERS, NLAYERS, dist, calls);
	print_huge_pages("     ");
	printf("(sum %g)\n", (double)sink);
	free(w);
	return 0;
}
