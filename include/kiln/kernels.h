/*
 * kernels.h - the compute kernels of libkiln that generated code calls.
 *
 * The compiler knows every shape when it emits a model, so each kernel takes
 * its sizes and strides as plain int64_t arguments (or a small params struct)
 * and does no shape inference of its own: broadcasting, axis normalisation,
 * output sizes and padding arithmetic are the caller's business. These are
 * the portable reference kernels: plain C11, float32, correct first and
 * reasonably fast second. Faster variants (packed micro-kernels) are added
 * later beside them and are tested against them.
 *
 * Conventions shared by every kernel:
 *   - Tensors are dense, row-major (C order) unless a stride says otherwise.
 *     Sizes are element counts, never bytes, except elem_bytes.
 *   - Every size may be 0. A kernel whose output is empty writes nothing.
 *   - Outputs must not overlap inputs, except where a kernel says "in place":
 *     then Y may be exactly X (same pointer), but never a partial overlap.
 *   - Kernels keep no state and allocate nothing, so they are thread-safe.
 *     The few that need work memory take it from the caller as a `work`
 *     argument of a size the header states: kiln_f32_attention,
 *     kiln_f32_rnn, kiln_f32_conv2d_packed, kiln_f32_conv2d_winograd,
 *     kiln_f32_conv1d_wino, kiln_f32_edgeconv, kiln_f32_knn and the integer
 *     products kiln_i8_gemm, kiln_q8_gemm, kiln_i8_conv and kiln_q8_conv
 *     (the compiler plans it in the arena as the node's scratch, live only
 *     while the node runs: `kiln info --plan` shows it), and
 *     kiln_tree_ensemble_run/_leaves (2 * ntargets doubles, a local array
 *     of the generated function).
 *   - Kernels that can fail on data (gather indices) return enum kiln_status;
 *     the others cannot fail given valid arguments and return void.
 *   - NaN inputs propagate through arithmetic as IEEE 754 says. How a max
 *     treats NaN is not specified (the reference kernels skip it).
 *   - Arguments are trusted: the compiler has checked shapes, strides, perms
 *     and groups, so a kernel does not check them again. Only data that
 *     arrives at run time (gather indices) is checked.
 */
#ifndef KILN_KERNELS_H
#define KILN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- variants --------------------------------------------------------- */

/* The instruction-set variant the kernels use in this process: "ref",
 * "avx2" or "avx512". Decided once, on the first kernel call, from CPUID and
 * XGETBV; the environment variable KILN_ISA (ref, avx2, avx512) forces a lower
 * one. Results are deterministic for a given input and variant. */
KILN_API const char *kiln_isa_name(void);

/* ---- matrix multiplication -------------------------------------------- */

/*
 * C = alpha * A B + beta * C, with C of shape [M, N] and K the shared
 * dimension. Element (m, k) of A is A[m * a_row_stride + k * a_col_stride],
 * element (k, n) of B is B[k * b_row_stride + n * b_col_stride], element
 * (m, n) of C is C[m * c_row_stride + n]. Strides are in elements and may be
 * anything, so transposed operands are a matter of swapping strides:
 *   - ONNX Gemm: transA=0 gives (a_row_stride, a_col_stride) = (K, 1), transA=1
 *     gives (1, M); likewise for B with (N, 1) or (1, K). If Gemm has its
 *     optional input C, the caller first writes it, broadcast to [M, N], into
 *     the output and passes beta; without it, beta = 0.
 *   - ONNX MatMul: alpha = 1, beta = 0, one call per batch matrix (the caller
 *     loops over the broadcast batch dimensions).
 * beta == 0 means C is write-only: it is not read, so it may hold garbage,
 * even NaN. K == 0 gives C = beta * C. alpha == 0 is not special: NaN or
 * infinity in A or B still reaches C. Rows of C must not overlap each other
 * (c_row_stride >= N when M > 1), nor A or B. Sums are accumulated in float.
 */
KILN_API void kiln_f32_gemm(int64_t M, int64_t N, int64_t K, float alpha,
                            const float *A, int64_t a_row_stride, int64_t a_col_stride,
                            const float *B, int64_t b_row_stride, int64_t b_col_stride,
                            float beta, float *C, int64_t c_row_stride);

/* ---- convolution ------------------------------------------------------ */

/* The shape of one 2-D convolution. The caller computes out_h and out_w
 * (from ONNX's pads, auto_pad, strides and dilations); the kernel trusts them.
 * pad_bottom and pad_right do not change the result of a convolution (input
 * outside the image is zero either way) but are kept so a params struct
 * describes the node completely. */
typedef struct kiln_conv2d_params {
	int64_t batch;         /* N */
	int64_t in_channels;   /* C, a multiple of group */
	int64_t in_h, in_w;    /* H, W of the input */
	int64_t out_channels;  /* M, a multiple of group */
	int64_t group;         /* >= 1; group == C == M is depthwise */
	int64_t kernel_h, kernel_w;      /* kH, kW */
	int64_t stride_h, stride_w;      /* >= 1 */
	int64_t dilation_h, dilation_w;  /* >= 1 */
	int64_t pad_top, pad_left, pad_bottom, pad_right;  /* >= 0 */
	int64_t out_h, out_w;  /* OH, OW */
} kiln_conv2d_params;

/*
 * ONNX Conv in 2-D, NCHW. X is [N, C, H, W], W is [M, C/group, kH, kW],
 * bias is [M] or NULL, Y is [N, M, OH, OW]:
 *   Y[n, m, oh, ow] = bias[m] + sum over c', kh, kw of
 *       X[n, g*C/group + c', oh*sH - pad_top + kh*dH, ow*sW - pad_left + kw*dW]
 *       * W[m, c', kh, kw]
 * with g = m / (M/group) and X read as 0 outside [0, H) x [0, W).
 * Conv1D is H = 1, kH = 1, sH = dH = 1, pad_top = pad_bottom = 0.
 * Direct loops; a 1x1, stride-1, unpadded convolution goes through
 * kiln_f32_gemm. Sums are accumulated in float.
 */
KILN_API void kiln_f32_conv2d(const kiln_conv2d_params *p, const float *X, const float *W,
                              const float *bias, float *Y);

/* ---- pooling ---------------------------------------------------------- */

/* The shape of one 2-D pooling. out_h and out_w come from the caller, which
 * applies ceil_mode, so a window may begin in, or reach beyond, the bottom or
 * right padding. */
typedef struct kiln_pool2d_params {
	int64_t batch, channels;         /* N, C */
	int64_t in_h, in_w;              /* H, W */
	int64_t kernel_h, kernel_w;      /* kH, kW */
	int64_t stride_h, stride_w;      /* >= 1 */
	int64_t dilation_h, dilation_w;  /* >= 1 (1 for AveragePool before opset 19) */
	int64_t pad_top, pad_left, pad_bottom, pad_right;  /* >= 0 */
	int64_t out_h, out_w;            /* OH, OW */
} kiln_pool2d_params;

/*
 * ONNX MaxPool, NCHW: X is [N, C, H, W], Y is [N, C, OH, OW]. The window of
 * output (oh, ow) has taps (oh*sH - pad_top + i*dH, ow*sW - pad_left + j*dW)
 * for i < kH, j < kW; taps outside the input are ignored. A window with no
 * tap inside the input gives -INFINITY. The Indices output is not produced.
 */
KILN_API void kiln_f32_maxpool2d(const kiln_pool2d_params *p, const float *X, float *Y);

/*
 * ONNX AveragePool, NCHW, windows as for kiln_f32_maxpool2d. The sum of the
 * taps inside the input is divided by
 *   - count_include_pad == 0: the number of taps inside the input;
 *   - count_include_pad != 0: the number of taps inside the padded input,
 *     [-pad_top, H + pad_bottom) x [-pad_left, W + pad_right). Taps beyond
 *     the padding, which only ceil_mode creates, are not counted: this is
 *     what PyTorch and ONNX Runtime's AveragePool-19 do. (ONNX Runtime for
 *     older opsets and the ONNX reference implementation divide by kH * kW
 *     there instead.)
 * A window with a divisor of 0 gives NaN (0 / 0, as ONNX Runtime).
 */
KILN_API void kiln_f32_avgpool2d(const kiln_pool2d_params *p, int count_include_pad,
                                 const float *X, float *Y);

/*
 * ONNX GlobalAveragePool and GlobalMaxPool: X is `planes` contiguous planes of
 * plane_size elements (planes = N*C, plane_size = the product of the spatial
 * dims), Y is [planes]. The average is accumulated in double. An empty plane
 * gives NaN (average) or -INFINITY (max).
 */
KILN_API void kiln_f32_global_avgpool(const float *X, float *Y, int64_t planes,
                                      int64_t plane_size);
KILN_API void kiln_f32_global_maxpool(const float *X, float *Y, int64_t planes,
                                      int64_t plane_size);
/* ONNX GlobalLpPool: Y[plane] = (sum of |x|^p over the plane)^(1/p), p >= 1,
 * accumulated in double. */
KILN_API void kiln_f32_global_lppool(const float *X, float *Y, int64_t planes,
                                     int64_t plane_size, int64_t p);

/* ---- 3-D windows ------------------------------------------------------ */

/* The shape of one 3-D convolution or pooling, NCDHW. Axes 0, 1, 2 are D, H,
 * W. channels is C (the input's); out_channels and group are Conv's (pools
 * ignore them). out[] comes from the caller, as for the 2-D kernels. */
typedef struct kiln_window3d_params {
	int64_t batch, channels, out_channels, group;
	int64_t in[3], kernel[3], stride[3], dilation[3];
	int64_t pad_begin[3], pad_end[3];
	int64_t out[3];
} kiln_window3d_params;

/* ONNX Conv in 3-D: X [N, C, D, H, W], W [M, C/group, kD, kH, kW], bias [M]
 * or NULL, Y [N, M, OD, OH, OW]; input outside the volume reads as 0. Sums
 * accumulate in double. */
KILN_API void kiln_f32_conv3d(const kiln_window3d_params *p, const float *X, const float *W,
                              const float *bias, float *Y);
/* ONNX MaxPool and AveragePool in 3-D, with the windows and divisors of the
 * 2-D kernels. */
KILN_API void kiln_f32_maxpool3d(const kiln_window3d_params *p, const float *X, float *Y);
KILN_API void kiln_f32_avgpool3d(const kiln_window3d_params *p, int count_include_pad,
                                 const float *X, float *Y);
/* ONNX LpPool over 1 to 3 spatial axes (windows as for the pools above):
 * (sum of |x|^norm over the taps inside the input)^(1/norm), norm >= 1,
 * accumulated in double; padding adds nothing; an empty window gives 0. */
KILN_API void kiln_f32_lppool_nd(const kiln_window3d_params *p, int64_t norm, const float *X,
                                 float *Y);

/* ---- resize ----------------------------------------------------------- */

#define KILN_RESIZE_MAX_RANK 8
#define KILN_RESIZE_MAX_TAPS 64
enum kiln_resize_mode { KILN_RESIZE_NEAREST, KILN_RESIZE_LINEAR, KILN_RESIZE_CUBIC };
enum kiln_resize_coord {
	KILN_RESIZE_HALF_PIXEL, KILN_RESIZE_PYTORCH_HALF_PIXEL, KILN_RESIZE_ALIGN_CORNERS,
	KILN_RESIZE_ASYMMETRIC, KILN_RESIZE_TF_HALF_PIXEL_FOR_NN, KILN_RESIZE_TF_CROP_AND_RESIZE,
	KILN_RESIZE_HALF_PIXEL_SYMMETRIC  /* opset 19 */
};
enum kiln_nearest_mode {
	KILN_NEAREST_ROUND_PREFER_FLOOR, KILN_NEAREST_ROUND_PREFER_CEIL, KILN_NEAREST_FLOOR,
	KILN_NEAREST_CEIL
};

/* One ONNX Resize. scale[a] is the scale of axis a (the scales input, or
 * out/in when sizes were given); roi_start/roi_end are used by
 * tf_crop_and_resize only. */
typedef struct kiln_resize_params {
	int rank;
	int mode, coord_mode, nearest_mode;  /* the enums above */
	int exclude_outside;
	double cubic_coeff_a, extrapolation_value;
	int64_t in[KILN_RESIZE_MAX_RANK], out[KILN_RESIZE_MAX_RANK];
	double scale[KILN_RESIZE_MAX_RANK];
	double roi_start[KILN_RESIZE_MAX_RANK], roi_end[KILN_RESIZE_MAX_RANK];
	int antialias;  /* opset 18, linear and cubic: the filter widens by 1 / scale when
	                   shrinking (any scale: past KILN_RESIZE_MAX_TAPS taps per axis
	                   the weights are computed per tap rather than tabled) */
} kiln_resize_params;

/* ONNX Resize of a dense row-major float32 tensor (all axes, any rank <= 8). */
KILN_API void kiln_f32_resize(const kiln_resize_params *p, const float *X, float *Y);

/* ---- softmax ---------------------------------------------------------- */

/*
 * ONNX Softmax (is_log == 0) or LogSoftmax (is_log != 0) along the middle
 * axis of X viewed as [outer, axis_len, inner]; Y has the shape of X.
 *   - opset >= 13 (one axis): outer is the product of the dims before the
 *     axis, inner the product after it;
 *   - opset < 13 (the input coerced to 2-D at axis): outer = product of the
 *     dims before axis, axis_len = product of the rest, inner = 1.
 * The maximum along the axis is subtracted first, so large inputs neither
 * overflow nor give NaN; the sum of exponentials is accumulated in double.
 * A -INFINITY input gives 0 (LogSoftmax: -INFINITY) as long as one element
 * of its line is finite; a line of only -INFINITY gives NaN. In place.
 */
KILN_API void kiln_f32_softmax(const float *X, float *Y, int64_t outer, int64_t axis_len,
                               int64_t inner, int is_log);

/* ---- attention --------------------------------------------------------- */

/*
 * Scaled dot-product attention, fused (what passes/attention.c makes of
 * MatMul, scale, mask Add, Softmax, MatMul): for every batch b and head h,
 *   Y[b, h, i, :] = sum_j softmax_j(scale * Q[b, h, i, :] . K[b, h, j, :]
 *                                   + mask[b, h, i, j]) * V[b, h, j, :]
 * Q is [batch, heads, q_len, head_dim], K [batch, heads, kv_len, head_dim],
 * V [batch, heads, kv_len, v_dim], Y [batch, heads, q_len, v_dim], each a
 * strided view in elements (the head split and merge transposes are strides):
 * *_stride = {batch, heads, row, element}; Y's element stride is 1. mask is
 * NULL or read at b*m[0] + h*m[1] + i*m[2] + j*m[3] (0 for a broadcast axis).
 * The scores of at most KILN_ATTENTION_ROWS query rows of one head exist at a
 * time, transposed, in `work` (kiln_attention_work_floats floats, planned
 * arena scratch), next to those rows' queries transposed and, when K's or
 * V's rows are not contiguous, that head's K and V packed: [batch, heads,
 * q_len, kv_len] never exists. A row of only -INFINITY scores gives NaN, as
 * Softmax does. Y must not overlap Q, K, V or mask.
 */
typedef struct kiln_attention_params {
	int64_t batch, heads, q_len, kv_len, head_dim, v_dim;
	float scale;
	int64_t q_stride[4], k_stride[4], v_stride[4], y_stride[3], mask_stride[4];
} kiln_attention_params;

enum { KILN_ATTENTION_ROWS = 32 };

static inline int64_t kiln_attention_work_floats(int64_t head_dim, int64_t kv_len, int64_t v_dim)
{
	int64_t vp = (v_dim + 15) / 16 * 16, R = KILN_ATTENTION_ROWS;
	return kv_len * head_dim + kv_len * vp + R * (head_dim + kv_len);
}

KILN_API void kiln_f32_attention(const kiln_attention_params *p, const float *Q, const float *K,
                                 const float *V, const float *mask, float *Y, float *work);

/* ---- normalization ---------------------------------------------------- */

/*
 * ONNX LayerNormalization: X is [outer, norm_size] (outer = product of the
 * dims before `axis`, norm_size = product from `axis` on); scale is
 * [norm_size]; bias is [norm_size] or NULL. Per row:
 *   Y = (X - mean) / sqrt(var + epsilon) * scale + bias,
 * var the biased (population) variance. The caller expands a Scale or B that
 * merely broadcasts to the normalized shape. The mean is summed in double,
 * the variance in a second pass (short float chains added in double): Y
 * within 4.5e-7 of |(X - mean) / sqrt(var + epsilon) * scale| + |bias|.
 * The optional Mean and InvStdDev outputs are not produced yet. In place.
 */
KILN_API void kiln_f32_layernorm(const float *X, const float *scale, const float *bias,
                                 float *Y, int64_t outer, int64_t norm_size, float epsilon);

/* LayerNorm of X + R (a residual sum, rounded to float, as a separate Add
 * would give), as kiln_f32_layernorm; the sum of a row is stored in Y's row
 * first. Y may be X or R. */
KILN_API void kiln_f32_add_layernorm(const float *X, const float *R, const float *scale,
                                     const float *bias, float *Y, int64_t outer,
                                     int64_t norm_size, float epsilon);

/*
 * ONNX BatchNormalization in inference mode (training_mode = 0): X and Y are
 * [N, C, spatial] (spatial = product of the dims after C, 1 for 2-D input);
 * scale, bias, mean and var are [C]:
 *   Y = (X - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c].
 * Computed in double per element. In place.
 */
KILN_API void kiln_f32_batchnorm(const float *X, const float *scale, const float *bias,
                                 const float *mean, const float *var, float *Y, int64_t N,
                                 int64_t C, int64_t spatial, float epsilon);

/*
 * ONNX LpNormalization (p = 1 or 2): X and Y are [outer, len, inner], each
 * (outer, inner) line of len elements divided by its Lp norm, summed in
 * double. A zero norm gives zeros (as ONNX Runtime); infinities and NaN
 * follow IEEE division. In place (f32-lpnorm/ref.c).
 */
KILN_API void kiln_f32_lpnorm(const float *X, float *Y, int64_t outer, int64_t len,
                              int64_t inner, int p);

/* ---- reduction -------------------------------------------------------- */

/*
 * Sum or mean over the middle axis of X viewed as [outer, reduce_len, inner];
 * Y is [outer, inner]. This reduces one contiguous block of axes (outer =
 * product of the dims before the block, reduce_len = product of the block,
 * inner = product after it); keepdims only changes the shape the caller
 * records. Non-adjacent axes are reduced by calling once per contiguous block
 * (into a temporary) or after a transpose. Accumulated in double, so the
 * result is within one float rounding of exact for any realistic length.
 * reduce_len == 0 gives 0 (sum) and NaN (mean).
 */
KILN_API void kiln_f32_reduce_sum(const float *X, float *Y, int64_t outer,
                                  int64_t reduce_len, int64_t inner);
KILN_API void kiln_f32_reduce_mean(const float *X, float *Y, int64_t outer,
                                   int64_t reduce_len, int64_t inner);

/* ---- data movement (any element type) --------------------------------- */

/*
 * ONNX Transpose: Y = X with its axes permuted, for 0 <= rank <= 8. X has
 * dims in_dims[0..rank); Y has dims out[i] = in_dims[perm[i]], so output axis
 * i is input axis perm[i]. perm must be a permutation of 0..rank-1. Elements
 * are elem_bytes bytes each (any size; 1, 2, 4, 8 and 16 have fast paths) and
 * are copied bit for bit. Axes of size 1 and axes that stay adjacent are
 * merged first, so an identity permutation is one memcpy. rank > 8 copies
 * nothing (the compiler never emits it).
 */
KILN_API void kiln_transpose(const void *X, void *Y, size_t elem_bytes, int rank,
                             const int64_t *in_dims, const int *perm);

/*
 * ONNX Gather along one axis: data is viewed as [outer, axis_len, inner]
 * (outer = product of the dims before `axis`, inner = product after it),
 * indices is flattened to [nindices], and out is [outer, nindices, inner]:
 *   out[o, i, j] = data[o, idx(i), j], idx(i) = indices[i] (+ axis_len if < 0).
 * Elements are elem_bytes bytes, copied bit for bit. All indices are checked
 * before anything is written: if one lies outside [-axis_len, axis_len) the
 * function returns KILN_SHAPE_ERROR and out is left untouched; otherwise
 * KILN_OK. kiln_gather_i32 is the same for int32 indices.
 */
KILN_API enum kiln_status kiln_gather(const void *data, const int64_t *indices, void *out,
                                      size_t elem_bytes, int64_t outer, int64_t axis_len,
                                      int64_t inner, int64_t nindices);
KILN_API enum kiln_status kiln_gather_i32(const void *data, const int32_t *indices, void *out,
                                          size_t elem_bytes, int64_t outer, int64_t axis_len,
                                          int64_t inner, int64_t nindices);

/*
 * kiln_f32_select: y = x @ S for x [outer, k] and a selection matrix S [k, m]
 * (every element 0 or 1, exactly one 1 per column), given by the row of each
 * column's 1, src[j] in [0, k): y[o, j] = x[o, src[j]] + 0.0f, bit for bit
 * what the GEMM's sum gives (a -0 selected reads +0), and on a row holding an
 * infinity or a NaN the GEMM's sum itself (NaN where inf * 0 meets it). The
 * MatMul the optimizer's onehot pass replaces. KILN_SHAPE_ERROR (y untouched)
 * if an index is out of range, else KILN_OK.
 */
KILN_API enum kiln_status kiln_f32_select(const float *x, const int64_t *src, float *y,
                                          int64_t outer, int64_t k, int64_t m);

/*
 * kiln_f32_select_sum: the sum of `parts` column selections of one tensor,
 * P [batch, parts * co, k]: y[n, o, j] = P[n, o, src[j]] + P[n, co + o,
 * src[m + j]] + ... (parts terms, added in that order), then Relu (x > 0 ?
 * x : +0) if relu, for y [batch, co, m] and src [parts, m] in [0, k). A 1x1
 * convolution on the channel concatenation of selections of x, applied
 * before the selections (the mlpconv pass; P is the convolution of x by the
 * parts' weights). Exact adds: the same bits in every variant.
 * KILN_SHAPE_ERROR (y untouched) if an index is out of range, else KILN_OK.
 */
KILN_API enum kiln_status kiln_f32_select_sum(const float *P, const int64_t *src, float *y,
                                              int64_t batch, int64_t co, int64_t k, int64_t m,
                                              int parts, int relu);

/* ---- 16-bit floats ---------------------------------------------------- */

/*
 * float16 (IEEE binary16) and bfloat16 values are stored as their uint16_t
 * bit patterns. Widening to float32 is exact; narrowing rounds to nearest,
 * ties to even, overflows to infinity, underflows gradually (float16), and
 * keeps NaN a (quiet) NaN.
 */
KILN_API float kiln_f16_to_f32(uint16_t h);
KILN_API uint16_t kiln_f32_to_f16(float f);
KILN_API float kiln_bf16_to_f32(uint16_t h);
KILN_API uint16_t kiln_f32_to_bf16(float f);

/* ---- QuantizeLinear / DequantizeLinear, one scale and zero point ------ */

/* The quantized types of kiln_f32_quantize and kiln_f32_dequantize. */
enum { KILN_QT_UINT8 = 0, KILN_QT_INT8 = 1, KILN_QT_UINT16 = 2, KILN_QT_INT16 = 3 };

/*
 * y[i] = saturate(rint(x[i] / scale) + zero) for i < n: the float32
 * quotient rounded half to even, the sum saturated to the type of y (qtype);
 * a NaN quotient gives the low end of the type. The same values as
 * QuantizeLinear's definition in float32 (ONNX, ONNX Runtime).
 */
KILN_API void kiln_f32_quantize(const float *x, int64_t n, float scale, int32_t zero, int qtype,
                                void *y);

/*
 * y[i] = (x[i] - zero) * scale for i < n, x of type qtype: the exact
 * difference times the scale, rounded once to float32.
 */
KILN_API void kiln_f32_dequantize(const void *x, int64_t n, float scale, int32_t zero, int qtype,
                                  float *y);

/* ---- integer and quantized (int8 / uint8) products -------------------- */

/*
 * One int8 or uint8 operand of an integer product, with its zero point and,
 * for the QLinear ops, its scale. A zero point or scale is one value
 * (stride 0) or one per row of A, per column of B or per output channel of
 * a convolution's weights (stride 1); zero is NULL for "0", scale is NULL
 * for the pure-integer ops. The zero point has the element type of data.
 */
typedef struct kiln_q8_operand {
	const void *data;      /* int8_t or uint8_t elements */
	int is_signed;         /* 1: int8, 0: uint8 */
	const void *zero;      /* zero point(s), the type of data; NULL = 0 */
	int64_t zero_stride;   /* 0 or 1 */
	const float *scale;    /* scale(s); QLinear ops only */
	int64_t scale_stride;  /* 0 or 1 */
	int wide;              /* 1: int16_t / uint16_t elements (QDQ chains, exact mode) */
} kiln_q8_operand;

/*
 * The output of a QLinear op: one scale, one zero point. With `exact` set
 * (the optimizer's QDQ chains, passes/qdq.c) the sums are kept in 64 bits
 * and requantized in double as the chain's float64 semantics:
 *   Y = saturate(round_half_even((sum * sa * sb + bias * bias_scale) / sy) + zy)
 * with bias (int32, per column / output channel, NULL for none) scaled by
 * its own scale (bias_scale_stride 0 or 1) instead of added to the sum;
 * `relu` raises the result to at least zy (a Relu before the
 * QuantizeLinear: Q is monotone and Q(0) = zy, so Q(max(v, 0)) =
 * max(Q(v), zy)).
 */
typedef struct kiln_q8_output {
	void *data;            /* int8_t or uint8_t elements (int16/uint16 if wide) */
	int is_signed;
	const void *zero;      /* the output's zero point, its type; NULL = 0 */
	const float *scale;    /* the output's scale */
	int wide;
	int exact;
	const int32_t *bias;
	const float *bias_scale;
	int64_t bias_scale_stride;
	int relu;
} kiln_q8_output;

/*
 * Work memory of the four integer products below: `work` is NULL or
 * kiln_i8_work_bytes(M, K, wide) bytes (any alignment) that the call may
 * overwrite, with M the rows of A (GEMM) or the output channels and K the
 * row length of A, or (channels / group) * kernel volume (convolution);
 * wide 1 if an operand is 16-bit. With it and K <= 32767, the AVX2 and
 * AVX-512 variants run blocked (the operands minus their zero points as
 * int16, a 16-bit one in two parts; exact int32 sums); otherwise, and in
 * the ref variant, the reference loops run. The results are the same bits
 * either way.
 */
KILN_API int64_t kiln_i8_work_bytes(int64_t M, int64_t K, int wide);

/*
 * ONNX MatMulInteger on one [M, K] x [K, N] matrix pair:
 *   C[m, n] = sum_k (A[m, k] - za[m]) * (B[k, n] - zb[n])
 * with element (m, k) of A at a_row_stride * m + k, (k, n) of B at
 * b_row_stride * k + n, (m, n) of C at c_row_stride * m + n; za and zb from
 * A->zero and B->zero as kiln_q8_operand says. Products are exact; the sum
 * is accumulated in 32 bits and wraps on overflow, as ONNX allows ("the
 * accumulation may overflow if and only if in 32 bits"). Scales are ignored.
 */
KILN_API void kiln_i8_gemm(int64_t M, int64_t N, int64_t K,
                           const kiln_q8_operand *A, int64_t a_row_stride,
                           const kiln_q8_operand *B, int64_t b_row_stride,
                           int32_t *C, int64_t c_row_stride, void *work);

/*
 * ONNX QLinearMatMul on one matrix pair: the int32 sums of kiln_i8_gemm,
 * requantized per element as
 *   Y[m, n] = saturate(round_half_even(sum * (sa[m] * sb[n] / sy)) + zy)
 * with the multiplier and the product computed in float32 (as ONNX Runtime)
 * and saturation to the range of Y's type. The current rounding mode must be
 * round-to-nearest (the C default).
 */
KILN_API void kiln_q8_gemm(int64_t M, int64_t N, int64_t K,
                           const kiln_q8_operand *A, int64_t a_row_stride,
                           const kiln_q8_operand *B, int64_t b_row_stride,
                           const kiln_q8_output *Y, int64_t y_row_stride, void *work);

/*
 * ONNX ConvInteger in 1 to 3 spatial dims, with the geometry of
 * kiln_f32_conv3d (p; 1-D and 2-D use the last axes, size 1 elsewhere):
 * X [N, C, D, H, W], W [M, C/group, kD, kH, kW], Y int32 [N, M, OD, OH, OW],
 *   Y[n, m, o] = sum over taps inside X of (X[...] - zx) * (W[m, ...] - zw[m])
 * zx one value, zw one value or one per output channel. Taps in the padding
 * contribute nothing, i.e. padding reads as the zero point. Accumulation as
 * kiln_i8_gemm.
 */
KILN_API void kiln_i8_conv(const kiln_window3d_params *p, const kiln_q8_operand *X,
                           const kiln_q8_operand *W, int32_t *Y, void *work);

/*
 * ONNX QLinearConv: the sums of kiln_i8_conv plus bias[m] (int32, NULL for
 * none), requantized as kiln_q8_gemm does with the multiplier
 * sx * sw[m] / sy.
 */
KILN_API void kiln_q8_conv(const kiln_window3d_params *p, const kiln_q8_operand *X,
                           const kiln_q8_operand *W, const int32_t *bias,
                           const kiln_q8_output *Y, void *work);

/* ---- recurrent layers (RNN, GRU, LSTM) -------------------------------- */

enum kiln_rnn_cell { KILN_RNN_SIMPLE, KILN_RNN_GRU, KILN_RNN_LSTM };

/* The activations ONNX's recurrent ops accept, with their alpha and beta. */
enum kiln_rnn_activation_kind {
	KILN_RNN_RELU,             /* max(0, x) */
	KILN_RNN_TANH,
	KILN_RNN_SIGMOID,          /* 1 / (1 + e^-x) */
	KILN_RNN_AFFINE,           /* alpha x + beta */
	KILN_RNN_LEAKY_RELU,       /* x >= 0 ? x : alpha x */
	KILN_RNN_THRESHOLDED_RELU, /* x >= alpha ? x : 0 */
	KILN_RNN_SCALED_TANH,      /* alpha tanh(beta x) */
	KILN_RNN_HARD_SIGMOID,     /* min(max(alpha x + beta, 0), 1) */
	KILN_RNN_ELU,              /* x >= 0 ? x : alpha (e^x - 1) */
	KILN_RNN_SOFTSIGN,         /* x / (1 + |x|) */
	KILN_RNN_SOFTPLUS          /* log(1 + e^x) */
};

typedef struct kiln_rnn_activation {
	int kind;            /* enum kiln_rnn_activation_kind */
	float alpha, beta;   /* used by the kinds that say so */
} kiln_rnn_activation;

/* One direction of one recurrent node. Element (t, b, i) of X is
 * X[t * x_step_stride + b * x_row_stride + i]; Y likewise with its strides
 * (hidden unit j at + j); row b of initial_h, initial_c, Y_h and Y_c starts
 * at b * state_row_stride. So ONNX's layout 0 and 1, and the direction axis
 * of Y and Y_h, are a matter of strides and base pointers. */
typedef struct kiln_rnn_params {
	int cell;                   /* enum kiln_rnn_cell: G = 1, 3 (z r h) or 4 (i o f c) gates */
	int reverse;                /* run from each row's last step back to step 0 */
	int64_t seq_length, batch, input_size, hidden_size;   /* T, N, I, H */
	int64_t x_step_stride, x_row_stride;
	int64_t y_step_stride, y_row_stride;
	int64_t state_row_stride;
	int has_clip;               /* clip every activation's input to [-clip, clip] */
	float clip;
	int linear_before_reset;    /* GRU */
	int input_forget;           /* LSTM: f = 1 - i */
	int has_sequence_lens;      /* sequence_lens is read */
	kiln_rnn_activation act[3]; /* f; f, g (GRU); f, g, h (LSTM) */
	int64_t chunk_rows;         /* rows computed together (>= 1); sizes the work buffer */
	int gate_blocks;            /* LSTM, default activations: Wp and Rp in gate blocks (below) */
} kiln_rnn_params;

/* The tensors of one direction. The weights come as ONNX has them (W
 * [G*H, I], R [G*H, H]) or packed in the b32 layout of the GEMM core
 * (runtime/kernels/f32-gemm/pack.h), as the compiler stores them: Wp is W^T
 * (K = I, N = G*H), Rp is R^T (K = H, N = G*H; GRU: N = 2H, the z and r
 * gates) and Rhp GRU's R_h^T (K = H, N = H). A packed pointer, when not
 * NULL, is used instead of W (Wp) or R (Rp with Rhp).
 *
 * Gate blocks (gate_blocks = 1: an LSTM whose activations are Sigmoid, Tanh,
 * Tanh, with both Wp and Rp given): the 4H columns of W^T and R^T are
 * reordered in blocks of 16 units (the last one w = H - 16 b units): column
 * 64 b + w q + e is gate q (i, o, f, c) of unit 16 b + e. A whole block is
 * two 32-column panels, so one step computes a block's four gates and runs
 * its cell before reading the next block. */
typedef struct kiln_rnn_io {
	const float *X;
	const float *W, *R;
	const float *Wp, *Rp, *Rhp;
	const float *B;                /* [2*G*H] (Wb then Rb) or NULL */
	const float *P;                /* LSTM peepholes [3*H] (i, o, f) or NULL */
	const int32_t *sequence_lens;  /* [N], read only if has_sequence_lens */
	const float *initial_h, *initial_c;   /* NULL: zeros */
	float *Y, *Y_h, *Y_c;          /* each may be NULL */
} kiln_rnn_io;

/* Floats of work buffer kiln_f32_rnn needs for p (any alignment). */
KILN_API int64_t kiln_f32_rnn_work_floats(const kiln_rnn_params *p);

/*
 * One direction of ONNX RNN, GRU or LSTM (opsets 1 to 14), float32, on the
 * tensors of io. The equations are ONNX's, with the clip applied to the input
 * of every activation (LSTM's h(C_t) included). Row b runs for
 * sequence_lens[b] steps; Y is 0 at later steps, Y_h and Y_c hold the state
 * after the last step (0 if there was none). For each chunk of rows the
 * input projection X W^T + Wb + Rb of every time step is one GEMM before the
 * recurrence; each step is then one GEMM H_{t-1} R^T for the chunk's rows
 * (GRU: two) and one pass over each row's gates. Returns KILN_SHAPE_ERROR,
 * before writing anything, if a length lies outside [0, T]; else KILN_OK.
 * Sums accumulate in float (the GEMM core). Outputs must not overlap inputs.
 */
KILN_API enum kiln_status kiln_f32_rnn(const kiln_rnn_params *p, const kiln_rnn_io *io,
                                       float *work);

/* ---- sampling: MaxPool with indices, GridSample, RoiAlign, MaxRoiPool, MaxUnpool */

/*
 * ONNX MaxPool over 1 to 3 spatial axes for float32, float64, float16 (as
 * uint16_t bits), int8 and uint8, with the optional Indices output. The
 * geometry is a kiln_window3d_params (1-D and 2-D windows put size-1 axes
 * first). Each output is the first largest tap of its window, taps visited
 * in row-major order; NaN taps lose to numbers. If I is not NULL, I gets the
 * tap's index in the flattened input X: plane * in_volume + the position in
 * the plane, row-major if storage_order == 0, column-major (the first spatial
 * axis fastest) if storage_order == 1. A window with no tap inside the input
 * gives the type's lowest value (-inf for floats) and index -1.
 */
KILN_API void kiln_f32_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const float *X, float *Y, int64_t *I);
KILN_API void kiln_f64_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const double *X, double *Y, int64_t *I);
KILN_API void kiln_f16_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                  const uint16_t *X, uint16_t *Y, int64_t *I);
KILN_API void kiln_i8_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                 const int8_t *X, int8_t *Y, int64_t *I);
KILN_API void kiln_u8_maxpool_nd(const kiln_window3d_params *p, int storage_order,
                                 const uint8_t *X, uint8_t *Y, int64_t *I);

enum kiln_gridsample_mode {
	KILN_GRIDSAMPLE_BILINEAR, KILN_GRIDSAMPLE_NEAREST, KILN_GRIDSAMPLE_BICUBIC
};
enum kiln_gridsample_padding {
	KILN_GRIDSAMPLE_ZEROS, KILN_GRIDSAMPLE_BORDER, KILN_GRIDSAMPLE_REFLECTION
};

/* One ONNX GridSample (opset 16): X [batch, channels, in_h, in_w], grid
 * [batch, out_h, out_w, 2], Y [batch, channels, out_h, out_w]. */
typedef struct kiln_gridsample_params {
	int64_t batch, channels, in_h, in_w, out_h, out_w;
	int mode;           /* enum kiln_gridsample_mode */
	int padding_mode;   /* enum kiln_gridsample_padding */
	int align_corners;  /* 0 or 1 */
} kiln_gridsample_params;

/*
 * ONNX GridSample, as torch.nn.functional.grid_sample defines it. grid[..., 0]
 * is x (along W) and grid[..., 1] is y (along H), in [-1, 1] across the input:
 * the centres of the corner pixels with align_corners, their outer edges
 * without. Bilinear and nearest pad the source coordinate (border: clamp;
 * reflection: reflect about the borders, then clamp); bicubic (A = -0.75,
 * 4x4 taps) pads each tap. Taps outside the input read 0. Nearest rounds
 * half to even. Coordinates are computed in double; a NaN coordinate reads
 * as outside.
 */
KILN_API void kiln_f32_gridsample(const kiln_gridsample_params *p, const float *X,
                                  const float *grid, float *Y);

/* One ONNX Col2Im (opset 18): X [batch, channels * prod(block), L] holds, per
 * channel and block tap, one value for each of the L block positions
 * (lexicographic over `blocks`, the positions per axis); Y [batch, channels,
 * image...] is the sum over every (tap, position) that lands inside the
 * image at position * stride - pad_begin + tap * dilation. */
#define KILN_COL2IM_MAX_AXES 6
typedef struct kiln_col2im_params {
	int64_t batch, channels;
	int axes;  /* 1 .. KILN_COL2IM_MAX_AXES */
	int64_t image[KILN_COL2IM_MAX_AXES], block[KILN_COL2IM_MAX_AXES];
	int64_t stride[KILN_COL2IM_MAX_AXES], dilation[KILN_COL2IM_MAX_AXES];
	int64_t pad_begin[KILN_COL2IM_MAX_AXES], blocks[KILN_COL2IM_MAX_AXES];
} kiln_col2im_params;

KILN_API void kiln_f32_col2im(const kiln_col2im_params *p, const float *X, float *Y);

/* One ONNX AffineGrid (opset 20): theta [batch, axes, axes + 1], grid
 * [batch, size..., axes] with size = (H, W) or (D, H, W). Each output point is
 * theta times (x, y[, z], 1), the point's normalized coordinates in [-1, 1]:
 * x along W, y along H, z along D; pixel centres i -> (2i + 1) / n - 1, or
 * with align_corners the corners i -> 2i / (n - 1) - 1 (0 when n is 1). */
typedef struct kiln_affinegrid_params {
	int64_t batch;
	int axes;          /* 2 or 3 */
	int64_t size[3];   /* (H, W) or (D, H, W) */
	int align_corners;
} kiln_affinegrid_params;

KILN_API void kiln_f32_affinegrid(const kiln_affinegrid_params *p, const float *theta,
                                  float *grid);

/* One ONNX DeformConv (opset 19) in 2-D: X [batch, in_c, in_h, in_w], W
 * [out_c, in_c / group, kernel_h, kernel_w], offset [batch, offset_group * 2
 * * kernel_h * kernel_w, out_h, out_w] ((dh, dw) per tap), bias [out_c] or
 * NULL, mask [batch, offset_group * kernel_h * kernel_w, out_h, out_w] or
 * NULL (all ones), Y [batch, out_c, out_h, out_w]. Tap (i, j) of output
 * (oh, ow) reads X bilinearly at (oh * stride_h - pad_top + i * dilation_h +
 * dh, ow * stride_w - pad_left + j * dilation_w + dw), 0 outside (-1, in) and
 * for corners outside the image, and is scaled by the mask; input channel c
 * takes the offsets and mask of offset group c / (in_c / offset_group). */
typedef struct kiln_deformconv_params {
	int64_t batch, in_c, in_h, in_w, out_c, out_h, out_w;
	int64_t group, offset_group;
	int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
	int64_t pad_top, pad_left;
} kiln_deformconv_params;

KILN_API void kiln_f32_deformconv2d(const kiln_deformconv_params *p, const float *X,
                                    const float *W, const float *offset, const float *bias,
                                    const float *mask, float *Y);

/* One ONNX RoiAlign (opsets 10 and 16): X [batch, channels, in_h, in_w],
 * rois [num_rois, 4] as (x1, y1, x2, y2), Y [num_rois, channels, out_h, out_w]. */
typedef struct kiln_roialign_params {
	int64_t batch, channels, in_h, in_w;
	int64_t num_rois, out_h, out_w;
	int64_t sampling_ratio;  /* samples per bin and axis; 0 = ceil(roi size / bins) */
	double spatial_scale;
	int half_pixel;          /* coordinate_transformation_mode half_pixel (shift by -0.5) */
	int is_max;              /* mode max, else avg */
} kiln_roialign_params;

/*
 * ONNX RoiAlign, as ONNX Runtime computes it. Each ROI is scaled by
 * spatial_scale (and shifted by -0.5 with half_pixel; without it, the ROI is
 * at least 1x1), cut into out_h x out_w bins, and each bin sampled on a
 * regular grid of points read bilinearly (points beyond one pixel outside
 * the input read 0, points just outside are clamped to the edge). avg
 * averages the samples; max takes, over the samples, the largest of the four
 * weighted corner terms w_i * x_i (ONNX Runtime's definition). Returns
 * KILN_SHAPE_ERROR, before writing anything, if a batch index lies outside
 * [0, batch); else KILN_OK.
 */
KILN_API enum kiln_status kiln_f32_roialign(const kiln_roialign_params *p, const float *X,
                                            const float *rois, const int64_t *batch_indices,
                                            float *Y);

/* One ONNX MaxRoiPool (opset 1): X [batch, channels, in_h, in_w], rois
 * [num_rois, 5] as (batch_index, x1, y1, x2, y2), Y [num_rois, channels,
 * pooled_h, pooled_w]. */
typedef struct kiln_roipool_params {
	int64_t batch, channels, in_h, in_w;
	int64_t num_rois, pooled_h, pooled_w;
	float spatial_scale;     /* > 0 */
} kiln_roipool_params;

/*
 * ONNX MaxRoiPool, as ONNX Runtime computes it (f32-roipool/ref.c): each ROI,
 * scaled and rounded to whole pixels, is cut into pooled_h x pooled_w bins,
 * each the largest pixel it covers, or 0 where the ROI lies outside the
 * image. Returns KILN_SHAPE_ERROR, before writing anything, if a batch
 * index (truncated toward zero) lies outside [0, batch); else KILN_OK.
 */
KILN_API enum kiln_status kiln_f32_maxroipool(const kiln_roipool_params *p, const float *X,
                                              const float *rois, float *Y);

#define KILN_MAXUNPOOL_MAX_RANK 8

/* One ONNX MaxUnpool. The indices are flat over `inferred`, the shape the
 * kernel, strides and pads give; Y has shape `out` (the output_shape input,
 * or `inferred`), at least `inferred` on every axis. */
typedef struct kiln_maxunpool_params {
	int rank;
	int64_t nx;                                /* elements of X (and of I) */
	size_t elem_bytes;                         /* any element type */
	int64_t inferred[KILN_MAXUNPOOL_MAX_RANK];
	int64_t out[KILN_MAXUNPOOL_MAX_RANK];
} kiln_maxunpool_params;

/*
 * ONNX MaxUnpool, as the ONNX reference defines it: a zero tensor of shape
 * `inferred` gets T[I[k]] = X[k] for k < nx (a later k wins a shared index),
 * and Y is that tensor at the origin of a zero tensor of shape `out`.
 * Returns KILN_SHAPE_ERROR, before writing anything, if an index lies
 * outside [0, product of inferred); else KILN_OK.
 */
KILN_API enum kiln_status kiln_maxunpool(const kiln_maxunpool_params *p, const void *X,
                                         const int64_t *I, void *Y);

/* ---- determinant ------------------------------------------------------ */

/*
 * The determinant of the n x n row-major matrix A (ONNX Det), by LU
 * factorization with partial pivoting in double. A is overwritten with the
 * factors. n == 0 gives 1; a singular matrix gives 0 (of either sign); NaN
 * propagates.
 */
KILN_API double kiln_f64_det(double *A, int64_t n);

/* ---- discrete Fourier transforms (f32-dft.c) -------------------------- */

/*
 * DFTs of length n along one axis, one per (outer, inner) pair, as ONNX DFT.
 * X has x_len samples along the axis, each x_comp floats (1: real, 2:
 * complex): sample j of line (o, i) starts at X[((o * x_len + j) * inner + i)
 * * x_comp]. The line is truncated or zero-padded to n. Y gets the first
 * y_len (<= n) frequencies as (real, imaginary) pairs: frequency k of line
 * (o, i) at Y[((o * y_len + k) * inner + i) * 2]. inverse: the sign of the
 * exponent is + and the result is scaled by 1 / n. Sums and twiddles are in
 * double (an FFT for power-of-two n up to 1024, direct sums otherwise), so
 * the only float rounding is the final one. Uses up to 24 KiB of stack.
 */
KILN_API void kiln_f32_dft(int64_t outer, int64_t inner, int64_t x_len, int x_comp,
                           const float *X, int64_t n, int64_t y_len, int inverse, float *Y);

/*
 * ONNX STFT: X is [batch, len, x_comp]; frame f of row b is the frame_length
 * samples from f * frame_step, times W (frame_length floats, or NULL for
 * none), transformed as kiln_f32_dft (forward, n = frame_length). Y is
 * [batch, nframes, y_len, 2]. The caller guarantees
 * (nframes - 1) * frame_step + frame_length <= len.
 */
KILN_API void kiln_f32_stft(int64_t batch, int64_t len, int x_comp, const float *X,
                            int64_t frame_step, const float *W, int64_t frame_length,
                            int64_t nframes, int64_t y_len, float *Y);

/*
 * The DFT bin of mel point k (0 <= k <= num_mel_bins + 1) of ONNX
 * MelWeightMatrix: num_mel_bins + 2 points evenly spaced on the mel scale
 * mel(f) = 2595 log10(1 + f / 700) from lower_hz, converted back to hertz,
 * to bin floor((dft_length + 1) * hz / sample_rate). Filter m is the
 * triangle over bins k = m, m + 1, m + 2 with its peak (1) at the middle
 * one. Returns KILN_SHAPE_ERROR if sample_rate <= 0 or the edges are not
 * 0 <= lower_hz <= upper_hz (finite), else KILN_OK.
 */
KILN_API enum kiln_status kiln_mel_bin(int64_t k, int64_t num_mel_bins, int64_t dft_length,
                                       int64_t sample_rate, double lower_hz, double upper_hz,
                                       int64_t *bin);

/* ---- fused epilogues (the graph optimizer's fuse pass) ---------------- */

/* The activation applied after a GEMM or convolution. */
typedef enum kiln_act {
	KILN_ACT_NONE, KILN_ACT_RELU, KILN_ACT_SIGMOID, KILN_ACT_TANH,
	KILN_ACT_SELU,          /* beta * (x > 0 ? x : alpha * (exp(x) - 1)): alpha, gamma */
	KILN_ACT_ELU,           /* x >= 0 ? x : alpha * (exp(x) - 1) */
	KILN_ACT_LEAKY_RELU,    /* x >= 0 ? x : alpha * x */
	KILN_ACT_HARD_SIGMOID,  /* max(0, min(1, alpha * x + beta)) */
	KILN_ACT_CLIP,          /* x < alpha ? alpha : x > beta ? beta : x (NaN stays NaN) */
	KILN_ACT_GELU           /* 0.5 * x * (1 + erf(x / sqrt 2)) */
} kiln_act;

typedef struct kiln_epilogue {
	const float *bias;   /* GEMM: [N], added to every row before the activation; or NULL */
	int act;             /* a kiln_act */
	float alpha, beta;   /* the activation's parameters (see kiln_act) */
	/* Convolution only (the GEMM kernels ignore it: a Gemm's residual is its
	 * C): a tensor shaped like Y, added after the bias and before the
	 * activation, one output plane at a time right after that plane is
	 * computed. It must not alias Y (the convolution writes Y before the
	 * residual is read); or NULL. */
	const float *residual;
} kiln_epilogue;

/* kiln_f32_gemm, then per row: += bias, activation (ep may be NULL). */
KILN_API void kiln_f32_gemm_ep(int64_t M, int64_t N, int64_t K, float alpha,
                               const float *A, int64_t a_row_stride, int64_t a_col_stride,
                               const float *B, int64_t b_row_stride, int64_t b_col_stride,
                               float beta, float *C, int64_t c_row_stride,
                               const kiln_epilogue *ep);
/*
 * C = alpha * A B + beta * C, then the epilogue ep (NULL for none: bias per
 * column, activation), with B a weight packed at compile time in the "b32"
 * layout of runtime/kernels/f32-gemm/pack.h (K * N floats: panels of 32
 * columns, each K rows of its width). A is row-major [M, K] with row stride
 * lda; C is [M, N] with row stride ldc. beta == 0 does not read C. Runs the
 * variant kiln_isa_name() reports: register-blocked micro-kernels reading
 * each panel as one stream (M = 1, batch 1, with alpha 1 and beta 0: the
 * one-row product of eight sums in flight per panel, then the epilogue).
 */
KILN_API void kiln_f32_gemm_pb(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                               int64_t lda, const float *Bp, float beta, float *C, int64_t ldc,
                               const kiln_epilogue *ep);
/* B (K x N, element (k, n) at B[k * rs + n * cs], any alignment) into Bp
 * (K * N floats) in the b32 layout kiln_f32_gemm_pb reads: how the compiler
 * packs a weight at compile time, with the kernels' own code. */
KILN_API void kiln_f32_gemm_pack_b32(const float *B, int64_t rs, int64_t cs, int64_t K,
                                     int64_t N, float *Bp);

/* kiln_f32_conv2d, then per output plane: += ep->residual, the activation
 * (ep->bias is not used: Conv has its own; ep may be NULL). */
KILN_API void kiln_f32_conv2d_ep(const kiln_conv2d_params *p, const float *X, const float *W,
                                 const float *bias, float *Y, const kiln_epilogue *ep);
/* kiln_f32_conv2d_ep for a 1x1 convolution of small planes, as the compiler
 * emits it for a 1x1, stride-1, unpadded, ungrouped Conv of at most 32
 * output pixels (DeepJet's 1x1 Conv1d stacks): its own register-blocked
 * kernel where the variant has one (AVX-512, ReLU or no activation, no
 * residual), else kiln_f32_conv2d_ep itself. */
KILN_API void kiln_f32_conv2d_small(const kiln_conv2d_params *p, const float *X, const float *W,
                                    const float *bias, float *Y, const kiln_epilogue *ep);
/* The convolution on weights packed at compile time (group 1 only): W
 * [M, C, kH, kW] rearranged by kiln_f32_conv2d_pack into groups of 8 output
 * channels (runtime/kernels/f32-conv/direct.h), and work memory of
 * kiln_f32_conv2d_packed_work(p) floats (8-byte aligned; planned arena
 * scratch) that holds each image copied into its padded phase planes. Then
 * per output element: + bias, + ep->residual (not aliasing Y), the
 * activation (ep may be NULL; ep->bias is not used). _work returns 0 when
 * this path does not take p (groups, strides over 4, more than 1024 taps):
 * use kiln_f32_conv2d_ep then. */
KILN_API int64_t kiln_f32_conv2d_packed_work(const kiln_conv2d_params *p);
KILN_API void kiln_f32_conv2d_pack(const kiln_conv2d_params *p, const float *W, float *dst);
KILN_API void kiln_f32_conv2d_packed(const kiln_conv2d_params *p, const float *X,
                                     const float *Wp, const float *bias, float *Y,
                                     const kiln_epilogue *ep, float *work);
/* A 3x3, stride-1, undilated, ungrouped Conv of at least 16 input and 16
 * output channels by Winograd's F(2x2, 3x3) (runtime/kernels/f32-winograd):
 * _takes says whether p is such a convolution (by its shape only). W is
 * transformed at compile time by kiln_f32_conv2d_winograd_pack into
 * kiln_f32_conv2d_winograd_packed_floats(C, M) floats (16 for every 9 of
 * the weight, M rounded up to 8); work memory of
 * kiln_f32_conv2d_winograd_work(p) floats (8-byte aligned; planned arena
 * scratch), 0 when this path does not take p. Then per output element:
 * + bias, + ep->residual (not aliasing Y), the activation (ep may be NULL).
 * The same bits under every ISA variant and at every batch size
 * (docs/reproducibility.md); other bits than the direct path's. */
KILN_API int kiln_f32_conv2d_winograd_takes(const kiln_conv2d_params *p);
KILN_API int64_t kiln_f32_conv2d_winograd_work(const kiln_conv2d_params *p);
KILN_API int64_t kiln_f32_conv2d_winograd_packed_floats(int64_t in_channels,
                                                        int64_t out_channels);
KILN_API void kiln_f32_conv2d_winograd_pack(const kiln_conv2d_params *p, const float *W,
                                            float *dst);
KILN_API void kiln_f32_conv2d_winograd(const kiln_conv2d_params *p, const float *X,
                                       const float *U, const float *bias, float *Y,
                                       const kiln_epilogue *ep, float *work);
/* A 1-D convolution of 3 taps (stride 1, no dilation or groups, pads of at
 * most 2, at least 16 input and 16 output channels and 8 outputs; as
 * kiln_conv2d_params with in_h = out_h = kernel_h = 1: a Conv1d, or a 2-D
 * Conv of kernel (3, 1) on images one pixel wide after the compiler swaps
 * the axes) by Winograd's F(4, 3) (runtime/kernels/f32-winograd1d): _takes
 * says whether p is such a convolution (by its shape only). W is
 * transformed at compile time by kiln_f32_conv1d_wino_pack into
 * kiln_f32_conv1d_wino_packed_floats(C, M) floats (twice the weight's);
 * work memory of kiln_f32_conv1d_wino_work(p) floats (8-byte aligned;
 * planned arena scratch), 0 when this path does not take p. Then per output
 * element: + bias, + ep->residual (not aliasing Y), the activation (ep may
 * be NULL). The same bits under every ISA variant and at every batch size
 * (docs/reproducibility.md); other bits than the direct path's. */
KILN_API int kiln_f32_conv1d_wino_takes(const kiln_conv2d_params *p);
KILN_API int64_t kiln_f32_conv1d_wino_work(const kiln_conv2d_params *p);
KILN_API int64_t kiln_f32_conv1d_wino_packed_floats(int64_t in_channels, int64_t out_channels);
KILN_API void kiln_f32_conv1d_wino_pack(const kiln_conv2d_params *p, const float *W, float *dst);
KILN_API void kiln_f32_conv1d_wino(const kiln_conv2d_params *p, const float *X, const float *U,
                                   const float *bias, float *Y, const kiln_epilogue *ep,
                                   float *work);
/* kiln_f32_gemm_ep with B stored as float16 (bit patterns), widened while
 * it is loaded (F16C on x86 when the CPU has it): weights stored at half the
 * bytes, no float32 copy anywhere. Strides are in elements. */
KILN_API void kiln_f32_gemm_f16b(int64_t M, int64_t N, int64_t K, float alpha,
                                 const float *A, int64_t a_row_stride, int64_t a_col_stride,
                                 const uint16_t *B, int64_t b_row_stride, int64_t b_col_stride,
                                 float beta, float *C, int64_t c_row_stride,
                                 const kiln_epilogue *ep);
/* kiln_f32_conv2d_ep with W stored as float16 (bit patterns, [M, C/group,
 * kH, kW]): each block of output channels' weights is widened into a stack
 * panel (F16C on x86 when the CPU has it) and convolved by the float32
 * kernel; weights too large for the panel are widened one tap at a time.
 * No float32 copy of W exists anywhere. */
KILN_API void kiln_f32_conv2d_f16w(const kiln_conv2d_params *p, const float *X,
                                   const uint16_t *W, const float *bias, float *Y,
                                   const kiln_epilogue *ep);
/* The activation alone, in place over n elements: one loop per activation,
 * vectorized (runtime/kernels/f32-vmath/, the variant kiln_isa() picks). */
KILN_API void kiln_f32_act(float *Y, int64_t n, const kiln_epilogue *ep);

/* ---- kNN EdgeConv (compiler/passes/edgeconv.c) ------------------------ */

enum { KILN_EDGECONV_MAX_LAYERS = 8 };
enum { KILN_EDGECONV_MEAN, KILN_EDGECONV_MAX };

/*
 * The EdgeConv block of ParticleNet / DGCNN, without its [N, 2C, P, k] edge
 * tensor. For each sample n, point p and neighbour j (q = idx[n, p, j]):
 *
 *     e0[n, p, j] = act0(W0 [x_p ; x_q - x_p] + b0)     x_p = X[n, :, p]
 *     e_l         = act_l(W_l e_(l-1) + b_l)              l = 1 .. L-1
 *     Y[n, :, p]  = mean (or max) over j of e_(L-1)[n, p, j]
 *
 * Layer 0 is computed per point, not per edge: W0 [x_p ; x_q - x_p] =
 * (Wa - Wb) x_p + Wb x_q with W0 = [Wa Wb], so w[0] holds the b32-packed
 * (runtime/kernels/f32-gemm/pack.h) K = C by N = 2 width[0] matrix whose
 * columns [0, width[0]) are (Wa - Wb)^T and [width[0], 2 width[0]) are Wb^T;
 * w[l] (l >= 1) is W_l^T packed (K = width[l-1], N = width[l]). bias[l] is
 * [width[l]] or NULL; act[l] is the layer's activation (its bias unused).
 */
typedef struct kiln_edgeconv_params {
	int64_t batch, channels, points, k;  /* N, C, P, neighbours per point */
	int nlayers;                         /* 1 .. KILN_EDGECONV_MAX_LAYERS */
	int aggregate;                       /* KILN_EDGECONV_MEAN or _MAX */
	int64_t width[KILN_EDGECONV_MAX_LAYERS];
	const float *w[KILN_EDGECONV_MAX_LAYERS];
	const float *bias[KILN_EDGECONV_MAX_LAYERS];
	kiln_epilogue act[KILN_EDGECONV_MAX_LAYERS];
} kiln_edgeconv_params;

/* Floats of work memory kiln_f32_edgeconv needs (the caller's, e.g. planned
 * arena scratch): a sample's points transposed and projected, and two tiles
 * of edge features. */
KILN_API int64_t kiln_f32_edgeconv_work(const kiln_edgeconv_params *p);
/* X [N, C, P], idx [N, P, k] (neighbours within the sample, 0 <= q < P; all
 * are checked before anything is written: KILN_SHAPE_ERROR otherwise),
 * Y [N, width[L-1], P]. */
KILN_API enum kiln_status kiln_f32_edgeconv(const kiln_edgeconv_params *p, const float *X,
                                            const int64_t *idx, float *Y, float *work);

/*
 * The k nearest neighbours of ParticleNet's EdgeConv as exporters write them:
 * for each sample n and point i of X [N, C, P], the indices of the K largest
 * of
 *     v[i, j] = (2 x_i . x_j - |x_j|^2) - |x_i|^2      (minus the squared distance)
 * over j < P, best first, ties to the lower j, a NaN never better than a
 * number (ONNX TopK, largest, sorted; 1 <= K <= P) into idx [N, P, K]. The dot products
 * are one GEMM per sample; the selection keeps the K best in one pass. work:
 * kiln_f32_knn_work floats.
 */
KILN_API int64_t kiln_f32_knn_work(int64_t C, int64_t P, int64_t K);
KILN_API void kiln_f32_knn(int64_t N, int64_t C, int64_t P, int64_t K, const float *X,
                           int64_t *idx, float *work);

/* ---- chains of 1x1 convolutions (compiler/passes/convchain.c) --------- */

enum { KILN_CONVCHAIN_MAX_LAYERS = 8 };

/*
 * A chain of L 1x1 convolutions over X [N, C, P] (stride 1, no padding, one
 * group), each with its bias and activation:
 *
 *     h_0 = X[n],  h_l = act_l(W_l h_(l-1) + b_l),  Y[n] = h_L   [width[L-1], P]
 *
 * run a block of points at a time through every layer, so the intermediate
 * layers (width[l] x block floats) stay in cache instead of going through
 * memory as [N, width[l], P] tensors. w[l] is the Conv's weight as ONNX
 * stores it ([width[l], width[l-1]] row-major, width[-1] = C), bias[l] its
 * bias or NULL, act[l] its activation (the epilogue's bias unused). Every
 * layer is the GEMM of kiln_f32_conv2d_ep's 1x1 path on a block of columns
 * (the same sums in the same order per element), so Y has the bits of the
 * L convolutions run one after the other, under every ISA and batch size,
 * provided every layer has at most 256 input channels (one K block) and
 * more than one output channel (compiler/passes/convchain.c checks both).
 */
typedef struct kiln_convchain_params {
	int64_t batch, channels, points;     /* N, C, P */
	int nlayers;                         /* 1 .. KILN_CONVCHAIN_MAX_LAYERS */
	int64_t width[KILN_CONVCHAIN_MAX_LAYERS];
	const float *w[KILN_CONVCHAIN_MAX_LAYERS];
	const float *bias[KILN_CONVCHAIN_MAX_LAYERS];
	kiln_epilogue act[KILN_CONVCHAIN_MAX_LAYERS];
} kiln_convchain_params;

/* Points per block and floats of work memory (two blocks of the widest
 * inner layer; 0 for one layer) kiln_f32_convchain needs. */
KILN_API int64_t kiln_f32_convchain_block(const kiln_convchain_params *p);
KILN_API int64_t kiln_f32_convchain_work(const kiln_convchain_params *p);
/* X [N, C, P] -> Y [N, width[L-1], P]; work: kiln_f32_convchain_work floats. */
KILN_API void kiln_f32_convchain(const kiln_convchain_params *p, const float *X, float *Y,
                                 float *work);

/* ---- tree ensembles and linear models (ai.onnx.ml) -------------------- */

/* Node modes: a branch goes to tru[i] when its comparison of x[feat[i]]
 * with thr[i] holds (or, with KILN_TREE_MISSING_TRUE, when x is NaN), else
 * to fls[i]; a leaf holds its weights at [tru[i], tru[i] + fls[i]). */
enum { KILN_TREE_LEAF, KILN_TREE_LEQ, KILN_TREE_LT, KILN_TREE_GTE, KILN_TREE_GT,
       KILN_TREE_EQ, KILN_TREE_NEQ, KILN_TREE_MISSING_TRUE = 8 };
enum { KILN_TREE_SUM, KILN_TREE_AVERAGE, KILN_TREE_MIN, KILN_TREE_MAX };
enum { KILN_ML_NONE, KILN_ML_SOFTMAX, KILN_ML_LOGISTIC, KILN_ML_SOFTMAX_ZERO, KILN_ML_PROBIT };
/* Element types of a model's input rows. */
enum { KILN_ML_X_F32, KILN_ML_X_F64, KILN_ML_X_I32, KILN_ML_X_I64 };

/* A compiled TreeEnsembleClassifier or TreeEnsembleRegressor: node arrays
 * laid out by the compiler (each tree depth first from its root). With the
 * straight-line form, roots, feat, mode and the thresholds are NULL: the
 * branches are C code. */
typedef struct kiln_tree_ensemble {
	int64_t ntrees, ntargets;   /* targets, or classes of a classifier */
	int64_t nbase;              /* base values: 0, ntargets, or 1 (binary classifier) */
	const int32_t *roots;       /* [ntrees] */
	const int32_t *feat, *tru, *fls;
	const uint8_t *mode;        /* KILN_TREE_* */
	const float *thr_f;         /* thresholds as float attributes ... */
	const double *thr_d;        /* ... or as a double tensor: exactly one is set */
	const int32_t *leaf_target; /* leaf weights: target or class index, and value */
	const float *w_f;
	const double *w_d;          /* exactly one of w_f, w_d is set */
	const double *base;         /* [nbase] */
	const int64_t *labels;      /* a classifier's class labels; NULL for a regressor */
	int aggregate;              /* KILN_TREE_SUM .. MAX (a classifier sums) */
	int post_transform;         /* KILN_ML_* */
	int binary_case;            /* classifier: 2 classes, only one class id has weights */
	int all_positive;           /* classifier: no negative weight */
} kiln_tree_ensemble;

/*
 * Every row of X ([rows, nfeat], element type xtype) through the ensemble:
 * Y[r] gets the class label of a classifier (Y is NULL for a regressor or
 * when the label is not wanted), Z[r * ntargets ..] the scores after the
 * post-transform. Features are compared in double (integers through float,
 * as ONNX Runtime does). work holds 2 * ntargets doubles. The conventions
 * (binary classifiers, the spec where ONNX Runtime departs from it) are in
 * docs/ops.md.
 */
KILN_API void kiln_tree_ensemble_run(const kiln_tree_ensemble *t, const void *X, int xtype,
                                     int64_t rows, int64_t nfeat, int64_t *Y, float *Z,
                                     double *work);
/* The same for one row whose leaves the generated code found (straight-line
 * C for small ensembles, compiler/emit/ml.c): leaf[tree] is the index of the
 * leaf node each tree reached, in the layout of tru/fls (only tru, fls,
 * leaf_target and the weights of t are read). y (may be NULL) gets the
 * label, z[0 .. ntargets) the scores. */
KILN_API void kiln_tree_ensemble_leaves(const kiln_tree_ensemble *t, const int32_t *leaf,
                                        int64_t *y, float *z, double *work);
/* A post-transform over the n scores of one row, in place. */
KILN_API void kiln_ml_post_transform(int post, double *s, int64_t n);
/* sqrt(2) * erfinv(2p - 1), to double precision (ONNX's PROBIT), without
 * libm's transcendental functions (kiln_log, kiln_exp, kiln_erfc). */
KILN_API double kiln_ml_probit(double p);

/* ---- vector math (runtime/kernels/f32-vmath/) ------------------------- */

/* Unary float32 functions by polynomial approximation; maximum errors in
 * docs/kernels.md (3 ulp, GELU more). NaN gives NaN, infinities their limits. */
typedef enum kiln_unary {
	KILN_UNARY_EXP, KILN_UNARY_TANH, KILN_UNARY_ERF,
	KILN_UNARY_SIGMOID,  /* 1 / (1 + exp(-x)) */
	KILN_UNARY_GELU,     /* 0.5 * x * (1 + erf(x / sqrt 2)) */
	KILN_UNARY_LOG,      /* kiln_logf's bits, computed in double lanes */
	KILN_UNARY_ATAN      /* kiln_atanf's bits, computed in double lanes */
} kiln_unary;

/* Y[i] = op(X[i]) for i < n; Y may be X. Same input, same ISA: same bits. */
KILN_API void kiln_f32_unary(int op, const float *X, float *Y, int64_t n);

/* kiln's own float elementary functions, which the generated C calls
 * instead of libm's expf, tanhf and erff: the algorithms of kiln_f32_unary
 * (f32-vmath/body.h) one value at a time, with fmaf wherever the vector
 * code fuses, so they give the bits kiln_f32_unary gives under every ISA
 * and on every machine, whatever its libm (docs/reproducibility.md). */
KILN_API float kiln_expf(float x);
KILN_API float kiln_tanhf(float x);
KILN_API float kiln_erff(float x);
/* And instead of libm's logf, log1pf, powf, sinf, cosf and tanf
 * (f32-vmath/scalar.c): computed in double by one fixed sequence of
 * operations and rounded once, the same bits on every machine; equal to
 * libm's double result rounded to float on every float sampled (pow: within
 * one unit in the last place). */
KILN_API float kiln_logf(float x);
KILN_API float kiln_log1pf(float x);
KILN_API float kiln_powf(float x, float y);
KILN_API float kiln_sinf(float x);
KILN_API float kiln_cosf(float x);
KILN_API float kiln_tanf(float x);
/* And instead of asinf, acosf, atanf, sinhf, coshf, asinhf, acoshf and
 * atanhf (the same file, the same way: double inside, rounded once; equal
 * to libm's double result rounded to float on every float sampled). */
KILN_API float kiln_asinf(float x);
KILN_API float kiln_acosf(float x);
KILN_API float kiln_atanf(float x);
KILN_API float kiln_sinhf(float x);
KILN_API float kiln_coshf(float x);
KILN_API float kiln_asinhf(float x);
KILN_API float kiln_acoshf(float x);
KILN_API float kiln_atanhf(float x);
/* Double precision exp, log, log1p and tanh, instead of libm's (the
 * generated C on double tensors, the double sums of LogSoftmax, ReduceLogSum
 * and ReduceLogSumExp, the tree ensembles' post-transforms, and the
 * compiler's folds): one fixed sequence of IEEE double operations, no fma,
 * within a few units in the last place (docs/reproducibility.md gives the
 * measured bound). So are pow (exp of y log|x| in double-double: special
 * cases as C99 Annex F, exact where the result is a double), sin, cos and
 * tan (an exact reduction by pi/2 at every magnitude), erf, erfc and the
 * inverse and hyperbolic functions: the generated C on double tensors,
 * LRN, LpPool, the DFT's twiddles, MelWeightMatrix, the window ops and the
 * compiler's folds call these, never libm's. */
KILN_API double kiln_exp(double x);
KILN_API double kiln_log(double x);
KILN_API double kiln_log1p(double x);
KILN_API double kiln_tanh(double x);
KILN_API double kiln_pow(double x, double y);
KILN_API double kiln_sin(double x);
KILN_API double kiln_cos(double x);
KILN_API double kiln_tan(double x);
KILN_API double kiln_erf(double x);
KILN_API double kiln_erfc(double x);
KILN_API double kiln_asin(double x);
KILN_API double kiln_acos(double x);
KILN_API double kiln_atan(double x);
KILN_API double kiln_sinh(double x);
KILN_API double kiln_cosh(double x);
KILN_API double kiln_asinh(double x);
KILN_API double kiln_acosh(double x);
KILN_API double kiln_atanh(double x);

#ifdef __cplusplus
}
#endif
#endif
