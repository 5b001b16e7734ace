/*
 * trees_time.c - CPU time per row of a compiled tree model at one batch size
 * (bench/trees.py builds it with -DRUN=m_run_bB -DBATCH=B -include m.h).
 *   usage: trees_time INPUT.bin ROWS REPEATS OUTPUT.bin
 * INPUT.bin holds ROWS float32 rows (ROWS a multiple of BATCH); every row is
 * run REPEATS times; prints the median over REPEATS of the CPU ns per row,
 * and writes the scores of the last pass to OUTPUT.bin.
 */
#include <stdio.h>
#include <stdlib.h>

#include "timing.h"

int main(int argc, char **argv)
{
	if (argc != 5)
		return 2;
	long rows = atol(argv[2]), reps = atol(argv[3]);
	long nfeat = M_IN0_ELEMS, nt = M_OUT1_ELEMS;
	float *x = malloc(sizeof *x * (size_t)(rows * nfeat));
	float *z = malloc(sizeof *z * (size_t)(rows * nt));
	int64_t *y = malloc(sizeof *y * (size_t)rows);
	double *t = malloc(sizeof *t * (size_t)reps);
	static _Alignas(64) unsigned char arena[M_ARENA_BYTES + 64];
	FILE *f = fopen(argv[1], "rb");
	if (!x || !z || !y || !t || !f || fread(x, sizeof *x, (size_t)(rows * nfeat), f) !=
	                                       (size_t)(rows * nfeat))
		return 1;
	fclose(f);
	for (long k = 0; k < reps; k++) {
		double t0 = cpu_ns();
		for (long r = 0; r < rows; r += BATCH)
			if (RUN(arena, x + r * nfeat, y + r, z + r * nt) != 0)
				return 1;
		t[k] = (cpu_ns() - t0) / (double)rows;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	printf("%.1f\n", t[reps / 2]);
	f = fopen(argv[4], "wb");
	if (!f || fwrite(z, sizeof *z, (size_t)(rows * nt), f) != (size_t)(rows * nt))
		return 1;
	fclose(f);
	return 0;
}
