/*
 * fuzz_load.c - libFuzzer target: the loader (wire pre-pass, protobuf-c, the IR)
 * and the IR verifier. See fuzz.h.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_one(data, size, STAGE_LOAD);
}
