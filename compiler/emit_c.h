/*
 * emit_c.h - the C emitter's functions, shared by emit_c.c (NAME.h, the
 * descriptor, the entry), emit/nodes.c (node functions and run functions),
 * emit/helpers.c (printing, operands, constants, loops) and the per-family
 * op emitters in compiler/emit/. The types they work with are in
 * emit/emitter.h.
 *
 * An op emitter writes the body of one node function: it asks for operands
 * (in_op, out_op: C pointer expressions into the caller's buffers, the
 * arena or a weights symbol), declares them (decl) and prints C with emitf.
 * Shapes are the signature's, so every size in the generated code is a
 * literal. Errors go through emit_fail, which names the node.
 */
#ifndef KILN_EMIT_C_H
#define KILN_EMIT_C_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "emit/emitter.h"

/* ---- printing (emit/helpers.c) ---- */
void emitf(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
_Noreturn void emit_fail(Emit *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The only ways a model's string reaches the C: escaped for a comment or
 * for a string literal's contents (see emit/helpers.c). */
char *c_comment_escape(Arena *a, const char *s);
char *c_string_escape(Arena *a, const char *s);
void comment_text(Emit *E, const char *s);       /* c_comment_escape(s), written */
const char *ctype(int dt);                       /* C element type, NULL if none */
const char *flit(Emit *E, double v, int dt);     /* a float literal that round-trips */
void shape_text(Emit *E, const Shape *s);
const char *mathfn(Emit *E, const char *name, int dt);   /* kiln_expf, _logf, _powf, _sinf, ... for float, else libm, in dt's precision */
bool is_float(int dt);
bool is_unsigned(int dt);

/* ---- operands and constants (emit/helpers.c) ---- */
int symbol_for(Emit *E, int dtype, const void *bytes, uint64_t nbytes, const char *hint);
int symbol_in_layout(Emit *E, int dtype, const void *bytes, uint64_t nbytes, const char *hint,
                     SymLayout layout, const int64_t pack[4]);
Operand operand(Emit *E, int id, bool writable);
/* A weights symbol as `(const T *)name`, or a slot while templating. Not
 * for static initializers (use the name there). */
const char *symbol_expr(Emit *E, int sym, const char *t);
Operand result(Emit *E, int id);
Operand in_op(Emit *E, int i);                   /* input i of the node; fails if absent */
Operand out_op(Emit *E, int i);
void decl(Emit *E, const char *var, const Operand *op, bool writable);
bool folded_scalar(Emit *E, int i, double *v);  /* a folded scalar input, widened */
void require_f32(Emit *E, const Operand *x);
/* The node as a shape hook sees it, for the ops/ *.c functions that read a
 * node's parameters for both inference and emission. */
Infer emit_infer(Emit *E);
void require_not_half(Emit *E, const Operand *x);   /* "float16 not supported by OP yet" */

/* ---- loops (emit/helpers.c) ---- */
void bcast_strides(const Shape *in, const Shape *outs, int64_t *st);
/* y's dims merged where y and every xs[j] step contiguously (dims of 1
 * dropped): md[k] the sizes, ms[0][k] y's strides and ms[j + 1][k] xs[j]'s
 * (0 where it repeats); returns the number of merged dims. */
int map_dims(const Operand *y, const Operand *xs, int nx, int64_t *md,
             int64_t ms[][KILN_MAX_RANK]);
void emit_map_body(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                   const char *stmts);
void emit_map(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr);
/* emit_map_body computing in float: 16-bit float operands widen on load, round on store. */
void emit_map_widened(Emit *E, const Operand *y, const Operand *xs, int nx, const char *expr,
                      const char *stmts);
int norm_axis(int64_t axis, int rank);
void around_axis(const Shape *s, int axis, int64_t *outer, int64_t *inner);
const char *open_loops(Emit *E, const Shape *s);
void close_loops(Emit *E, const Shape *s);
const char *linear_index(Emit *E, const Shape *s, int swap, const char *with);

/* ---- nodes and run functions (emit/nodes.c) ---- */
void emit_graph_functions(Emit *E);              /* every node function of E->g, in order */
void emit_graph_calls(Emit *E, const char *indent);   /* their calls; `int st;` is declared */
bool share_signature(Emit *E);    /* E->sig's nodes share functions (a large graph) */
void emit_step_runner(Emit *E);   /* the runner of the tables of steps */
void emit_signature(Emit *E);     /* NAME_run_bB of E->sig */
void emit_tiled_run(Emit *E, const Sig *t);   /* E->sig's run as batch tiles of signature t */
/* name as a C identifier's characters (emit/helpers.c) */
char *c_identifier(Arena *a, const char *name);
/* A signature's name in generated symbols: "b8", or "d16_b8" for a bucketed
 * dim at 16 (the node functions' prefix, NAME_run_generic_TAG, NAME_run_TAG). */
const char *sig_tag(Arena *a, const Sig *s);

/* ---- control flow (emit/control.c) ---- */
void emit_control_functions(Emit *E, Node *n);   /* n's subgraphs, before n's function */
void emit_control(Emit *E);                      /* If, Loop, Scan */
/* A subgraph's emitter and its parent share one symbol table, kept current
 * only by the one in use: hand it from C to E (emit/helpers.c). */
void emit_adopt_symbols(Emit *E, const Emit *C);

/* ---- op emitters, one per family file ---- */
/* emit/elementwise.c */
void emit_unary(Emit *E);
void emit_binary(Emit *E);
bool op_is_binary(int op);                       /* emit_binary's op (else emit_unary's) */
void emit_cast(Emit *E);
int ewchain_collect(Emit *E, const Node *last, EwChain *ch);   /* its nnodes (1: none) */
/* "node 3 "sub" (Sub), ..." for every node of ch but the last, after sep. */
void ewchain_names(Emit *E, const EwChain *ch, const char *sep);
/* The body of the chain ending at E->n; false if none ends there. */
bool emit_ewchain(Emit *E);
/* emit/epilogue.c: a fused node's bias, residual (a Conv's) and activation
 * (passes/fuse.c) as `const kiln_epilogue ep`; returns "&ep", or NULL if
 * there is none of them. */
const char *emit_epilogue(Emit *E, const char *bias, const char *residual);
bool emit_has_act(const Node *n);
const char *emit_act_name(FusedAct act);   /* "KILN_ACT_RELU", ... */
void emit_fused_comment(Emit *E);
/* emit/linalg.c */
void matmul_geometry(const Shape *a, const Shape *b, MatmulGeo *g);
void emit_gemm(Emit *E);
void emit_matmul(Emit *E);
void emit_einsum(Emit *E);
void emit_kiln_select(Emit *E);   /* KilnSelect (passes/onehot.c) */
void emit_kiln_select_sum(Emit *E);   /* KilnSelectSum (passes/mlpconv.c) */
/* emit/norm.c */
void emit_softmax(Emit *E);
void emit_batchnorm(Emit *E);
void emit_image_scaler(Emit *E);
void emit_layernorm(Emit *E);
void emit_hardmax(Emit *E);
void emit_loss(Emit *E);
void emit_instance_norm(Emit *E);
void emit_group_norm(Emit *E);
void emit_lrn(Emit *E);
/* emit/attention.c: KilnAttention */
void emit_attention(Emit *E);
/* emit/conv.c */
void emit_conv(Emit *E);
void emit_conv_transpose(Emit *E);
void emit_pool(Emit *E);
void emit_deform_conv(Emit *E);
/* emit/edgeconv.c: KilnEdgeConv and KilnKnn (passes/edgeconv.c) */
void emit_edgeconv(Emit *E);
void emit_knn(Emit *E);
/* emit/convchain.c: KilnConvChain (passes/convchain.c) */
void emit_convchain(Emit *E);
/* ops/scatterrows.c: KilnScatterRows (passes/scatterrows.c) */
void emit_scatterrows(Emit *E);
/* emit/resize.c */
void emit_resize(Emit *E);
/* emit/sampling.c */
void emit_col2im(Emit *E);
void emit_affinegrid(Emit *E);
void emit_gridsample(Emit *E);
void emit_roialign(Emit *E);
void emit_maxroipool(Emit *E);
void emit_maxunpool(Emit *E);
/* emit/misc.c */
void emit_det(Emit *E);
void emit_mvn(Emit *E);
void emit_lpnorm(Emit *E);
void emit_reverse_sequence(Emit *E);
/* emit/signal.c */
void emit_dft(Emit *E);
void emit_stft(Emit *E);
void emit_window(Emit *E);
void emit_mel_weight_matrix(Emit *E);
/* emit/reduce.c */
void emit_reduce(Emit *E);
void emit_argext(Emit *E);
void emit_cumsum(Emit *E);
void emit_topk(Emit *E);
/* emit/tensor.c */
void emit_copy(Emit *E);
void emit_dropout(Emit *E);
void emit_expand(Emit *E);
void emit_folded_only(Emit *E);   /* Shape, Size, Constant, NonZero, ... */
void emit_transpose(Emit *E);
void emit_concat(Emit *E);
void emit_split(Emit *E);
void emit_gather(Emit *E);
void emit_slice(Emit *E);
void emit_constant_of_shape(Emit *E);
void emit_range(Emit *E);
void emit_gather_elements(Emit *E);
void emit_tile(Emit *E);
void emit_pad(Emit *E);
void emit_trilu(Emit *E);
void emit_depth_space(Emit *E);
void emit_one_hot(Emit *E);
void emit_gather_nd(Emit *E);
void emit_scatter(Emit *E);
void emit_eye_like(Emit *E);
/* emit/quant.c */
void emit_quant(Emit *E);
void emit_qmatmul(Emit *E);
void emit_qconv(Emit *E);
void emit_dynamic_quant(Emit *E);
/* emit/rnn.c */
void emit_rnn(Emit *E);

/* emit/select.c */
void emit_compress(Emit *E);
/* emit/text.c */
void emit_tfidf(Emit *E);
/* emit/ml.c: ai.onnx.ml */
void emit_tree_ensemble(Emit *E);
void emit_ml_linear(Emit *E);
void emit_ml_vector(Emit *E);
void emit_zipmap(Emit *E);
/* NAME.h: the keys of graph output id if a ZipMap made it (io: its macro prefix). */
void emit_zipmap_keys(Emit *E, FILE *h, const char *io, int id);   /* Scaler, Normalizer, Binarizer, Imputer, ArrayFeatureExtractor */

#endif
