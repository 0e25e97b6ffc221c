/* The plugin's standalone NPU model: a C interpreter of the program binary.
 *
 * npu_program.npub (docs/npu-isa.md; npu_isa_decode.c reads it) holds the
 * generic NPU's instructions and, per NPU dispatch, a compute section
 * (written by npu_studio/core/npu/hal/exec_binary.py from exec_lower.py's
 * description): its values, its ops in order (binding loads and stores,
 * constants, reshapes, slices, padding, linalg ops with linear indexing maps
 * and an SSA body, softmax), the root op the NPU program tiles, the fused
 * elementwise ops run on each finished output tile. The tiles, in task
 * order, are the dispatch's `.task` directives in the instructions. The interpreter runs the root tile by tile in the target's types:
 * an f32 MAC accumulates in f32, an i8 x i8 MAC in i32, the output stage
 * rounds and saturates as the description says.
 */
#ifndef NPU_EXEC_H
#define NPU_EXEC_H

#include <stddef.h>
#include <stdint.h>

#define NPU_MAX_RANK 8
#define NPU_MAX_LOOPS 16
#define NPU_MAX_BINDINGS 256
/* The largest tile offset or size taken (as exact in a double, so Python's reading agrees). */
#define NPU_MAX_JSON_INT ((int64_t)1 << 53)
/* What one dispatch may ask of the interpreter: its intermediate values' bytes, and its points
 * (linalg iterations, tiles included, and softmax elements). 2^36 points are over a minute of the
 * interpreter's time; no dispatch the NPU program tiles comes near it. */
#define NPU_MAX_OWNED_BYTES ((int64_t)1 << 33)
#define NPU_MAX_WORK ((int64_t)1 << 36)

typedef enum { E_F16, E_BF16, E_F32, E_F64, E_I1, E_I8, E_I16, E_I32, E_I64 } npu_elem_t;

typedef struct {
  npu_elem_t elem;
  int rank;
  int64_t shape[NPU_MAX_RANK];
  int64_t count;
} npu_vtype_t;

typedef struct {
  npu_vtype_t type;
  unsigned char *data;  /* count elements, row-major */
  int owned;
} npu_tensor_t;

typedef struct {
  int op;  /* BODY_* (npu_exec_body.c) */
  int nargs;
  int args[NPU_MAX_RANK];  /* 1-3 for arith/math ops; the indices of an `extract` */
  npu_elem_t type;
  int64_t attr;
  double f;
  int64_t i;
  int round;  /* 0: none, else the stage's rounding: 1 half-even, 2 half-away, 3 truncate */
  int saturate;
} npu_body_op_t;

typedef enum { F_LOAD, F_STORE, F_EMPTY, F_CONST, F_RESHAPE, F_EXTRACT, F_INSERT, F_PAD, F_LINALG, F_SOFTMAX, F_SCALAR } npu_fop_kind_t;

typedef struct {
  npu_fop_kind_t kind;
  int nargs, nresults;
  int *args, *results;
  int binding;
  int nslice;
  int64_t offsets[NPU_MAX_RANK], sizes[NPU_MAX_RANK], strides[NPU_MAX_RANK];
  unsigned char *data;  /* const */
  size_t data_size;
  int splat;
  /* linalg: operand k's dim j = sum_l coef[k][j][l] * loop_l + coef[k][j][n_loops] */
  int n_in, n_loops;
  int64_t (*coef)[NPU_MAX_RANK][NPU_MAX_LOOPS + 1];
  int reduction[NPU_MAX_LOOPS];
  int64_t ranges[NPU_MAX_LOOPS];
  int nbody, nyields;
  npu_body_op_t *body;
  int *yields;
  int dim;  /* softmax */
} npu_fop_t;

typedef struct {
  int64_t dispatch;
  char symbol[256];
  char reason[512];  /* "" when the interpreter can run it */
  int nvalues, nbindings, nops, root, nepilogue, ntiles, tile_rank;
  npu_vtype_t *values;
  npu_fop_t *ops;
  int *epilogue;
  int64_t (*tile_offsets)[NPU_MAX_LOOPS];
  int64_t (*tile_sizes)[NPU_MAX_LOOPS];
} npu_dispatch_desc_t;

typedef struct {
  int ndispatches;
  npu_dispatch_desc_t *dispatches;
} npu_exec_program_t;

/* Checks one loaded dispatch as a whole (npu_exec_verify.c): 1 when the interpreter may run it on
 * bindings of the described sizes, else 0 with `error` naming `path` and the field. */
int npu_exec_verify(const npu_dispatch_desc_t *d, const char *path, char *error);
/* Bytes of value `k` of `d` (its binding's size for k < d->nbindings). */
int64_t npu_value_bytes(const npu_dispatch_desc_t *d, int k);
void npu_exec_free(npu_exec_program_t *program);
const npu_dispatch_desc_t *npu_exec_find(const npu_exec_program_t *program, int64_t dispatch);

/* A perturbed tile (tests): after tile `tile` of dispatch `dispatch`, `delta` is added to its output. */
typedef struct {
  int64_t dispatch, tile;
  double delta;
} npu_fault_t;

/* Runs one dispatch on its bindings (base pointers, already offset). 0 on success, else `error` says why. */
int npu_exec_run(const npu_dispatch_desc_t *d, unsigned char **bindings, const npu_fault_t *fault, char *error);

/* Element access and the body's scalar semantics (npu_exec_body.c). */
size_t npu_elem_size(npu_elem_t e);
int npu_elem_is_float(npu_elem_t e);
double npu_load_f(npu_elem_t e, const unsigned char *p);
int64_t npu_load_i(npu_elem_t e, const unsigned char *p);
void npu_store_f(npu_elem_t e, unsigned char *p, double v);
void npu_store_i(npu_elem_t e, unsigned char *p, int64_t v);
double npu_round_to(npu_elem_t e, double v);
int64_t npu_wrap_to(npu_elem_t e, int64_t v);
int64_t npu_double_to_i64(double v); /* saturating; NaN is 0 (C's cast is undefined there) */
int npu_body_arity(int opcode); /* the arguments a body op reads; -1: as many as its source's rank */
int npu_body_opcode(const char *name);

typedef union {
  double f;
  int64_t i;
} npu_scalar_t;

/* Evaluates body op `op` on `vals` (its args already computed); `loop` gives linalg.index values. */
npu_scalar_t npu_body_eval(const npu_body_op_t *op, const npu_scalar_t *vals, const npu_elem_t *types,
                           const int64_t *loop);

#endif /* NPU_EXEC_H */
