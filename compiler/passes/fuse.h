/*
 * passes/fuse.h - what the fusions of the fuse pass share: the helpers
 * (passes/fuse_shared.c) and each fusion's entry, which pass_fuse
 * (passes/fuse.c) tries on node i in its order. An entry rewrites and
 * returns true, or changes nothing.
 */
#ifndef KILN_PASSES_FUSE_H
#define KILN_PASSES_FUSE_H

#include "ops/ops.h"
#include "rewrite.h"

/* ---- fuse_shared.c: the helpers ---------------------------------------- */

bool fuse_is_f32(PassCtx *c, int id);
/* Record that node `into` absorbed node `from`. */
void fuse_note(PassCtx *c, Node *into, const Node *from);
/* Node p now writes y (the output of the node fused into it). */
void fuse_take_output(PassCtx *c, int p, int y);
/* Replace MatMul node i by Gemm(A, B [transposed], C) writing y (Reshapes
 * to 2-D and back if A has more axes), new nodes before node `place`. */
bool fuse_matmul_to_gemm(PassCtx *c, int i, int b, bool trans_b, int cv, int y, int place);
bool fuse_is_view(int op);   /* Reshape, Unsqueeze, Squeeze, Flatten */
/* Is value a (not pinned) read by node u and otherwise only by Shape? */
bool fuse_only_shape_besides(PassCtx *c, int a, int u);
/* Is value id a constant scalar equal to v (within float rounding)? */
bool fuse_is_scalar(PassCtx *c, int id, double v);
/* The node reading id alone, if it is op; NONE otherwise. */
int fuse_only_reader(PassCtx *c, int id, int op);

/* ---- the fusions, one file each --------------------------------------- */

bool fuse_f16_operand(PassCtx *c, int i);    /* fuse_f16.c */
bool sink_cast_gather(PassCtx *c, int i);    /* fuse_f16.c */
bool fuse_transpose(PassCtx *c, int i);      /* fuse_transpose.c */
bool fuse_bn(PassCtx *c, int j);             /* fuse_bn.c: into the Conv or Gemm before */
int fuse_bn_into_conv(PassCtx *c, int j);    /* fuse_bn.c: the Conv after; its id or NONE */
/* fuse_bn.c: the Gemm a BatchNorm after view u folds into, else NONE */
int unit_axes_view(PassCtx *c, int u);
bool fuse_act(PassCtx *c, int j);            /* fuse_act.c */
bool fuse_gelu(PassCtx *c, int i);           /* fuse_act.c */
bool fuse_layernorm(PassCtx *c, int i);      /* fuse_layernorm.c */
bool fuse_add(PassCtx *c, int i);            /* fuse_add.c */

#endif
