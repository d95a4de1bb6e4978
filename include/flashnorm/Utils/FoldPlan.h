//===- FoldPlan.h - Folds recorded for weights in a checkpoint --*- C++ -*-===//
//
// A weight that lives in a checkpoint (an extern `ml_program.global`) cannot
// be folded in the IR: flashnorm-fold-gains records what it would have
// computed as a plan, points the program at new globals, and
// flashnorm-fold-checkpoint applies the plan to the checkpoint's bytes with
// the same raw-buffer folder. This file is the plan's one definition: its
// data, its JSON form (written by the pass, read by the tool) and checks.
//
//   {"format": "flashnorm-fold-plan", "version": 1,
//    "tensors": [
//      {"name": "<new>", "op": "scale", "source": "<weight>",
//       "dtype": "BF16", "shape": [N, K], "axis": 1, "center": false,
//       "vector": {"tensor": "<gain>", "scale": 1.0, "offset": 1.0}},
//      {"name": "<new bias>", "op": "contract", "source": "<weight>",
//       "dtype": "F32", "shape": [N], "axis": 1,
//       "vector": {"values": [...]}},
//      {"name": "<sums>", "op": "column_sums", "source": "<weight>",
//       "dtype": "F32", "shape": [N], "axis": 1,
//       "vector": {"tensor": "<gain>"}}],
//    "drop": ["<weights the program no longer loads>"],
//    "loads": ["<every tensor the rewritten program loads>"]}
//
// scale:    out = round(W * G along `axis`) (minus each column's mean over
//           `axis` with `center`), G = vector; out has W's dtype and shape.
// contract: out[n] = round(sum_k G[k] * W[.., k, ..]), in `dtype`.
// column_sums: out[n] = round(sum_k S[.., k, ..]), in `dtype`, where S is
//           what `scale` writes with the same vector (W * G rounded to W's
//           dtype, not centered): the exact column sums of a folded f16/bf16
//           weight, which a deferred LayerNorm's post-scale subtracts the
//           mean's share with (docs/MATH.md §4).
// loads:    optional; the tool requires the output to hold each (a shard
//           left out is an error then, not a model that fails to load).
// vector:   G = scale * tensor + offset (a norm's gain, `1 + g` has offset 1,
//           a merged norm's correction is the scale), or literal values;
//           formed in f64.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_UTILS_FOLDPLAN_H
#define FLASHNORM_UTILS_FOLDPLAN_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::flashnorm {

/// A per-feature vector: `scale * tensor + offset`, or `values`.
struct PlanVector {
  std::string tensor;
  double scale = 1.0, offset = 0.0;
  llvm::SmallVector<double> values;
};

struct PlanTensor {
  enum class Op { Scale, Contract, ColumnSums };
  Op op = Op::Scale;
  /// The tensor to write and the weight it is computed from.
  std::string name, source;
  /// Of the output (safetensors dtype names).
  std::string dtype;
  llvm::SmallVector<int64_t> shape;
  /// Of the source, as the IR saw it (checked against the checkpoint).
  std::string sourceDType;
  llvm::SmallVector<int64_t> sourceShape;
  int64_t axis = 0;
  PlanVector vector;
  bool center = false;
};

struct FoldPlan {
  std::vector<PlanTensor> tensors;
  /// Tensors the rewritten program no longer reads.
  std::vector<std::string> drop;
  /// Every tensor the rewritten program reads (its extern globals), so that
  /// the tool can tell a shard left out; empty in plans written before it.
  std::vector<std::string> loads;

  std::string toJSON() const;
  /// Parses and checks a plan (self-consistency only: the checkpoint is
  /// checked by whoever applies it).
  static llvm::Expected<FoldPlan> fromJSON(llvm::StringRef text);
};

/// Why a fold plan may not be written to `path`, or "": not over the
/// program's input file (`inputFile`, when known), nor its output file (a
/// regular file this process has open for writing), nor over an existing
/// file that is not a plan (a checkpoint named by mistake); not to '-'.
std::string whyNotPlanDestination(llvm::StringRef path,
                                  llvm::StringRef inputFile);

} // namespace mlir::flashnorm

#endif
