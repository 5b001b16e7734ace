/*
 * fuzz_emit.c - libFuzzer target: load, the optimizer, shapes, plan, NAME.h,
 * NAME.c and the weights object (kiln compile --no-cc). See fuzz.h.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_one(data, size, STAGE_EMIT);
}
