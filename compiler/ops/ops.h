/*
 * ops/ops.h - which ops kiln compiles (ops.c) and the per-op hooks and
 * parameter readers by family (ops/ *.c), which inference and the emitter
 * share.
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include "kiln/kernels.h"
#include "infer.h"

/* ---- ops.c: which ops kiln compiles ---------------------------------- */

InferHook op_infer_hook(int op);   /* NULL if the op has none */
/* Is the op compiled by kiln? Returns NULL if so, else the reason. */
const char *op_unsupported_reason(const Graph *g, const Node *n, char *buf, size_t bufsz);

/* ---- ops/ *.c: per-op hooks, by family -------------------------------- */


void ops_elementwise_infer(Infer *x);   /* unary, binary with broadcasting, Where, Cast, Clip */
/* An elementwise op's attributes, resolved with their defaults. */
typedef struct ElementwiseParams {
	float alpha, beta;       /* Selu: alpha, gamma; Elu, LeakyRelu, ThresholdedRelu, Celu:
	                            alpha; HardSigmoid: alpha, beta; Shrink: lambd, bias */
	bool gelu_tanh;          /* Gelu: approximate="tanh" */
	bool detect_negative, detect_positive;   /* IsInf */
	bool has_min, has_max;   /* Clip before opset 11: its bounds' attributes */
	float min, max;
	bool shift_left;         /* BitShift: direction="LEFT" */
	bool fmod;               /* Mod */
	bool saturate;           /* Cast to a float8 type (opset 19 on) */
} ElementwiseParams;
void elementwise_params(Infer *x, ElementwiseParams *p);
/* ops/elementwise.c: offset in `in` of element `linear` of `out`, broadcast as numpy does. */
int64_t bcast_index(const Shape *out, const Shape *in, int64_t linear);
/* Elementwise chains (passes/ewchain.c): may n be in one, and how many of
 * its inputs it reads elementwise (the rest are constants: Clip's bounds).
 * A chain reads at most EWCHAIN_MAX_OPERANDS tensors from outside it. */
enum { EWCHAIN_MAX_OPERANDS = 8 };
bool ewchain_op(const Node *n);
int ewchain_data_inputs(const Node *n);
/* The broadcast shape [C,1,...] of a legacy (opset < 7) per-channel PRelu slope. */
Shape prelu_channel_shape(const Shape *x);
void ops_linalg_infer(Infer *x);        /* Gemm, MatMul */
/* Gemm's attributes with their defaults. */
typedef struct GemmParams {
	bool trans_a, trans_b;
	float alpha, beta;
} GemmParams;
void gemm_params(Infer *x, GemmParams *p);
bool select_sum_relu(Infer *x);   /* KilnSelectSum: a fused Relu (kiln.relu) */
/* ops/linalg.c, shared with the integer MatMuls: a 1-D operand as a matrix
 * (A: [1, K], B: [K, 1]), and numpy.matmul's output shape (fails if none). */
Shape matmul_operand(const Shape *s, bool is_a);
void matmul_output_shape(Infer *x, const Shape *a, const Shape *b, Shape *y);
void ops_conv_infer(Infer *x);          /* Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool */
typedef struct ConvTGeometry {
	int ns;                        /* spatial axes, 1 to 3 */
	int64_t group, out_channels;
	int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
} ConvTGeometry;
void conv_transpose_geometry(Infer *x, const Shape *in, const Shape *w, ConvTGeometry *g);
int64_t pool_lp_norm(Infer *x);   /* LpPool's p, checked */
void conv_deform_params(Infer *x, kiln_deformconv_params *p);
void ops_norm_infer(Infer *x);          /* BatchNormalization, LayerNormalization, Softmax, LogSoftmax */
/* A normalization's attributes, resolved with their defaults (ops/norm.c). */
enum { LOSS_MEAN, LOSS_SUM, LOSS_NONE };
typedef struct NormParams {
	int axis;                      /* Softmax, LogSoftmax, Hardmax, LayerNormalization:
	                                  normalized (0 for a scalar) */
	float epsilon;                 /* Batch-, Layer-, Instance-, GroupNormalization */
	bool training;                 /* BatchNormalization: training_mode (opset 14 on) */
	float momentum;                /* BatchNormalization */
	int stash_type;                /* LayerNormalization: the statistics' type */
	int64_t groups;                /* GroupNormalization: num_groups */
	int64_t size;                  /* LRN */
	float alpha, beta, bias;       /* LRN */
	float scale;                   /* ImageScaler */
	const float *channel_bias;     /* ImageScaler: one per channel, NULL: zeros */
	int nchannel_bias;
	int reduction;                 /* the losses: LOSS_* */
	bool has_ignore_index;         /* the losses */
	int64_t ignore_index;
} NormParams;
void norm_params(Infer *x, NormParams *p);
void ops_reduce_infer(Infer *x);        /* Reduce*, ArgMax, ArgMin, TopK, CumSum */
/* A reduction's attributes (and its axes input, known), resolved. */
typedef struct ReduceParams {
	bool reduce[KILN_MAX_RANK];   /* Reduce*: the reduced axes */
	bool noop;                    /* Reduce*: no axes with noop_with_empty_axes: each
	                                 element reduced alone */
	bool keepdims;
	int axis;                     /* ArgMax, ArgMin, TopK: normalized */
	bool select_last_index;       /* ArgMax, ArgMin */
	bool largest;                 /* TopK */
	bool exclusive, reverse;      /* CumSum (its axis is input 1) */
} ReduceParams;
void reduce_params(Infer *x, ReduceParams *p);
/* ops/attention.c: the fused attention node KilnAttention that
 * passes/attention.c makes (inputs Q, K, V as 4-D tensors, an
 * optional mask; kiln.perm_q/k/v: the logical [batch, heads, len, dim] view
 * of each as a Transpose of it; kiln.perm_y: the output as a Transpose of the
 * logical [batch, heads, q_len, v_dim] result; kiln.scale). NULL if the
 * shapes fit, else why not. The kernel's parameters (strides in elements). */
const char *attention_view(const int64_t perm[4][4], float scale, const Shape *q, const Shape *k,
                           const Shape *v, const Shape *mask, kiln_attention_params *p, Shape *out);
const char *attention_layout(const Node *n, const Shape *q, const Shape *k, const Shape *v,
                             const Shape *mask, kiln_attention_params *p, Shape *out);
/* Its kiln.perm_q, _k, _v and _y, checked (permutations of 0..3); NULL if so, else why not. */
const char *attention_perms(const Node *n, int64_t perm[4][4]);
void ops_resize_infer(Infer *x);        /* Resize, Upsample */
void ops_signal_infer(Infer *x);        /* DFT, STFT, Hann/Hamming/BlackmanWindow, MelWeightMatrix */
void ops_misc_infer(Infer *x);          /* Det, MeanVarianceNormalization, ReverseSequence,
                                           LpNormalization */
/* LpNormalization's input as [outer, len, inner] around its axis (normalized), and p (1 or 2). */
typedef struct LpNorm {
	int64_t outer, len, inner;
	int axis;
	int p;
} LpNorm;
void misc_lpnorm_params(Infer *x, LpNorm *p);
unsigned misc_mvn_axes(Infer *x, int rank);   /* MeanVarianceNormalization's axes, a mask */
/* ReverseSequence's batch_axis (0 or 1; time_axis is the other one). */
int misc_reverse_sequence_batch_axis(Infer *x);
void ops_sampling_infer(Infer *x);      /* GridSample, RoiAlign, MaxRoiPool, MaxUnpool */
void sampling_gridsample_params(Infer *x, kiln_gridsample_params *p);
void sampling_roialign_params(Infer *x, kiln_roialign_params *p);
void sampling_maxroipool_params(Infer *x, kiln_roipool_params *p);
void sampling_maxunpool_params(Infer *x, kiln_maxunpool_params *p);
void sampling_col2im_params(Infer *x, kiln_col2im_params *p);
void sampling_affinegrid_params(Infer *x, kiln_affinegrid_params *p);
int signal_dft_axis(Infer *x, int rank);   /* DFT's axis, normalized (ops/signal.c) */
bool signal_dft_inverse(Infer *x);         /* DFT's inverse */
bool signal_window_periodic(Infer *x);     /* Hann/Hamming/BlackmanWindow's periodic */
#define EINSUM_MAX_OPERANDS 8
typedef struct Einsum {
	int noperands;
	char term[EINSUM_MAX_OPERANDS][KILN_MAX_RANK + 1];  /* one letter per axis */
	char out[KILN_MAX_RANK + 1];
	int64_t size[128];                                  /* per letter, -1 if unused */
	bool implicit;         /* no "->": out is the letters used once, in order */
	bool ellipsis;         /* "..." somewhere: its axes are the digits '0'.. */
} Einsum;
void einsum_parse(Infer *x, Einsum *e);
void resize_params(Infer *x, const Shape *in, kiln_resize_params *p);
/* ops/text.c: TfIdfVectorizer */
void ops_text_infer(Infer *x);
typedef struct TfIdf {
	int64_t min_gram, max_gram, max_skip;
	int mode;                          /* 0 TF, 1 IDF, 2 TFIDF */
	const int64_t *pool;
	int npool, nlevels;
	int64_t level_start[64], level_count[64], level_first[64];   /* per n-gram length - 1 */
	const int64_t *indexes;            /* output column per n-gram */
	int64_t ngrams, ncols;
	const float *weights;              /* per n-gram, or NULL */
} TfIdf;
void tfidf_params(Infer *x, TfIdf *t);
/* ops/ml.c: ai.onnx.ml (tree ensembles and their companions) */
void ops_ml_infer(Infer *x);
/* A tree ensemble as compact node arrays: each tree laid out depth first
 * from its root; a branch goes to tru or fls (global node indices), a leaf
 * holds its weights leaf_target/leaf_w[tru .. tru + fls). */
typedef struct TreeEnsemble {
	bool is_classifier;
	bool is_double;           /* thresholds or weights given as double tensors */
	int64_t nnodes, ntrees, nleafw;
	int64_t ntargets;         /* targets, or classes of a classifier */
	int32_t *feat, *tru, *fls, *roots, *leaf_target;
	uint8_t *mode;            /* KILN_TREE_* (kiln/kernels.h) */
	double *thr, *leaf_w;     /* widened; float attributes round-trip */
	double *base;             /* base_values, nbase of them (0: none) */
	int64_t nbase;
	int agg, post;            /* KILN_TREE_SUM.., KILN_ML_* */
	const int64_t *labels;    /* classifier: ntargets class labels */
	bool binary_case;         /* classifier: 2 classes and one class id used */
	bool all_positive;        /* classifier: no negative class weight */
	int64_t max_feature;      /* largest feature id a branch reads, -1 if none */
} TreeEnsemble;
void tree_ensemble_params(Infer *x, TreeEnsemble *t);
typedef struct MlLinear {
	double *coef, *intercepts;   /* [ntargets, nfeatures], [nintercepts] */
	int64_t ntargets, nfeatures, nintercepts;
	const int64_t *labels;       /* LinearClassifier */
	int64_t nlabels;
	int64_t multi_class;
	int post;                    /* KILN_ML_* */
} MlLinear;
void ml_linear_params(Infer *x, MlLinear *l);
typedef struct MlVector {
	double *offset, *scale;      /* Scaler; Imputer's values in scale */
	int64_t noffset, nscale;
	int norm;                    /* Normalizer: 0 MAX, 1 L1, 2 L2 */
	double threshold;            /* Binarizer */
	double replaced;             /* Imputer */
} MlVector;
void ml_vector_params(Infer *x, MlVector *v);
/* A ZipMap's keys, checked: int64 (*ints) or strings (*strings); returns their count. */
int ml_zipmap_keys(Infer *x, const int64_t **ints, const WeightString **strings);
/* ops/select.c: NonZero, Unique, Compress, NonMaxSuppression (sizes from frozen values) */
void ops_select_infer(Infer *x);
typedef struct CompressSel {
	int axis;                      /* -1: the flattened input */
	int64_t outer, len, inner;     /* the input as [outer, len, inner] around the axis */
	int64_t *sel, nsel;            /* the selected indices along it */
} CompressSel;
void compress_selection(Infer *x, CompressSel *c);
void ops_control_infer(Infer *x);       /* If, Loop, Scan (ops/control.c) */
void ops_tensor_infer(Infer *x);         /* Reshape, Flatten, Transpose, Concat, Split, Slice,
                                           Gather, Squeeze, Unsqueeze, Shape, Constant, Identity */
void ops_rnn_infer(Infer *x);           /* RNN, GRU, LSTM */
/* An RNN, GRU or LSTM node as the kernel sees it (ops/rnn.c). */
typedef struct RnnNode {
	int ndirs, layout;
	int64_t gates;                 /* G: 1, 3 or 4 */
	int64_t y_dir_offset;          /* elements from direction 0 to 1 in Y */
	int64_t state_dir_offset;      /* the same in Y_h, Y_c, initial_h, initial_c */
	kiln_rnn_params dir[2];        /* per direction (chunk_rows = the whole batch) */
} RnnNode;
void rnn_node(Infer *x, RnnNode *r);
/* The rows per chunk of the kernel's work buffer (every direction's
 * chunk_rows), within the arena scratch budget; returns the floats of
 * work memory, -1 if a single batch row needs more than kiln allows. */
int64_t rnn_chunk(RnnNode *r);
int64_t rnn_scratch_bytes(const Sig *s, int node, Arena *a);   /* node_scratch_bytes */
/* ops/edgeconv.c: the fused kNN EdgeConv node KilnEdgeConv (passes/edgeconv.c) */
void edgeconv_params(Infer *x, kiln_edgeconv_params *p);   /* shapes only, no weights */
/* ops/convchain.c: the fused chain of 1x1 convolutions KilnConvChain (passes/convchain.c) */
void convchain_params(Infer *x, kiln_convchain_params *p);   /* shapes only, no weights */
/* Its layers' activations, from kiln.acts, kiln.alphas and kiln.betas. */
typedef struct ConvChainActs {
	FusedAct act[KILN_CONVCHAIN_MAX_LAYERS];
	float alpha[KILN_CONVCHAIN_MAX_LAYERS], beta[KILN_CONVCHAIN_MAX_LAYERS];
} ConvChainActs;
void convchain_acts(Infer *x, int nlayers, ConvChainActs *a);
/* ops/conv_algo.c: which kernel a float Conv runs, for the plan and the emitter.
 * A window op's geometry in three slots (D, H, W); an op with fewer spatial
 * axes uses the last ones (1-D is W, 2-D is H and W) and size 1 elsewhere. */
typedef struct WindowGeo {
	int ns;
	int64_t k[3], s[3], d[3], pb[3], pe[3], in[3], outsz[3];
	/* the window's other attributes, resolved with their defaults */
	int64_t group;                 /* Conv (1 for the pools) */
	int storage_order;             /* MaxPool's indices: 0 row major, 1 column major */
	int count_include_pad;         /* AveragePool */
} WindowGeo;
bool window_geometry(Infer *x_, const Shape *x, const Shape *y, const Shape *w, WindowGeo *g);
/* A 2-D Conv over one-pixel-wide columns seen as one wide row: swaps H and W. */
void column_as_row(WindowGeo *g);
bool conv2d_params(Infer *inf, const Shape *x, const Shape *y, const Shape *w,
                   kiln_conv2d_params *p);          /* false: not 1-D or 2-D */
/* Winograd F(2x2, 3x3) over the packed path: by the shape (winograd_by_shape),
 * or with compile --winograd by the batch's tiles too */
bool winograd_wins(const Graph *g, const kiln_conv2d_params *p);
bool winograd_by_shape(const kiln_conv2d_params *p);
bool wino1d_wins(const kiln_conv2d_params *p);
int64_t conv_scratch_bytes(const Sig *s, int node, Arena *a);  /* node_scratch_bytes */
/* ops/linalg.c: a float16 or bfloat16 Gemm/MatMul's float32 copies (emit/linalg.c), else 0 */
int64_t half_gemm_scratch_bytes(const Sig *s, int node);   /* node_scratch_bytes */
int64_t half_gemm_scratch_floats(int64_t nelem);          /* one copy's floats */
/* ops/quant.c: MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, DynamicQuantizeLinear */
void ops_quant_infer(Infer *x);
/* How a quantized matmul's zero point or scale of input i maps onto its
 * operand: absent, one value, [M] / [N], or [D.., M, 1] / [D.., 1, N]. */
typedef enum QParamKind { QP_NONE, QP_TENSOR, QP_VECTOR, QP_BATCHED } QParamKind;
QParamKind quant_param_kind(Infer *x, int i, const Shape *operand, bool per_row);
typedef struct QConvGeometry {
	int ns;                        /* spatial axes, 1 to 3 */
	int64_t group, out_channels;
	int64_t kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
} QConvGeometry;
bool quant_fused_relu(Infer *x);   /* KilnQLinear*: a fused Relu (kiln.relu) */
/* ConvInteger / QLinearConv geometry (Conv's attributes) for input in, weights w. */
void qconv_geometry(Infer *x, const Shape *in, const Shape *w, QConvGeometry *g);
/* QuantizeLinear / DequantizeLinear: x seen as [outer, len, inner] around
 * `axis`; the scale (and zero point) is one value, one per index of the
 * axis, or (opset 21's block_size) one per block of `block` indices of the
 * axis, the last block possibly partial: scale[o, a / block, i]. */
typedef enum QdqKind { QDQ_TENSOR, QDQ_AXIS, QDQ_BLOCKED } QdqKind;
typedef struct QdqGeometry {
	QdqKind kind;
	int64_t outer, len, inner, block, nblocks;
	int qtype;          /* the quantized type: Q's output, DQ's input */
	int ftype;          /* the float type: the scale's (DQ's output) */
	bool saturate;      /* float8 outputs of QuantizeLinear (opset 19) */
} QdqGeometry;
void qdq_geometry(Infer *x, QdqGeometry *g);
/* ops/tensor.c: a tensor op's attributes, resolved with their defaults. */
enum { SCATTER_NONE, SCATTER_ADD, SCATTER_MUL, SCATTER_MAX, SCATTER_MIN };
typedef struct TensorParams {
	int axis;                      /* normalized: Concat, Split, Gather, GatherElements,
	                                  ScatterElements (default 0); OneHot (-1, an axis of
	                                  the output) */
	int64_t perm[KILN_MAX_RANK];   /* Transpose: the attribute, or the axes reversed */
	const Tensor *value;           /* ConstantOfShape: the one value, NULL: zeros */
	bool upper;                    /* Trilu */
	int64_t blocksize;             /* DepthToSpace, SpaceToDepth */
	bool crd;                      /* DepthToSpace: mode="CRD" (else DCR) */
	int64_t batch_dims;            /* GatherND */
	int reduction;                 /* ScatterElements, ScatterND, Scatter: SCATTER_* */
	int64_t k;                     /* EyeLike: the diagonal */
	const char *pad_mode;          /* Pad: constant, reflect, edge or wrap */
	float pad_value;               /* Pad before opset 11: attribute value */
	int nstarts, nends, naxes;     /* Slice before opset 10: its attributes (-1: absent) */
	int64_t starts[KILN_MAX_RANK], ends[KILN_MAX_RANK], axes[KILN_MAX_RANK];
} TensorParams;
void tensor_params(Infer *x, TensorParams *p);
/* ops/tensor.c: Pad's begin and end pads for every axis (2 * rank values). */
void pad_amounts(Infer *x, int rank, int64_t *pads);

#endif
