/*
 * infer.h - the helpers an op's inference hook uses (infer.c), and
 * compile-time evaluation (peval.c).
 */
#ifndef KILN_INFER_H
#define KILN_INFER_H

#include "sig.h"

/* ---- infer.c, peval.c: what an inference hook reads and writes --------- */

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
 * demand (Infer.demand: peval_demand in shape inference). NULL if it cannot
 * be known. */
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
/* Element k of little-endian data of type dt, as double. */
double folded_elem(int dt, const void *data, int64_t k);
bool infer_foldable(const Shape *s);
int infer_axis(Infer *x, int64_t axis, int rank, const char *what);
/* The last axis of input 0: OpDef.axis of the ops that work along it. */
int infer_last_axis(Infer *x);
int64_t attr_int(Infer *x, const char *name, int64_t dflt);
float attr_float(Infer *x, const char *name, float dflt);
int attr_ints(Infer *x, const char *name, int64_t *out, int max);
const char *attr_string(Infer *x, const char *name, const char *dflt);

#endif
