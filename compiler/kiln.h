/*
 * kiln.h - every compiler header at once, for the few files that truly use
 * most of the compiler (and for tests). A stage includes the headers of what
 * it uses instead:
 *
 *   diag.h    errors and bugs          arena.h   compiler memory
 *   ir.h      the graph, weights       load.h    ONNX file -> IR
 *   schema.h  the op registry          sig.h     signatures, the shape walk
 *   infer.h   what inference hooks use, compile-time evaluation
 *   ops/ops.h which ops kiln compiles, the per-op hooks by family
 *   plan.h    the buffer plan          stitch.h  batch analysis, stitching, tiles
 *   report.h  kiln info/check/ops, JSON
 *
 * Conventions: all compiler memory comes from an Arena owned by one compile
 * (nothing is freed piecemeal); graph objects refer to each other by index
 * (value ids, node ids), never by pointer, except a Graph's subgraphs;
 * user errors go through diag_fail*(), which long-jumps to the protected
 * entry point, and broken invariants through KILN_ASSERT.
 */
#ifndef KILN_COMPILER_H
#define KILN_COMPILER_H

#include "diag.h"
#include "arena.h"
#include "ir.h"
#include "load.h"
#include "schema.h"
#include "sig.h"
#include "infer.h"
#include "ops/ops.h"
#include "plan.h"
#include "report.h"
#include "stitch.h"

#endif
