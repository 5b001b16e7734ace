/*
 * kiln.h - the compiler's internal header: one section per source file, in
 * pipeline order (utilities, loader, IR, op registry, weights, reports).
 *
 * Conventions: all compiler memory comes from an Arena owned by one compile
 * (nothing is freed piecemeal); graph objects refer to each other by index
 * (value ids, node ids), never by pointer, except a Graph's subgraphs;
 * user errors go through diag_fail*(), which long-jumps to the protected
 * entry point, and broken invariants through KILN_ASSERT.
 */
#ifndef KILN_COMPILER_H
#define KILN_COMPILER_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/kernels.h"
#include "kiln/kiln.h"

/* ---- diag.c: errors ---------------------------------------------------- */

/* One compile's error state. The message is one line without the
 * "kiln: error: " prefix, which the CLI adds. */
typedef struct Diag {
	const char *file;        /* model path as the user gave it */
	enum kiln_status status; /* KILN_OK until the first error */
	char msg[1024];          /* the formatted error line */
	jmp_buf *protect;        /* where diag_fail jumps; NULL = abort (a bug) */
} Diag;

struct Graph;
struct Node;

/* Record an error naming the model file and long-jump to d->protect. */
_Noreturn void diag_fail(Diag *d, enum kiln_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same, naming the node: `node 17 "conv1" (Conv, ai.onnx opset 13): ...`. */
_Noreturn void diag_fail_node(Diag *d, const struct Graph *g, const struct Node *n,
                              enum kiln_status st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Format `node 3 "If_0" (If, ai.onnx opset 13) then_branch: node 1 ...`,
 * naming enclosing nodes first; returns the length it wanted (snprintf-style). */
size_t diag_node_path(char *buf, size_t size, const struct Graph *g, const struct Node *n);
/* Bugs, not user errors: report file:line and abort. */
_Noreturn void kiln_die(const char *file, int line, const char *what);
#define KILN_ASSERT(c) ((c) ? (void)0 : kiln_die(__FILE__, __LINE__, #c))

/* ---- arena.c: compiler memory ----------------------------------------- */

/* A chain of blocks with a hard cap; allocation past the cap is a KILN_LIMIT
 * error, a failed malloc KILN_NO_MEMORY. Memory is zeroed. */
typedef struct Arena {
	struct ArenaBlock *head;
	size_t used_bytes;   /* bytes obtained from malloc so far */
	size_t cap_bytes;    /* the hard limit (--max-memory) */
	Diag *diag;
} Arena;

void arena_init(Arena *a, size_t cap_bytes, Diag *d);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t bytes);
void *arena_array(Arena *a, size_t n, size_t elem_bytes); /* overflow-checked */
char *arena_strdup(Arena *a, const char *s);
/* Make room for one more element in a growable array of n elements and
 * capacity *cap (doubling, first 16); returns the (possibly moved) array. */
void *arena_grow(Arena *a, void *items, int n, int *cap, size_t elem_bytes);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Charge bytes that live outside the arena (protobuf-c's) against the cap. */
void arena_charge(Arena *a, size_t bytes);
void arena_uncharge(Arena *a, size_t bytes);

/* ---- dtypes (ir.c) ---------------------------------------------------- */

/* Element types, numbered as ONNX's TensorProto.DataType. */
enum {
	DT_UNDEFINED = 0, DT_FLOAT = 1, DT_UINT8, DT_INT8, DT_UINT16, DT_INT16, DT_INT32,
	DT_INT64, DT_STRING, DT_BOOL, DT_FLOAT16, DT_DOUBLE, DT_UINT32, DT_UINT64,
	DT_COMPLEX64, DT_COMPLEX128, DT_BFLOAT16, DT_FLOAT8E4M3FN, DT_FLOAT8E4M3FNUZ,
	DT_FLOAT8E5M2, DT_FLOAT8E5M2FNUZ, DT_UINT4, DT_INT4, DT_COUNT
};
/* The float8 types (opset 19) are one byte each, in kiln_f8_* format order. */
#define DT_IS_FLOAT8(dt) ((dt) >= DT_FLOAT8E4M3FN && (dt) <= DT_FLOAT8E5M2FNUZ)
/* int4 and uint4 (opset 21) are packed two to a byte everywhere (weights,
 * buffers), the first element in the low nibble; a tensor of n takes
 * (n + 1) / 2 bytes (dtype_bytes). dtype_size says 1 for them. */
#define DT_IS_4BIT(dt) ((dt) == DT_UINT4 || (dt) == DT_INT4)
const char *dtype_name(int dt);  /* "float32", "int64", ...; "?" if unknown */
size_t dtype_size(int dt);       /* bytes per element; 0 for string/undefined */
uint64_t dtype_bytes(int dt, int64_t nelem);  /* bytes of nelem elements, packing counted */
bool dtype_valid(int dt);        /* 1..22 */

/* ---- checked int64 arithmetic ------------------------------------------ */

/* Every shape, size and offset computed from model data (dims, attributes,
 * folded values) goes through these: true if the result overflowed, as the
 * __builtin_*_overflow they wrap. Shape hooks use infer_add/sub/mul (shape.c),
 * which fail naming the node instead. */
static inline bool ck_add(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool ck_sub(int64_t a, int64_t b, int64_t *r) { return __builtin_sub_overflow(a, b, r); }
static inline bool ck_mul(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* ---- limits (docs/limits.md) ------------------------------------------- */

/* What kiln accepts before it calls a model absurd: far above any real model;
 * each has a flag to raise it. An excess is a KILN_LIMIT error naming the flag. */
typedef struct Limits {
	int64_t max_nodes;        /* nodes in one graph (--max-nodes) */
	int64_t max_elements;     /* elements of one tensor, any dim at least 1 (--max-elements) */
	int64_t max_arena_bytes;  /* one signature's arena, one kiln_run context (--max-arena, MiB) */
	int64_t max_c_bytes;      /* the generated NAME.c (--max-c-size, MiB) */
	int64_t max_depth;        /* If/Loop/Scan subgraphs nested in one another (--max-depth) */
} Limits;
/* --max-depth is at most this: every nested graph costs a few stack frames in
 * the loader, shape inference and the emitter. */
#define KILN_MAX_DEPTH_CAP 256
extern const Limits kiln_default_limits;

/* ---- ir.c: the graph -------------------------------------------------- */

#define KILN_MAX_RANK 8
#define NONE (-1)

/* One dimension: a concrete size, a named symbol ("N"), or unknown. */
typedef struct Dim {
	int64_t size;        /* >= 0 if concrete, else -1 */
	const char *param;   /* symbol name if symbolic, else NULL */
} Dim;

typedef struct Shape {
	int rank;            /* -1: rank unknown */
	Dim dims[KILN_MAX_RANK];
} Shape;

/* What kind of thing a value's type is; only tensors are compiled. */
typedef enum TypeKind {
	TK_UNKNOWN, TK_TENSOR, TK_SEQUENCE, TK_MAP, TK_OPTIONAL, TK_SPARSE
} TypeKind;
const char *type_kind_name(TypeKind t);   /* "tensor", "sequence", ... */

typedef enum ValueKind {
	VAL_TEMP,    /* produced by a node */
	VAL_INPUT,   /* graph input fed at run time (or a subgraph's formal input) */
	VAL_WEIGHT,  /* constant bytes: initializer; uses .weight */
	VAL_OUTER    /* a subgraph's reference to an enclosing graph's value; uses .outer_id */
} ValueKind;

/* The bytes of one constant tensor. They point into the mapped model or
 * external-data file whenever the file layout allows (raw_data, packed
 * float/double), so weights are never held twice. */
typedef struct Weight {
	const void *bytes;   /* little-endian elements; for DT_STRING an array of WeightString */
	uint64_t nbytes;     /* dtype_size * nelem; for strings the sum of lengths */
	int64_t nelem;
	uint64_t hash;       /* content hash over dtype, dims and bytes (weights.c) */
	uint64_t bytes_hash; /* hash of the bytes alone, 0 until the passes need it */
	const char *location;/* external data file, or NULL */
	bool is_mapped;      /* bytes live in a file mapping */
} Weight;

typedef struct WeightString {
	const char *data;
	size_t len;
} WeightString;

typedef struct Value {
	const char *name;
	TypeKind type;
	int dtype;           /* DT_*; for sequences/optionals the innermost tensor's */
	Shape shape;
	ValueKind kind;
	bool is_output;      /* listed in the graph's outputs */
	bool is_overridable; /* initializer also listed as a graph input (IR < 4 style) */
	bool is_inline;      /* top graph: computed inside its one reader's loop, never
	                        stored (an elementwise chain, passes/ewchain.c) */
	int producer;        /* node id, or NONE */
	int nuse;            /* node inputs that read it (this graph and nested ones) */
	int outer_id;        /* VAL_OUTER: value id in graph->parent */
	Weight *weight;      /* VAL_WEIGHT */
} Value;

typedef enum AttrType {
	AT_UNDEFINED = 0, AT_FLOAT = 1, AT_INT = 2, AT_STRING = 3, AT_TENSOR = 4,
	AT_GRAPH = 5, AT_FLOATS = 6, AT_INTS = 7, AT_STRINGS = 8, AT_TENSORS = 9,
	AT_GRAPHS = 10, AT_SPARSE_TENSOR = 11, AT_SPARSE_TENSORS = 12,
	AT_TYPE_PROTO = 13, AT_TYPE_PROTOS = 14
} AttrType;

/* A constant tensor held by an attribute (Constant's value, ...). */
typedef struct Tensor {
	int dtype;
	Shape shape;
	Weight w;
} Tensor;

/* One attribute, as written in the model: validated per op by later stages. */
typedef struct Attr {
	const char *name;
	AttrType type;
	float f;                /* AT_FLOAT */
	int64_t i;              /* AT_INT */
	WeightString s;         /* AT_STRING */
	int n;                  /* element count of the list forms */
	float *floats;          /* AT_FLOATS */
	int64_t *ints;          /* AT_INTS */
	WeightString *strings;  /* AT_STRINGS */
	Tensor *tensors;        /* AT_TENSOR (n = 1), AT_TENSORS */
	struct Graph **graphs;  /* AT_GRAPH (n = 1), AT_GRAPHS */
} Attr;

enum { DOMAIN_ONNX, DOMAIN_ML, DOMAIN_TRAINING, DOMAIN_OTHER };
/* "ai.onnx", ...; NULL for DOMAIN_OTHER. Inline: the error messages
 * (diag.c) name domains, and diag.c calls nothing above it. */
static inline const char *domain_name(int domain_id)
{
	switch (domain_id) {
	case DOMAIN_ONNX: return "ai.onnx";
	case DOMAIN_ML: return "ai.onnx.ml";
	case DOMAIN_TRAINING: return "ai.onnx.preview.training";
	}
	return NULL;
}

typedef struct Node {
	int id;              /* index in graph->nodes */
	const char *name;    /* ONNX name, or "" */
	const char *op_type;
	const char *domain;  /* as written, "" for ai.onnx */
	int domain_id;       /* DOMAIN_* */
	int op;              /* row of the op registry (ops.c), or NONE */
	int opset;           /* the model's imported version of the node's domain */
	int since;           /* schema since_version the node resolves to, 0 if none */
	int *in, nin;        /* value ids; NONE for an omitted optional input */
	int *out, nout;      /* value ids; NONE for an omitted optional output */
	Attr *attrs;
	int nattrs;
	bool synthetic;      /* made by the optimizer; `name` is the model node it replaces */
} Node;

typedef struct Graph {
	const char *name;
	struct Graph *parent;    /* enclosing graph, NULL at the top */
	int parent_node;         /* node id in parent owning this subgraph */
	const char *parent_attr; /* attribute name holding it ("then_branch") */
	struct Model *model;
	Node *nodes;
	int nnodes;
	Value *values;
	int nvalues, capvalues;
	int *inputs, ninputs;    /* formal inputs, in order, including overridable weights */
	int *outputs, noutputs;
	int ninitializers;
	struct NameMap *names;   /* name -> value id while loading */
} Graph;

typedef struct Opset {
	const char *domain;  /* as written ("" = ai.onnx) */
	int domain_id;
	int64_t version;
} Opset;

typedef struct Mapping {
	const char *path;
	const void *base;
	uint64_t bytes;
} Mapping;

typedef struct Model {
	const char *path;        /* as given */
	const char *dir;         /* folder holding the model, for external data */
	int64_t ir_version;
	const char *producer_name, *producer_version;
	Opset *opsets;
	int nopsets;
	const char **functions;  /* model-local function names ("domain:name") */
	int nfunctions;
	bool zipmap_tensor;      /* --zipmap=tensor: a ZipMap gives its input tensor (ops/ml.c) */
	Graph *graph;
	Mapping *maps;           /* the model file first, then external-data files */
	int nmaps, capmaps;
	FILE *files[8];          /* open output files, closed by model_close on any path */
	struct Outputs *outputs; /* compile's temporaries, removed by model_close unless
	                            committed (outputs.c) */
	Arena *arena;
	Diag *diag;
	bool is_optimized;       /* the passes ran (passes/pipeline.c) */
	Limits limits;           /* kiln_default_limits unless the caller raised them */
	char warning[512];       /* the first thing the loader repaired (model_warn), or "" */
	int nwarnings;
} Model;

Value *graph_value(Graph *g, int id);
int graph_add_value(Graph *g, const char *name);
uint64_t name_hash(const char *s);  /* FNV-1a, for name tables */
/* Look name up in g, then enclosing graphs; creates VAL_OUTER links as needed.
 * Returns NONE if it is defined nowhere. */
int graph_lookup(Graph *g, const char *name);
int graph_lookup_local(Graph *g, const char *name);
void graph_bind(Graph *g, const char *name, int id);
void ir_print(const Graph *g, FILE *out);
/* Check the IR's invariants (ids in range, one producer per value,
 * topological order, outer links); aborts on a violation, which is a bug. */
void ir_verify(Graph *g);
/* Node path for messages: `node 3 "If_0" (If) then_branch node 1 "x" ...`. */
void shape_print(const Shape *s, FILE *out);
int64_t shape_nelem(const Shape *s);   /* -1 if unknown or overflowing */

/* Walk every graph (depth first, parents before children). */
typedef void (*GraphVisit)(Graph *g, void *user);
void graph_walk(Graph *g, GraphVisit visit, void *user);
/* n's attribute of that name, or NULL. */
const Attr *node_attr(const Node *n, const char *name);
/* Its value when it is an INT (FLOAT, widened), else dflt: no type check (the
 * hooks' attr_int fails on a wrong type; these serve later stages). */
int64_t node_attr_int(const Node *n, const char *name, int64_t dflt);
double node_attr_float(const Node *n, const char *name, float dflt);
/* Whether n owns a subgraph (an If, Loop or Scan body: a GRAPH or GRAPHS attribute). */
bool node_has_subgraph(const Node *n);

/* ---- onnx_load.c: ONNX file -> IR ------------------------------------- */

/* model_new only records the path; model_load maps and parses it, and all
 * its errors long-jump through the Diag. Mappings made before an error are
 * still released by model_close, so call it whatever happened. */
Model *model_new(const char *path, Arena *a, Diag *d);
void model_load(Model *m);
void model_close(Model *m);
/* Record something the loader repaired (the CLI prints the first one). */
void model_warn(Model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void model_track_file(Model *m, FILE *f);
void model_untrack_file(Model *m, FILE *f);
/* The first mapped file that is now shorter than when it was mapped, or
 * NULL (a failed write of the weights says which file changed). */
const char *model_changed_file(const Model *m);
/* outputs.c: remove a compile's temporaries (model_close calls it). */
void outputs_abort(Model *m);
/* Read a standalone TensorProto file (ONNX test data) into t; its bytes
 * live in the arena. */
void tensor_load_file(Model *m, const char *path, Tensor *t);

/* ---- wire.c: protobuf wire pre-pass ----------------------------------- */

/* A payload cut out of the model bytes, left in the mapping. */
typedef struct Stub {
	uint32_t field;      /* TensorProto field it came from (raw_data, float_data, double_data) */
	uint64_t off;        /* offset in the model file */
	uint64_t bytes;
} Stub;
#define WIRE_STUB_FIELD 536870911u   /* highest protobuf field number */
/* Protobuf messages nest at most WIRE_MAX_DEPTH levels besides subgraphs;
 * each subgraph level (NodeProto, AttributeProto, GraphProto) adds 3. */
#define WIRE_MAX_DEPTH 64

struct ProtobufCMessageDescriptor;
/* Copy the message in buf to a "skeleton" without the large TensorProto
 * payloads: each is replaced by an unknown field WIRE_STUB_FIELD holding a
 * Stub. Validates the wire format and nesting depth on the way (subgraphs
 * max_graph_depth deep, see Limits.max_depth). */
uint8_t *wire_skeleton(const struct ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                       size_t len, size_t *out_len, int64_t max_graph_depth, Arena *a, Diag *d);
bool wire_stub_decode(const uint8_t *data, size_t len, Stub *out);

/* ---- ops.c: the op registry ------------------------------------------- */

/* Op ids: OP_Conv, OP_ML_Normalizer, ... one per row of ops.def. */
enum {
#define OP(id, name, dom) OP_##id,
#define OPV(id, since, a, b, c, d)
#define OPV_DEPRECATED(id, since, a, b, c, d)
#define OPSET_MAX(dom, n)
#include "ops.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
	OP_COUNT
};

typedef struct OpInfo {
	const char *op_type;
	int domain_id;
} OpInfo;

typedef struct OpVersion {
	int since;
	int min_in, max_in, min_out, max_out;
	bool deprecated;
} OpVersion;

int op_lookup(const char *op_type, int domain_id);   /* NONE if unknown */
const OpInfo *op_info(int op);
const OpVersion *op_version(int op, int since);
/* The schema version a node of this op resolves to at opset: 0 if none. */
int op_resolve(int op, int64_t opset);
int op_max_opset(int domain_id);
int domain_lookup(const char *domain);   /* DOMAIN_* */
/* Is the op compiled by kiln? Returns NULL if so, else the reason. */
const char *op_unsupported_reason(const Graph *g, const Node *n, char *buf, size_t bufsz);
/* Why an op kiln has no hook for is out of its scope; NULL if it is not. */
const char *op_out_of_scope(int domain_id, const char *op_type);
int op_count(void);

/* ---- shape.c: batch signatures and shape inference -------------------- */

typedef struct ShapeOverride {   /* --shape INPUT=d0,d1,... */
	const char *input;
	int rank;
	int64_t dims[KILN_MAX_RANK];
} ShapeOverride;

typedef struct DimValue {        /* --dim SYMBOL=V: that symbolic dim in every input */
	const char *symbol;
	int64_t value;
} DimValue;

typedef struct BatchDim {        /* --batch-dim INPUT=AXIS */
	const char *input;
	int axis;
} BatchDim;

/* An input whose values are fixed at compile time (for shapes only: the
 * generated code still reads the input). */
typedef struct Freeze {
	const char *input;
	const Tensor *value;   /* or NULL: parse text (--freeze) in the input's type */
	const char *text;      /* "v0,v1,..." */
} Freeze;
/* freeze.c: the values of `--freeze NAME=text` as a tensor of type dt. */
const Tensor *freeze_values(const char *name, int dt, const char *text, Arena *a, Diag *d);

typedef struct BindOptions {
	ShapeOverride *shapes;
	int nshapes;
	BatchDim *batch_dims;
	int nbatch_dims;
	Freeze *freezes;
	int nfreezes;
	DimValue *dims;
	int ndims;
	bool check_declared;    /* --shape must agree with the declared dims (the CLI;
	                           verify binds its data's shapes without it) */
} BindOptions;

/* Known contents of a value, for compile-time shape arithmetic. */
typedef struct Folded {
	int dtype;
	int64_t nelem;
	const void *data;    /* little-endian elements, any alignment */
} Folded;

/* One batch signature of the top graph: static shapes per value id. */
typedef struct Sig {
	int64_t batch;
	Graph *g;
	Shape *shapes;       /* per value id */
	int *dtypes;         /* per value id */
	Folded **folded;     /* per value id, NULL if the contents are not known */
	struct Control **control; /* per node id: an If/Loop/Scan's subgraph signatures
	                             (compiler/control.h), else NULL */
	bool *dead;          /* per node index: read by nothing that runs (sigdce.c), or
	                        NULL (none, or not analysed) */
	bool no_chains;      /* elementwise chains run node by node here: in one loop
	                        they would make the arena larger (sigdce.c) */
	Arena *a;
} Sig;

/* What an op's inference hook sees. */
typedef struct Infer {
	Sig *sig;
	Graph *g;
	Node *n;
	Diag *d;
	Arena *a;
	/* The walk that runs the hooks (shape_infer_nodes), handed down so an
	 * If/Loop/Scan hook infers its bodies with it (subgraph_infer) without
	 * calling back up into shape.c; NULL outside shape inference. */
	void (*infer_nodes)(Sig *s, Diag *d);
} Infer;
typedef void (*InferHook)(Infer *x);

/* Bind inputs (sig->g, sig->batch set by the caller) and infer every value;
 * errors name the tensor, node and dim. */
void shape_infer(Sig *s, const BindOptions *o, Arena *a, Diag *d);
/* The two halves of shape_infer around binding, for subgraphs (subgraph.c):
 * allocate the per-value arrays (weights get their shapes), then run every
 * node's hook in order. */
void shape_sig_init(Sig *s, Arena *a);
void shape_infer_nodes(Sig *s, Diag *d);

/* Helpers for hooks (ops/ *.c). infer_fail names the node and signature. */
_Noreturn void infer_fail(Infer *x, enum kiln_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool infer_has_input(Infer *x, int i);
const Shape *infer_shape(Infer *x, int i);
int infer_dtype(Infer *x, int i);
const char *infer_input_name(Infer *x, int i);
void infer_set_output(Infer *x, int i, int dtype, const Shape *s);
const Folded *infer_folded(Infer *x, int i);
/* infer_folded for an input the op cannot do without: a value left unfolded
 * because it was large (ConstantOfShape -> Trilu -> NonZero) is evaluated on
 * demand (peval_demand). NULL if it cannot be known. */
const Folded *infer_required(Infer *x, int i);
const int64_t *infer_ints(Infer *x, int i, int64_t *n);
const int64_t *infer_require_ints(Infer *x, int i, int64_t *n);
/* Checked shape arithmetic: fails naming the node if the result overflows. */
int64_t infer_add(Infer *x, int64_t a, int64_t b);
int64_t infer_sub(Infer *x, int64_t a, int64_t b);
int64_t infer_mul(Infer *x, int64_t a, int64_t b);
/* attr_types.c: fail naming the node if an attribute has another type
 * than its ONNX schema gives it. */
void attr_check_types(const Graph *g, const Node *n, Diag *d);
/* NULL if a tensor of this shape is within the limits, else what is wrong. */
const char *shape_size_problem(const Shape *s, const Limits *l, char *buf, size_t size);
/* Fail because input i decides a shape and is not known, naming the graph
 * input it is computed from; hint is appended (may be ""). */
_Noreturn void infer_fail_unknown(Infer *x, int i, const char *hint);
void infer_set_folded(Infer *x, int i, int dtype, int64_t nelem, const void *data);
/* peval.c: a node whose inputs are all known is evaluated at compile time
 * (after its inference hook set the output shapes). */
void peval_node(Infer *x);
/* Value id's contents, evaluating its unfolded producers (up to a few levels
 * and a larger size than peval_node keeps) when all of them can be; NULL if
 * that is not possible. */
const Folded *peval_demand(Infer *x, int id);
/* ops/elementwise.c: offset in `in` of element `linear` of `out`, broadcast as numpy does. */
int64_t bcast_index(const Shape *out, const Shape *in, int64_t linear);
/* shape.c: the --shape flag that fixes input v, N on batch_axis (-1: its first symbolic dim). */
const char *shape_flag(Arena *a, const Value *v, int batch_axis);
/* ops/shape_ops.c: Pad's begin and end pads for every axis (2 * rank values). */
void pad_amounts(Infer *x, int rank, int64_t *pads);
/* Element k of little-endian data of type dt, as double. */
double folded_elem(int dt, const void *data, int64_t k);
bool infer_foldable(const Shape *s);
int infer_axis(Infer *x, int64_t axis, int rank, const char *what);
int64_t attr_int(Infer *x, const char *name, int64_t dflt);
float attr_float(Infer *x, const char *name, float dflt);
int attr_ints(Infer *x, const char *name, int64_t *out, int max);
const char *attr_string(Infer *x, const char *name, const char *dflt);

/* ---- plan.c: the static buffer plan ----------------------------------- */

typedef struct PlanBuf {
	int root;            /* value id the buffer is named after; NONE for the region
	                        an If/Loop/Scan node's subgraphs run in, or a node's
	                        scratch (first == last) */
	int first, last;     /* lifetime: schedule steps (node ids), inclusive */
	int64_t bytes;       /* 64-byte aligned size */
	int64_t off;         /* offset in the arena, 64-byte aligned */
} PlanBuf;

typedef struct Plan {
	int *root;           /* per value id: the value whose bytes it shares (itself if none);
	                        a root outside the arena (input, weight) makes a read-only view */
	int *buf_of;         /* per value id: index in bufs, NONE if not in the arena */
	PlanBuf *bufs;
	int nbufs, capbufs;
	int *scratch_of;     /* per node: index in bufs of the work memory its kernel has
	                        to itself while it runs (node_scratch_bytes), NONE if none */
	int64_t arena_bytes;        /* the arena size this signature needs */
	int64_t lower_bound_bytes;  /* the most bytes live at one step */
} Plan;

/* Ops whose output is a view of input 0 (same bytes, another shape). */
bool plan_is_view_op(int op);
/* Bytes of arena scratch node (an index in s->g) needs while it runs, 0 for
 * none: the work memory of kernels such as RNN's. */
int64_t node_scratch_bytes(const Sig *s, int node, Arena *a);
/* Plan the arena of a signature whose shapes are inferred (and dead nodes
 * marked, sig_dce). */
void plan_build(Plan *p, const Sig *s, Arena *a);
/* After sig_dce: whether s's elementwise chains run node by node
 * (s->no_chains), because in one loop they would make its arena larger. */
void plan_choose_chains(Sig *s);

/* ---- sigdce.c: dead nodes of one signature ------------------------------ */

/* Mark the nodes of s (shapes inferred) that compute something no running
 * node and no graph output reads, in s->dead: they get no arena and no code. */
void sig_dce(Sig *s);
/* Whether sig_dce marked node n (a node of s->g) dead. */
bool sig_node_dead(const Sig *s, const Node *n);
/* Whether node n computes anything at s (not every output folded, not dead). */
bool sig_computes(const Sig *s, const Node *n);
/* Whether value id of s->g is computed inside its reader's loop at s (an
 * elementwise chain, passes/ewchain.c): it gets no storage, its producer no
 * code of its own, and what its producer reads is read at that reader. */
bool sig_inline(const Sig *s, int id);
/* Per node id of s->g, the node whose code computes it at s: itself, or
 * the last node of the elementwise chain it belongs to. */
int *sig_runs_at(const Sig *s, Arena *a);
/* plan_svg.c: an SVG picture of n signatures' plans (kiln info --plan --svg). */
void plan_svg(const Graph *g, const Sig *sigs, const Plan *plans, int n, FILE *f);

/* ---- subgraph.c: control flow in the plan ------------------------------ */

/* Values that node's subgraphs read from g are used at that node: raise
 * last_use (per value id of g) to it. */
void subgraph_extend_uses(const Graph *g, int node, int *last_use);
/* Plan the subgraphs of a control-flow node; returns the bytes of the arena
 * region they need while the node runs (0 for any other node). */
int64_t subgraph_plan(const Sig *s, int node, Arena *a);
/* The region was placed at off: move the subgraphs' buffers there. */
void subgraph_place(const Sig *s, int node, int64_t off);

/* ---- ops/ *.c: per-op hooks, by family -------------------------------- */

InferHook op_infer_hook(int op);   /* NULL if the op has none */
void ops_elementwise_infer(Infer *x);   /* unary, binary with broadcasting, Where, Cast, Clip */
/* Elementwise chains (passes/ewchain.c): may n be in one, and how many of
 * its inputs it reads elementwise (the rest are constants: Clip's bounds).
 * A chain reads at most EWCHAIN_MAX_OPERANDS tensors from outside it. */
enum { EWCHAIN_MAX_OPERANDS = 8 };
bool ewchain_op(const Node *n);
int ewchain_data_inputs(const Node *n);
/* The broadcast shape [C,1,...] of a legacy (opset < 7) per-channel PRelu slope. */
Shape prelu_channel_shape(const Shape *x);
void ops_matmul_infer(Infer *x);        /* Gemm, MatMul */
/* ops/matmul.c, shared with the integer MatMuls: a 1-D operand as a matrix
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
void ops_reduce_infer(Infer *x);        /* ReduceMean, ReduceSum */
/* ops/attention.c: the fused attention node, a Softmax with kiln.attention
 * = 1 that passes/attention.c makes (inputs Q, K, V as 4-D tensors, an
 * optional mask; kiln.perm_q/k/v: the logical [batch, heads, len, dim] view
 * of each as a Transpose of it; kiln.perm_y: the output as a Transpose of the
 * logical [batch, heads, q_len, v_dim] result; kiln.scale). NULL if the
 * shapes fit, else why not. The kernel's parameters (strides in elements). */
const char *attention_view(const int64_t perm[4][4], float scale, const Shape *q, const Shape *k,
                           const Shape *v, const Shape *mask, kiln_attention_params *p, Shape *out);
const char *attention_layout(const Node *n, const Shape *q, const Shape *k, const Shape *v,
                             const Shape *mask, kiln_attention_params *p, Shape *out);
void attention_infer(Infer *x);
int64_t attention_scratch_bytes(const Sig *s, int node);
void ops_resize_infer(Infer *x);        /* Resize, Upsample */
void ops_signal_infer(Infer *x);        /* DFT, STFT, Hann/Hamming/BlackmanWindow, MelWeightMatrix */
void ops_misc_infer(Infer *x);          /* Det, MeanVarianceNormalization, ReverseSequence,
                                           LpNormalization */
/* LpNormalization's input as [outer, len, inner] around its axis, and p (1 or 2). */
typedef struct LpNorm {
	int64_t outer, len, inner;
	int p;
} LpNorm;
void misc_lpnorm_params(Infer *x, LpNorm *p);
void ops_sampling_infer(Infer *x);      /* GridSample, RoiAlign, MaxRoiPool, MaxUnpool */
void sampling_gridsample_params(Infer *x, kiln_gridsample_params *p);
void sampling_roialign_params(Infer *x, kiln_roialign_params *p);
void sampling_maxroipool_params(Infer *x, kiln_roipool_params *p);
void sampling_maxunpool_params(Infer *x, kiln_maxunpool_params *p);
void sampling_col2im_params(Infer *x, kiln_col2im_params *p);
void sampling_affinegrid_params(Infer *x, kiln_affinegrid_params *p);
int signal_dft_axis(Infer *x, int rank);   /* DFT's axis, normalized (ops/signal.c) */
#define EINSUM_MAX_OPERANDS 8
typedef struct Einsum {
	int noperands;
	char term[EINSUM_MAX_OPERANDS][KILN_MAX_RANK + 1];  /* one letter per axis */
	char out[KILN_MAX_RANK + 1];
	int64_t size[128];                                  /* per letter, -1 if unused */
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
void ops_shape_infer(Infer *x);         /* Reshape, Flatten, Transpose, Concat, Split, Slice,
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
/* ops/edgeconv.c: the fused kNN EdgeConv node (passes/edgeconv.c) */
bool edgeconv_node(const Node *n);                /* a Conv marked kiln.edgeconv */
void edgeconv_infer(Infer *x);
void edgeconv_params(Infer *x, kiln_edgeconv_params *p);   /* shapes only, no weights */
int64_t edgeconv_scratch_bytes(const Sig *s, int node, Arena *a);   /* node_scratch_bytes */
/* ops/conv_algo.c: which kernel a float Conv runs, for the plan and the emitter.
 * A window op's geometry in three slots (D, H, W); an op with fewer spatial
 * axes uses the last ones (1-D is W, 2-D is H and W) and size 1 elsewhere. */
typedef struct WindowGeo {
	int ns;
	int64_t k[3], s[3], d[3], pb[3], pe[3], in[3], outsz[3];
} WindowGeo;
bool window_geometry(Infer *x_, const Shape *x, const Shape *y, const Shape *w, WindowGeo *g);
/* A 2-D Conv over one-pixel-wide columns seen as one wide row: swaps H and W. */
void column_as_row(WindowGeo *g);
bool conv2d_params(Infer *inf, const Shape *x, const Shape *y, const Shape *w,
                   kiln_conv2d_params *p);          /* false: not 2-D */
bool winograd_wins(const kiln_conv2d_params *p);   /* Winograd over the packed path */
int64_t conv_scratch_bytes(const Sig *s, int node, Arena *a);  /* node_scratch_bytes */
bool knn_node(const Node *n);                     /* a TopK marked kiln.knn */
void knn_infer(Infer *x);
int64_t knn_scratch_bytes(const Sig *s, int node);   /* node_scratch_bytes */
/* ops/matmul.c: a float16 or bfloat16 Gemm/MatMul's float32 copies (emit/linalg.c), else 0 */
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

/* ---- weights.c: hashing and dedup ------------------------------------- */

uint64_t weight_hash(int dtype, const Shape *s, const Weight *w);
bool weight_equal(const Weight *a, const Weight *b, int dta, int dtb,
                  const Shape *sa, const Shape *sb);

typedef struct WeightStats {
	int ninitializers;       /* initializers in all graphs */
	int nconstants;          /* tensors held by Constant nodes and attributes */
	int nexternal;           /* of those, stored in external data files */
	uint64_t weight_bytes;   /* bytes of all constant tensors */
	uint64_t unique_bytes;   /* identical tensors (dtype, shape, bytes) counted once */
} WeightStats;
void weight_stats(Model *m, WeightStats *out);

/* ---- json.c: a small JSON writer -------------------------------------- */

typedef struct Json {
	FILE *out;
	int depth;
	bool first[64];      /* per nesting level: no comma needed yet */
	bool pending_key;
} Json;
void json_begin_object(Json *j);
void json_end_object(Json *j);
void json_begin_array(Json *j);
void json_end_array(Json *j);
void json_key(Json *j, const char *key);
void json_string(Json *j, const char *s);
void json_int(Json *j, int64_t v);
void json_uint(Json *j, uint64_t v);
void json_bool(Json *j, bool v);
void json_null(Json *j);
/* a key and its value in one call */
void json_field_int(Json *j, const char *key, int64_t v);
void json_field_uint(Json *j, const char *key, uint64_t v);
void json_field_string(Json *j, const char *key, const char *s);
void json_field_bool(Json *j, const char *key, bool v);
void json_write_escaped(FILE *out, const char *s);

/* ---- report.c: `kiln info` and `kiln check` --------------------------- */

typedef struct InfoOptions {
	bool json;
	const int64_t *batches;  /* signatures to infer; none if nbatches == 0 */
	int nbatches;
	const BindOptions *bind;
	bool plan;               /* also plan the arena of each signature */
	/* With plan: run the optimizer before inferring the signatures, so the
	 * arenas and context bytes are those `kiln compile` gives (the summary
	 * still describes the model as written). NULL: plan the graph as loaded. */
	const struct PassOptions *optimize;
	const char *svg_path;    /* with plan: also draw the plans into this SVG file */
} InfoOptions;

void report_info(Model *m, FILE *out, const InfoOptions *o);
/* The IR, and with a signature its static shapes. */
void report_dump(Model *m, FILE *out, const InfoOptions *o);
/* Returns the number of unsupported nodes. */
int report_check(Model *m, FILE *out, const BindOptions *bind);

/* `kiln ops`: the supported operators, as text or Markdown (ops_doc.c). */
int report_ops(FILE *out, bool markdown);

/* ---- batchdep.c: batch independence ------------------------------------ */

enum { BD_NONE = -1, BD_GLOBAL = -2 };   /* value states besides a batch axis >= 0 */

typedef struct BatchDep {
	bool independent;        /* proved: no op mixes rows along the batch axis */
	bool any_batched;        /* some graph input has a batch axis */
	const char *why;         /* else the first reason, naming the node */
	int *axis;               /* per value id: batch axis, BD_NONE or BD_GLOBAL (if independent) */
	int64_t *per_sample;     /* per value id: the batch axis' extent per sample */
} BatchDep;
/* Track the batch axis through every op of the top graph at two probe batch
 * sizes of its own. Never fails: what it cannot prove is reported in why. */
void batchdep_analyse(Model *m, const BindOptions *o, BatchDep *out);

/* ---- stitch.c: what the runtime's batch stitching needs ----------------- */

typedef struct SigCost {
	uint64_t flops;          /* estimated arithmetic of one call */
	uint64_t bytes;          /* bytes its nodes read and write */
	double ns;               /* the estimate: call overhead + flops + bytes, in ns */
} SigCost;
void sig_cost(const Sig *s, SigCost *out);

typedef struct Stitch {
	BatchDep dep;
	int *axis;               /* per interface value id: the descriptor's batch axis or -1 */
	SigCost *cost;           /* per signature */
	int64_t plan_bound;
	uint64_t staging_bytes, context_bytes;
	int64_t max_arena_bytes;
	int64_t maxb;            /* the largest compiled batch size */
} Stitch;
/* Everything the descriptor and NAME_CONTEXT_BYTES need, for signatures in
 * ascending batch order and their plans. */
void stitch_build(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const BindOptions *o,
                  Stitch *out);
/* The arena and context bytes again, after plans' arena_bytes changed. */
void stitch_arenas(Model *m, const Plan *plans, int nsigs, Stitch *out);

/* ---- batchtile.c: a batch size run as tiles of fewer samples ------------ */

/* The samples of one tile when batch s->batch runs best as tiles of them
 * (a divisor of it, whose activations stay in cache), 0 to run it whole. */
int64_t batch_tile(const Sig *s, const Plan *p, const Stitch *st);
/* batch_tile for each of n signatures (ascending) and their plans: tile[i]
 * is the signature of signature i's tiles (one of sigs when that size is
 * compiled, else a new one, shape-inferred and planned, shared between the
 * sizes that tile by it) and tile_plan[i] its plan, or both NULL. Whether
 * any size runs as tiles. */
bool batch_tiles(Model *m, const Sig *sigs, const Plan *plans, int n, const Stitch *st,
                 const BindOptions *o, const Sig **tile, const Plan **tile_plan);

#endif
