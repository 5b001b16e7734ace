/*
 * opdef.h - the op record: everything a stage of the compiler knows about
 * one operator, in one place.
 *
 * Each op family keeps its records in a table at the end of its inference
 * file (compiler/ops/<family>.c, `const OpDef ops_<family>_defs[]`, ended by
 * a row with op NONE); ops.c gathers the tables and op_def(op) finds an op's
 * record. The stages call through the record and hold no per-op choice of
 * their own: shape inference calls `infer`, partial evaluation picks its
 * rule by `peval` (and the scalar functions for elementwise ops), the batch
 * analysis its rule by `batch`, the planner asks `view` and `scratch`, the
 * stitching model `cost`, the emitter calls `emit`, and `kiln ops` prints
 * `types` and `note`. The rules a kind names are functions of the stage that
 * applies them (peval.c, batchdep.c, stitch.c): a rule library the records
 * point into.
 *
 * An op is supported exactly when it has a record; every record has both
 * `infer` and `emit` (tests/unit/test_opdef.c checks it).
 * docs/adding-an-op.md tells how to add one.
 */
#ifndef KILN_OPDEF_H
#define KILN_OPDEF_H

#include <stdbool.h>
#include <stdint.h>

#include "sig.h"

struct Emit;
typedef void (*EmitHook)(struct Emit *E);
/* Bytes of arena scratch node needs while it runs (plan.c), 0 for none. */
typedef int64_t (*ScratchHook)(const Sig *s, int node, Arena *a);

/* Partial evaluation at compile time (peval.c): the rule that computes the
 * op's output from known inputs; PE_NONE: never evaluated. */
typedef enum PevalKind {
	PE_NONE,
	PE_MAP,              /* unary or binary (variadic, left to right): eval_f/eval_i */
	PE_MEAN,             /* Mean: the sum (eval_f2) divided by the count */
	PE_CAST,             /* Cast, CastLike */
	PE_WHERE,
	PE_CLIP,
	PE_IS_NAN,
	PE_IS_INF,
	PE_SAME_BYTES,       /* Reshape, Flatten, Squeeze, Unsqueeze */
	PE_BROADCAST,        /* Expand, Identity */
	PE_REDUCE,           /* by `reduce` */
	PE_ARG_EXTREMUM,     /* ArgMax, ArgMin: `reduce` RD_MAX or RD_MIN */
	PE_GATHER,
	PE_SLICE,
	PE_CONCAT,
	PE_TRANSPOSE,
	PE_TILE,
	PE_TRILU,
	PE_RANGE,
	PE_CUMSUM,
	PE_CONSTANT_OF_SHAPE,
} PevalKind;

/* What a reduction accumulates (peval.c). */
typedef enum ReduceKind {
	RD_NONE, RD_SUM, RD_MEAN, RD_PROD, RD_MIN, RD_MAX, RD_L1, RD_L2, RD_SUM_SQUARE,
	RD_LOG_SUM, RD_LOG_SUM_EXP,
} ReduceKind;

/* The batch-independence rule of the op (batchdep.c): how a batch axis of
 * its inputs reaches its outputs, or why it mixes rows. BK_NONE: the
 * analysis does not know the op (it may mix rows). */
typedef enum BatchKind {
	BK_NONE,
	BK_ELEMENTWISE,      /* per element after broadcasting */
	BK_DROPOUT,          /* elementwise unless in training mode */
	BK_N_FIRST,          /* the first input is [N, C, ...], each n on its own */
	BK_LAYOUT,           /* Reshape, Flatten, Squeeze, Unsqueeze */
	BK_TRANSPOSE,
	BK_CONCAT,
	BK_SPLIT,
	BK_SLICE,
	BK_GATHER,
	BK_ELEMENTS,         /* GatherElements, ScatterElements */
	BK_GATHER_ND,
	BK_MATMUL,
	BK_QLINEAR_MATMUL,
	BK_GEMM,
	BK_EINSUM,
	BK_SOFTMAX,          /* over an axis (Softmax, LogSoftmax, Hardmax) */
	BK_ATTENTION,        /* KilnAttention: batch and heads apart, K and V rows per query */
	BK_LAYER_NORM,
	BK_ROI_POOL,         /* MaxRoiPool: rois name their image */
	BK_AXIS_ATTR,        /* works along the "axis" attribute (LpNormalization) */
	BK_REDUCE,
	BK_ARG_EXTREMUM,
	BK_ALONG_AXIS,       /* CumSum (axis input), TopK, KilnKnn and KilnSelect (the
	                        record's axis hook); `along` names what it does there */
	BK_DET,              /* matrices on the last two axes */
	BK_TRILU,
	BK_MVN,
	BK_DFT,
	BK_ONE_HOT,
	BK_REPEAT,           /* Pad, Tile, Expand, CenterCropPad */
	BK_RECURRENT,
	BK_LOSS,
	BK_ROWS_AS_IS,       /* every element on its own, any layout (ML Binarizer, ZipMap) */
	BK_ROWS_2D,          /* each row of [N, F] on its own (ai.onnx.ml) */
	BK_FEATURE_SELECT,   /* ML ArrayFeatureExtractor */
	BK_POSITION,         /* writes values that depend on the row's position (EyeLike) */
	BK_CONTROL,          /* If, Loop, Scan: not analysed */
} BatchKind;

/* How a fact about integer index values (batchdep.c: bounded in [0, B), a
 * batch base n*S, or their flat sum) on input 0 reaches output 0, for the
 * ops that move indices without computing on them. IF_NONE: no fact passes. */
typedef enum IndexFlow {
	IF_NONE,
	IF_VIEW,             /* the same values, any layout: bound and flat pass (a flat
	                        index only while the output keeps a batch axis) */
	IF_BROADCAST,        /* Expand: as IF_VIEW; a batch base moves when only other
	                        axes are broadcast */
	IF_BOUND,            /* a selection or copy of the values: a bound passes */
	IF_GATHER,           /* Gather: a bound passes unless the indices are flat */
	IF_TOPK_INDICES,     /* TopK: output 1 lies in [0, the axis' length) */
} IndexFlow;

/* Refinements of the op's batch rule (batchdep.c), OpDef.batch_flags. */
enum {
	BF_TRAINING_STATS = 1 << 0, /* BK_N_FIRST: attribute training_mode or output 1 takes
	                               statistics over the batch (BatchNormalization) */
	BF_FLAT_INDICES = 1 << 1,   /* BK_N_FIRST: output 1 counts elements across the whole
	                               batch (MaxPool) */
	BF_KEEPS_BATCH = 1 << 2,    /* BK_N_FIRST: mixes unless axis 0 keeps its length
	                               (Resize, Upsample) */
	BF_AXIS_INPUT = 1 << 3,     /* BK_ALONG_AXIS: the axis is input 1 (CumSum); else
	                               the record's axis hook gives it */
	BF_PAD_VALUE = 1 << 4,      /* BK_REPEAT: pads; input 2, the pad value, must not carry
	                               the batch (Pad) */
	BF_CONSTANT_ROWS = 1 << 5,  /* rows of one constant when no input outside shape_inputs
	                               carries the batch (ConstantOfShape, Expand) */
	BF_ONE_BRANCH = 1 << 6,     /* BK_CONTROL: a branch chosen at compile time is analysed
	                               (If) */
};

/* What the op does with an index that depends on the sample's position in
 * the batch (batchdep.c: a base n*S, a flat n*S + [0, B) or a tuple holding
 * one); PX_NONE: it may only pass one on as a view (IF_VIEW) or read its
 * shape (OpDef.shape_only), else the node is refused with the reason. */
typedef enum PositionUse {
	PX_NONE,
	PX_ADD,              /* Add(bounded, base): a flat index */
	PX_GATHER,           /* Gather at a flat index along the data's batch axis */
	PX_GATHER_ELEMENTS,  /* GatherElements at a flat index along the batch axis */
	PX_SCATTER_ELEMENTS, /* ScatterElements at a flat index along the batch axis */
	PX_GATHER_ND,        /* GatherND with tuples holding the position */
	PX_SCATTER_ND,       /* ScatterND with tuples holding the position */
	PX_TUPLE_CONCAT,     /* Concat of index columns into such tuples */
} PositionUse;

/* The padding proof's rule for the op where its batch kind does not say
 * it all (padproof.c): how padded positions' values combine, or which of
 * the kind's variants the op is. PD_NONE: the kind's rule as it stands. */
typedef enum PadRule {
	PD_NONE,
	PD_WHERE,            /* a known condition picks input 1 or 2 */
	PD_MUL,              /* 0 * finite is 0; a masked logit * c > 0 stays masked */
	PD_DIV,              /* 0 / c is 0; a masked logit / c > 0 stays masked */
	PD_NEG,              /* -0 is 0 */
	PD_ADD,              /* a masked logit (-inf or <= -1e4) added stays masked; adding 0
	                        keeps a padded-position index */
	PD_SUB,              /* as PD_ADD, input 1 subtracted */
	PD_SUM,              /* as PD_ADD over any number of inputs */
	PD_PASS_INDEX,       /* a padded-position index passes (Identity, Cast) */
	PD_SOFTMAX,          /* over a masked padded axis: 0 there */
	PD_LOG_SOFTMAX,      /* over a masked padded axis: masked logits there */
	PD_PER_CHANNEL,      /* BK_N_FIRST: per position with per-channel parameters
	                        (BatchNormalization) */
	PD_STATS,            /* BK_N_FIRST: statistics over the spatial axes
	                        (InstanceNormalization) */
	PD_WINDOW,           /* BK_N_FIRST: a window over the spatial axes; its row inputs
	                        (a fused residual) analysed (Conv) */
	PD_TOPK,             /* BK_ALONG_AXIS: sorts; padded positions must not win */
	PD_FILL,             /* fills one value (attribute value) of a size-dependent shape */
	PD_SIZES,            /* makes values from sizes (Range): refused where it makes a
	                        padded axis */
	PD_BROADCAST,        /* may make a padded axis of data without it (Expand) */
} PadRule;

/* The stitching model's cost (stitch.c): multiply-adds of the ops that
 * dominate; CK_ELEMENTS: one op per element of its largest operand. */
typedef enum CostKind {
	CK_ELEMENTS, CK_MATMUL, CK_RECURRENT,   /* Gemm: its flops hook (transA) */
	CK_CONV,             /* W [Cout, Cin/group, k...]: per output element */
	CK_CONV_TRANSPOSE,   /* W [Cin, Cout/group, k...]: per input element */
} CostKind;

/* How batch tiling (batchtile.c) sees a node reading a large weight. */
typedef enum TileKind {
	TK_NONE,             /* tiles would not keep its reuse of the weight */
	TK_TABLE,            /* rows of a table (Gather): no reuse to keep */
	TK_GEMM,             /* the rows of input 0 against the weight (MatMul) */
	TK_GEMM_TRANS_A,     /* as TK_GEMM, unless attribute transA transposes input 0 (Gemm) */
	TK_CONV,             /* X [N, C, spatial...], W, output [N, M, spatial...]: each
	                        output pixel of a sample is a row against the weight */
} TileKind;

typedef struct OpDef {
	int op;                        /* OP_x; NONE ends a family's table */
	InferHook infer;               /* shape and type inference (shape.c) */
	EmitHook emit;                 /* the node function's body (emit_c.c) */
	bool emit_returns;             /* emit writes the function's return itself */
	/* partial evaluation */
	PevalKind peval;
	ReduceKind reduce;
	double (*eval_f1)(double x);   /* PE_MAP, one input: floats (computed in double) */
	/* ... on float32 and the 16-bit floats, where the generated C computes
	 * in float with kiln's own functions (exp, log, ...): the same function,
	 * so that a folded value has the bits the runtime would compute */
	float (*eval_f32_1)(float x);
	float (*eval_f32_2)(float a, float b);
	int64_t (*eval_i1)(int64_t x); /* ... integers and bool */
	double (*eval_f2)(double a, double b, const Node *n);
	/* false: not evaluated (a division by zero) */
	bool (*eval_i2)(int64_t a, int64_t b, int64_t *r, bool is_unsigned, const Node *n);
	/* batch analysis */
	BatchKind batch;
	unsigned shape_inputs;         /* bit i: input i is read as a shape, axes, count or type */
	unsigned row_inputs;           /* BK_N_FIRST: bit i: input i > 0 holds per-sample rows
	                                  read with the data's (GridSample's grid, DeformConv's
	                                  offset and mask, a fused residual or neighbours) */
	IndexFlow index;               /* index facts through the op (batchdep.c) */
	PositionUse position;          /* a position-dependent index (batchdep.c) */
	unsigned batch_flags;          /* BF_*: refinements of `batch` */
	const char *along;             /* BK_ALONG_AXIS: what the op does along its axis, for
	                                  the analysis' reason ("sorts": "sorts along the batch
	                                  axis 0") */
	/* BK_ALONG_AXIS without BF_AXIS_INPUT, IF_TOPK_INDICES: the axis it works
	 * along, resolved and normalized (TopK's attribute, the last for KilnKnn
	 * and KilnSelect); NULL: not known */
	int (*axis)(Infer *x);
	bool shape_only;               /* reads only its input's shape, never its values
	                                  (Shape, Size; batchdep.c, padproof.c) */
	/* padding proof (padproof.c) */
	PadRule pad;
	bool size_data;                /* may take values that depend on the bucket size as
	                                  data (it makes shapes or fills from them) */
	/* planning */
	bool view;                     /* output 0 is input 0's bytes under another shape */
	bool in_place;                 /* each output element from the same element of each
	                                  input: may write over an input that dies */
	bool overwrites;               /* output 0 is input 0 with some elements written over
	                                  (Scatter*, three inputs): may take input 0's buffer
	                                  when it dies there */
	bool narrow_types;             /* float8 and 4-bit values may pass (shape.c) */
	ScratchHook scratch;
	CostKind cost;
	/* The cost where no kind describes it (a fused op, or Gemm, whose K
	 * follows transA): multiply-adds x 2 of node n at signature s; NULL:
	 * from `cost`. */
	double (*flops)(const struct Sig *s, const Node *n);
	TileKind tile;
	/* kiln ops */
	unsigned types;                /* OT_* element types, 0: the schema's */
	const char *note;
} OpDef;

/* OpDef.types: where kiln takes fewer element types than the schema. */
enum {
	OT_F32 = 1 << 0, OT_F64 = 1 << 1, OT_F16 = 1 << 2, OT_BF16 = 1 << 3,
	OT_FLOATS = OT_F32 | OT_F64 | OT_F16 | OT_BF16,
	OT_INTS = 1 << 4,     /* every integer type and bool the schema allows */
	OT_ALL = OT_FLOATS | OT_INTS,
};

/* The record of op, NULL if kiln does not compile it. */
const OpDef *op_def(int op);

/* The family tables (compiler/ops/<family>.c). */
extern const OpDef ops_elementwise_defs[], ops_linalg_defs[], ops_conv_defs[], ops_norm_defs[],
	ops_reduce_defs[], ops_tensor_defs[], ops_quant_defs[], ops_resize_defs[],
	ops_sampling_defs[], ops_signal_defs[], ops_control_defs[], ops_misc_defs[],
	ops_text_defs[], ops_select_defs[], ops_rnn_defs[], ops_ml_defs[],
	ops_attention_defs[], ops_edgeconv_defs[], ops_convchain_defs[],
	ops_scatterrows_defs[];   /* kiln's own fused ops (ops_kiln.def) */

#endif
