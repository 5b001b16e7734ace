/*
 * load.h - reading an ONNX file into the IR (onnx_load.c, wire.c) and the
 * model's life (its mappings and open files).
 */
#ifndef KILN_LOAD_H
#define KILN_LOAD_H

#include "ir.h"

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

#endif
