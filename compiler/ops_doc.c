/*
 * ops_doc.c - `kiln ops`: the operators kiln compiles, from the registry
 * itself, as text or as the Markdown of docs/ops.md (a test keeps that file
 * equal to this output).
 *
 * Per operator: the schema versions kiln accepts (every non-deprecated one;
 * a model's opset picks among them), the element types, and notes. The
 * element types are the ones the newest ONNX schema allows for the op's main
 * type parameter (op-types.def, generated from ONNX's schemas), narrowed
 * where kiln's emitter takes fewer (the table below, which must agree with
 * the emitters' own checks such as require_f32).
 */
#include <string.h>

#include "kiln.h"

static const char *const schema_types[OP_COUNT] = {
#define OPTYPES(id, types) [OP_##id] = types,
#include "op-types.def"
#undef OPTYPES
};

enum {
	F32 = 1 << 0, F64 = 1 << 1, F16 = 1 << 2, BF16 = 1 << 3,
	FLOATS = F32 | F64 | F16 | BF16,
	INTS = 1 << 4,     /* every integer type and bool the schema allows */
	ALL = FLOATS | INTS,
};

/* Where kiln takes fewer types than the schema, or has something to say. */
typedef struct OpDoc {
	int op;
	unsigned types;      /* 0: the schema's (strings and complex excluded) */
	const char *note;
} OpDoc;

static const OpDoc docs[] = {
	{OP_Gemm, F32 | F16 | BF16, "runtime GEMM kernel; 16-bit floats computed in float32, the "
	                            "result rounded to nearest even"},
	{OP_MatMul, F32 | F16 | BF16, "runtime GEMM kernel; batched with broadcasting; 16-bit floats "
	                              "computed in float32, the result rounded to nearest even"},
	{OP_Conv, F32, "1-D to 3-D; groups, dilations, auto_pad"},
	{OP_DeformConv, F32, "2-D (as ONNX Runtime); group, offset_group, mask, bias"},
	{OP_ConvTranspose, F32, "1-D to 3-D; output_shape and output_padding"},
	{OP_MaxPool, F32 | F64 | F16 | INTS, "1-D to 3-D; the Indices output (storage_order 0 and 1)"},
	{OP_Col2Im, F32, "1 to 6 spatial axes; image_shape and block_shape must be known at compile "
	                 "time"},
	{OP_AffineGrid, F32, "2-D and 3-D; size must be known at compile time"},
	{OP_DFT, F32, "dft_length and axis (an input from opset 20) must be known at compile time"},
	{OP_MaxUnpool, 0, "output_shape must be known at compile time"},
	{OP_GridSample, F32, "bilinear, nearest, bicubic; zeros, border, reflection; align_corners"},
	{OP_RoiAlign, F32, "avg and max (as ONNX Runtime), both coordinate modes, adaptive sampling"},
	{OP_MaxRoiPool, F32, "bins as ONNX Runtime cuts them; a bin outside the image gives 0; batch "
	                     "indices checked at run time"},
	{OP_AveragePool, F32, "1-D to 3-D; count_include_pad, ceil_mode, dilations (opset 19)"},
	{OP_LpPool, F32, "1-D to 3-D; any whole p >= 1; dilations and ceil_mode (opset 18)"},
	{OP_GlobalLpPool, F32, "any whole p >= 1"},
	{OP_GlobalAveragePool, F32, NULL},
	{OP_GlobalMaxPool, F32, NULL},
	{OP_Softmax, F32, NULL},
	{OP_LogSoftmax, F32, NULL},
	{OP_Hardmax, F32, NULL},
	{OP_BatchNormalization, F32, "inference; training mode from opset 14 (batch statistics, "
	                             "running mean/var with momentum)"},
	{OP_LayerNormalization, F32, NULL},
	{OP_InstanceNormalization, F32, NULL},
	{OP_GroupNormalization, F32, "scale and bias per group (opset 18) or per channel (21); "
	                             "statistics in double"},
	{OP_LRN, F32, NULL},
	{OP_LpNormalization, F32, "p 1 or 2; norms summed in double (a zero norm gives zeros, as ONNX "
	                          "Runtime)"},
	{OP_Resize, F32, "every mode; every coordinate transformation (opset 19's "
	                 "half_pixel_symmetric too); axes and keep_aspect_ratio_policy; antialias (18, "
	                 "any shrink); output sizes from scales computed in float as ONNX Runtime does "
	                 "(300 x 0.01 gives 3); scales/sizes must be known at compile time"},
	{OP_Split, 0, "split sizes (or opset 18's num_outputs) known at compile time"},
	{OP_Upsample, F32, "scales must be known at compile time"},
	{OP_Dropout, 0, "a copy in inference and in training mode with ratio 0 (training_mode and "
	                "ratio must be known at compile time); a ratio above 0 (random) is not supported"},
	{OP_Expand, 0, "the shape input must be known at compile time"},
	{OP_Tile, 0, "repeats must be known at compile time"},
	{OP_Range, 0, "start, limit and delta must be known at compile time"},
	{OP_ConstantOfShape, 0, "the shape input must be known at compile time"},
	{OP_TopK, F32 | F64 | INTS, "K must be known at compile time"},
	{OP_OneHot, 0, "depth must be known at compile time"},
	{OP_Slice, 0, "starts, ends, axes and steps must be known at compile time"},
	{OP_CenterCropPad, 0, "the shape input must be known at compile time"},
	{OP_Pad, 0, "pads (and opset 18's axes) must be known at compile time; constant, reflect, "
	            "edge and wrap modes"},
	{OP_Einsum, F32 | F64 | INTS, "any equation, with ellipsis; generated loops"},
	{OP_TfIdfVectorizer, 0, "integer pools (pool_int64s); TF, IDF and TFIDF"},
	{OP_ML_TreeEnsembleClassifier, 0, "int64 class labels (string labels refused); all node "
	 "modes, missing-value tracks, base values, post-transforms; double thresholds "
	 "(*_as_tensor) compared in double; node arrays in the weights object, "
	 "runtime/kernels/f32-tree; see [trees.md](trees.md)"},
	{OP_ML_TreeEnsembleRegressor, 0, "aggregate SUM, AVERAGE, MIN, MAX; post-transforms as the "
	 "spec says where ONNX Runtime departs from it (it ignores LOGISTIC and SOFTMAX on one "
	 "target and approximates PROBIT; kiln applies them, PROBIT exact); double thresholds "
	 "compared in double (ONNX Runtime rounds them to float); see [trees.md](trees.md)"},
	{OP_ML_LinearClassifier, 0, "int64 class labels; one score row for two classes gives "
	 "[1 - p, p], p the transformed score, as ONNX Runtime does"},
	{OP_ML_LinearRegressor, 0, NULL},
	{OP_ML_ZipMap, 0, "with --zipmap=tensor only (C has no maps): the output is the [N, C] "
	 "float tensor, the map's keys in NAME.h (docs/models.md); refused without it"},
	{OP_ML_Normalizer, 0, "MAX, L1, L2; a row whose norm is 0 is copied"},
	{OP_ML_Imputer, F32, "float imputed values (imputed_value_floats)"},
	{OP_ML_ArrayFeatureExtractor, 0, "the indices must be known at compile time"},
	{OP_NonZero, 0, "the input must be known at compile time (--freeze): the output is a "
	                "constant"},
	{OP_Unique, 0, "the input must be known at compile time (--freeze): the outputs are "
	               "constants"},
	{OP_NonMaxSuppression, 0, "every input must be known at compile time (--freeze): the "
	                          "output is a constant"},
	{OP_Compress, 0, "the condition must be known at compile time (--freeze); the data is "
	                 "read at run time"},
	{OP_CumSum, F32 | F64 | INTS, NULL},
	{OP_ArgMax, F32 | F64 | INTS, NULL},
	{OP_ArgMin, F32 | F64 | INTS, NULL},
	{OP_ReduceSum, F32 | F64 | INTS, NULL},
	{OP_ReduceMean, F32 | F64 | INTS, NULL},
	{OP_ReduceMax, F32 | F64 | INTS, NULL},
	{OP_ReduceMin, F32 | F64 | INTS, NULL},
	{OP_ReduceProd, F32 | F64 | INTS, NULL},
	{OP_ReduceSumSquare, F32 | F64 | INTS, NULL},
	{OP_ReduceL1, F32 | F64 | INTS, NULL},
	{OP_ReduceL2, F32 | F64 | INTS, NULL},
	{OP_ReduceLogSum, F32 | F64 | INTS, NULL},
	{OP_ReduceLogSumExp, F32 | F64 | INTS, NULL},
	{OP_NegativeLogLikelihoodLoss, F32 | F64, NULL},
	{OP_SoftmaxCrossEntropyLoss, F32 | F64, NULL},
	{OP_Det, 0, "LU with partial pivoting in double; matrices up to 64x64"},
	{OP_MeanVarianceNormalization, 0, "any axes; computed in double"},
	{OP_ReverseSequence, 0, "sequence_lens read at run time (checked)"},
	{OP_RNN, F32, "forward, reverse, bidirectional; layout 0/1; every activation; clip; "
	              "sequence_lens read at run time (checked)"},
	{OP_GRU, F32, "as RNN; linear_before_reset 0 and 1"},
	{OP_LSTM, F32, "as RNN; peepholes, input_forget"},
	{OP_ScatterElements, 0, "reduction add and mul not on float16/bfloat16 yet"},
	{OP_ScatterND, 0, "reduction add and mul not on float16/bfloat16 yet"},
	{OP_Cast, 0, "bfloat16 rounds to nearest even (see tests/conformance/known-differences.txt); "
	             "also the four float8 types (opset 19, saturate; bit-exact) "
	             "and int4/uint4 (21; into them as ONNX Runtime: rounded half away from zero, "
	             "then the low four bits)"},
	{OP_CastLike, 0, "as Cast: float8 (opset 19) and int4/uint4 (21)"},
	{OP_DequantizeLinear, 0, "also int16, uint16, int4, uint4 (21; packed weights read in "
	                         "place) and the four float8 types (19; zero point 0); per tensor, "
	                         "per axis, blocked (block_size, 21; a last partial block); a "
	                         "float16 scale gives that output type (bfloat16 refused)"},
	{OP_QuantizeLinear, 0, "x float32, float16 or int32; to int8, uint8, int16, uint16, "
	                       "int4, uint4 (21; rounded half to even, clamped) and float8 (19; "
	                       "saturate, zero point 0); per tensor, per axis, blocked (block_size, "
	                       "21); output_dtype (21)"},
	{OP_Identity, 0, "also float8 and int4/uint4 values (a view of the same bytes)"},
	{OP_Reshape, 0, "the shape input must be known at compile time; float8 and int4/uint4 "
	                "values too (a view)"},
	{OP_Flatten, 0, "also float8 and int4/uint4 values (a view)"},
	{OP_Squeeze, 0, "also float8 and int4/uint4 values (a view)"},
	{OP_Unsqueeze, 0, "also float8 and int4/uint4 values (a view)"},
	{OP_Transpose, 0, "also float8 and int4/uint4 values (4-bit weights transposed at compile "
	                  "time stay packed)"},
	{OP_If, 0, "also float8 values (opset 19; not 4-bit: ONNX Runtime 1.30 neither)"},
	{OP_Loop, 0, "also float8 values carried and stacked (opset 19; not 4-bit: ONNX Runtime 1.30 "
	             "neither)"},
	{OP_Scan, 0, "also float8 values carried and scanned (opset 19; not 4-bit: ONNX Runtime "
	             "1.30 neither)"},
	{OP_QLinearMatMul, 0, "int8 and uint8 (float8, opset 21, refused: ONNX Runtime 1.30 has no "
	                      "kernel for it)"},
};

static const OpDoc *doc_of(int op)
{
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
		if (docs[i].op == op)
			return &docs[i];
	return NULL;
}

static bool token_is(const char *t, size_t len, const char *word)
{
	return len == strlen(word) && memcmp(t, word, len) == 0;
}

static bool type_taken(const char *t, size_t len, unsigned mask)
{
	bool no_code = token_is(t, len, "string") || (len > 7 && memcmp(t, "complex", 7) == 0);
	if (no_code)
		return false;
	if (!mask)
		return true;
	if (token_is(t, len, "float32"))
		return mask & F32;
	if (token_is(t, len, "float64"))
		return mask & F64;
	if (token_is(t, len, "float16"))
		return mask & F16;
	if (token_is(t, len, "bfloat16"))
		return mask & BF16;
	return mask & INTS;
}

/* The op's element types kiln compiles, space separated. */
static void types_text(int op, char *buf, size_t bufsz)
{
	const OpDoc *d = doc_of(op);
	const char *s = schema_types[op] ? schema_types[op] : "";
	size_t n = 0;
	buf[0] = 0;
	while (*s) {
		const char *e = strchr(s, ' ');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (type_taken(s, len, d ? d->types : 0) && n + len + 2 < bufsz) {
			if (n)
				buf[n++] = ' ';
			memcpy(buf + n, s, len);
			buf[n += len] = 0;
		}
		s += len;
		while (*s == ' ')
			s++;
	}
}

static void versions_text(int op, char *buf, size_t bufsz)
{
	size_t n = 0;
	buf[0] = 0;
	for (int since = 1; since <= op_max_opset(op_info(op)->domain_id); since++) {
		const OpVersion *v = op_version(op, since);
		if (!v || v->deprecated)
			continue;
		int w = snprintf(buf + n, bufsz - n, "%s%d", n ? ", " : "", since);
		if (w < 0 || (size_t)w >= bufsz - n)
			break;
		n += (size_t)w;
	}
}

int report_ops(FILE *out, bool markdown)
{
	int nsupported = 0, nknown = 0;
	for (int op = 0; op < op_count(); op++) {
		nknown++;
		nsupported += op_infer_hook(op) != NULL;
	}
	if (markdown) {
		fprintf(out, "# Supported operators\n\n"
		             "<!-- Generated by `kiln ops --markdown`; do not edit. tests/cli checks "
		             "that this file is current. -->\n\n"
		             "kiln compiles %d of the %d operators that ONNX defines (ai.onnx up to "
		             "opset %d, ai.onnx.ml, ai.onnx.preview.training). `kiln check MODEL` says "
		             "which nodes of a model are not among them, and why.\n\n"
		             "- **Opset versions**: the schema versions kiln accepts; a model's opset "
		             "import picks the newest one not newer than it.\n"
		             "- **Element types**: what the newest schema allows for the op's main "
		             "type parameter, less what kiln's code generator does not take.\n"
		             "- Inputs said to be *known at compile time* decide output shapes: they "
		             "must be constants or computed from constants (see "
		             "[compile.md](compile.md)).\n"
		             "- float8 and int4/uint4 values, where an op takes them, may also be "
		             "graph inputs and outputs: float8 as `uint8_t` bit patterns, 4-bit "
		             "packed two a byte, low nibble first (see "
		             "[integration.md](integration.md#element-types-without-a-c-type)).\n\n"
		             "| Operator | Opset versions | Element types | Notes |\n"
		             "|---|---|---|---|\n",
		        nsupported, nknown, op_max_opset(DOMAIN_ONNX));
	}
	for (int op = 0; op < op_count(); op++) {
		if (!op_infer_hook(op))
			continue;
		const OpInfo *info = op_info(op);
		const OpDoc *d = doc_of(op);
		char versions[256], types[256];
		versions_text(op, versions, sizeof versions);
		types_text(op, types, sizeof types);
		char name[128];
		if (info->domain_id == DOMAIN_ONNX)
			snprintf(name, sizeof name, "%s", info->op_type);
		else
			snprintf(name, sizeof name, "%s.%s", domain_name(info->domain_id), info->op_type);
		if (markdown)
			fprintf(out, "| %s | %s | %s | %s |\n", name, versions, types,
			        d && d->note ? d->note : "");
		else
			fprintf(out, "%-28s opsets %-22s %s\n", name, versions, types);
	}
	if (!markdown) {
		fprintf(out, "%d of %d operators supported\n", nsupported, nknown);
		return 0;
	}
	fprintf(out, "\n## Not compiled\n\n"
	             "A node of one of these operators is refused with one error line naming the "
	             "file, the node and its op (`kiln compile` exits 2; `kiln check` lists them "
	             "all).\n\n| Operator | Opset versions | Why |\n|---|---|---|\n");
	for (int op = 0; op < op_count(); op++) {
		if (op_infer_hook(op))
			continue;
		const OpInfo *info = op_info(op);
		char versions[256];
		versions_text(op, versions, sizeof versions);
		if (!versions[0])
			continue;   /* every version deprecated */
		const char *why = op_out_of_scope(info->domain_id, info->op_type);
		if (info->domain_id == DOMAIN_ONNX)
			fprintf(out, "| %s | %s | %s |\n", info->op_type, versions, why ? why : "not implemented yet");
		else
			fprintf(out, "| %s.%s | %s | %s |\n", domain_name(info->domain_id), info->op_type,
			        versions, why ? why : "not implemented yet");
	}
	return 0;
}
