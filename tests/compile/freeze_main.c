/* Runs a model compiled with --freeze start=1 --freeze limit=7 --freeze delta=2:
 * the frozen values give y = x * [1, 3, 5]; any other value of a frozen input
 * must be refused with KILN_FROZEN_INPUT, never computed. */
#include <stdio.h>

#include "kiln/kiln.h"
#include "range_inputs.h"

int main(void)
{
	static unsigned char arena[RANGE_INPUTS_ARENA_BYTES + 1];
	float x = 2.0f, y[3] = {0, 0, 0};
	int64_t start = 1, limit = 7, delta = 2, other = 9;
	int fails = 0;
	int st = range_inputs_run_b1(arena, &x, &start, &limit, &delta, y);
	if (st != KILN_OK || y[0] != 2.0f || y[1] != 6.0f || y[2] != 10.0f) {
		printf("FAIL: frozen values: status %d, y = %g %g %g\n", st, (double)y[0], (double)y[1],
		       (double)y[2]);
		fails++;
	}
	st = range_inputs_run_b1(arena, &x, &start, &other, &delta, y);
	if (st != KILN_FROZEN_INPUT) {
		printf("FAIL: another limit: status %d, want KILN_FROZEN_INPUT\n", st);
		fails++;
	}
	printf("%s: %s\n", fails ? "FAIL" : "ok", kiln_status_string(KILN_FROZEN_INPUT));
	return fails != 0;
}
