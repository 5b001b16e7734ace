/*
 * fuzz_plan.c - libFuzzer target: load, shape inference at batches 1 and 3
 * and the buffer plan (kiln info --plan). See fuzz.h.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_one(data, size, STAGE_PLAN);
}
