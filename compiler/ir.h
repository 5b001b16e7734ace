/*
 * ir.h - the graph (ir.c, weights.c): element types, shapes, values,
 * nodes, graphs and the model; checked arithmetic and limits. Graph objects
 * refer to each other by index (value ids, node ids), never by pointer,
 * except a Graph's subgraphs.
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arena.h"

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

/* DOMAIN_KILN: kiln's own fused ops (ops_kiln.def), made only by the
 * optimizer's passes; no domain a model names maps to it (domain_lookup). */
enum { DOMAIN_ONNX, DOMAIN_ML, DOMAIN_TRAINING, DOMAIN_OTHER, DOMAIN_KILN };
/* "ai.onnx", ...; NULL for DOMAIN_OTHER. Inline: the error messages
 * (diag.c) name domains, and diag.c calls nothing above it. */
static inline const char *domain_name(int domain_id)
{
	switch (domain_id) {
	case DOMAIN_ONNX: return "ai.onnx";
	case DOMAIN_ML: return "ai.onnx.ml";
	case DOMAIN_TRAINING: return "ai.onnx.preview.training";
	case DOMAIN_KILN: return "kiln";
	}
	return NULL;
}

/* What the optimizer fused into a node: resolved once, by the pass that
 * fuses (passes/fuse.c, addnorm.c, attention.c, edgeconv.c), and read by
 * the stages as it is; no model can set it (it is no attribute). All zero
 * for a node nothing was fused into. */
typedef enum FusedAct {
	FACT_NONE, FACT_RELU, FACT_SIGMOID, FACT_TANH, FACT_SELU, FACT_ELU, FACT_LEAKY_RELU,
	FACT_HARD_SIGMOID, FACT_CLIP, FACT_GELU,
} FusedAct;

typedef struct Fused {
	const char *members;  /* the nodes folded in (`Add "add_3", Relu "r"`), for the
	                       * generated C's comment; NULL if none */
	FusedAct act;         /* an activation applied to output 0 (Conv, Gemm) */
	float alpha, beta;    /* its parameters (LeakyRelu's alpha, Clip's bounds, ...) */
	bool residual;        /* the last input (the fourth) is added before the
	                       * activation (Conv, LayerNormalization) */
} Fused;

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
	Fused fused;         /* what the optimizer fused into it (zero: nothing) */
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

/* ---- ir.c: errors naming a node --------------------------------------- */

/* The same, naming the node: `node 17 "conv1" (Conv, ai.onnx opset 13): ...`. */
_Noreturn void diag_fail_node(Diag *d, const Graph *g, const Node *n,
                              enum kiln_status st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Format `node 3 "If_0" (If, ai.onnx opset 13) then_branch: node 1 ...`,
 * naming enclosing nodes first; returns the length it wanted (snprintf-style). */
size_t diag_node_path(char *buf, size_t size, const Graph *g, const Node *n);

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
	bool winograd;           /* compile --winograd: Winograd convolutions (ops/conv_algo.c) */
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
/* Is attribute name a string of exactly the bytes of want (a model's string
 * may hold a NUL)? False if absent. */
bool node_attr_is(const Node *n, const char *name, const char *want);
/* Whether n owns a subgraph (an If, Loop or Scan body: a GRAPH or GRAPHS attribute). */
bool node_has_subgraph(const Node *n);

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

#endif
