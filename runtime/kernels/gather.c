/*
 * gather.c - ONNX Gather along one axis, for any element size and for int64
 * or int32 indices.
 *
 * With data viewed as [outer, axis_len, inner], every index selects a
 * contiguous block of inner elements, so the copy is one memcpy per (outer,
 * index) pair. Indices come from the model's data, not from the compiler, so
 * they are untrusted: all of them are checked before the first byte is
 * written, and a bad one leaves the output untouched. Single 4-byte elements
 * picked along a last axis of at most 32 are permutes of one row in
 * registers (gather/avx512.c), along longer axes or without AVX-512 AVX2
 * hardware gathers (gather/avx2.c); select.c's MatMul by a selection matrix
 * shares both.
 */
#include <string.h>

#include "gather/gather.h"
#include "isa.h"
#include "kiln/kernels.h"

/* indices[i], widened; exactly one of the two arrays is non-NULL. */
static int64_t index_at(const int64_t *idx64, const int32_t *idx32, int64_t i)
{
	return idx64 ? idx64[i] : (int64_t)idx32[i];
}

static enum kiln_status gather(const void *data, const int64_t *idx64, const int32_t *idx32,
                               void *out, size_t elem_bytes, int64_t outer, int64_t axis_len,
                               int64_t inner, int64_t nindices)
{
	for (int64_t i = 0; i < nindices; i++) {
		int64_t idx = index_at(idx64, idx32, i);
		if (idx < -axis_len || idx >= axis_len)
			return KILN_SHAPE_ERROR;
	}
	if (inner <= 0 || elem_bytes == 0)
		return KILN_OK;
	const size_t block_bytes = (size_t)inner * elem_bytes;
	const char *src = data;
	char *dst = out;
#ifdef KILN_HAVE_X86_VARIANTS
	if (block_bytes == 4 && idx64 && axis_len <= 32 && kiln_isa() >= KILN_ISA_AVX512) {
		kiln_gather32_row_avx512(data, idx64, out, outer, axis_len, nindices, 0);
		return KILN_OK;
	}
	if (block_bytes == 4 && idx64 && kiln_isa() >= KILN_ISA_AVX2) {
		kiln_gather32_row_avx2(data, idx64, out, outer, axis_len, nindices, 0);
		return KILN_OK;
	}
#endif
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < nindices; i++) {
			int64_t idx = index_at(idx64, idx32, i);
			if (idx < 0)
				idx += axis_len;
			memcpy(dst + (size_t)(o * nindices + i) * block_bytes,
			       src + (size_t)(o * axis_len + idx) * block_bytes, block_bytes);
		}
	return KILN_OK;
}

KILN_API enum kiln_status kiln_gather(const void *data, const int64_t *indices, void *out,
                                      size_t elem_bytes, int64_t outer, int64_t axis_len,
                                      int64_t inner, int64_t nindices)
{
	return gather(data, indices, NULL, out, elem_bytes, outer, axis_len, inner, nindices);
}

KILN_API enum kiln_status kiln_gather_i32(const void *data, const int32_t *indices, void *out,
                                          size_t elem_bytes, int64_t outer, int64_t axis_len,
                                          int64_t inner, int64_t nindices)
{
	return gather(data, NULL, indices, out, elem_bytes, outer, axis_len, inner, nindices);
}
