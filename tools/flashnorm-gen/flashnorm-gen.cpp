//===- flashnorm-gen.cpp - Write decoder stacks as frontend-style MLIR ----===//
//
// Writes the MLIR text of a small transformer decoder stack (Llama, Qwen2,
// Gemma, GPT-2, OLMo or BERT semantics) the way frontends hand it over:
// normalizations spelled out as squares, reductions, rsqrt and broadcast
// multiplies in many equivalent forms (docs/MATH.md §7), projections in both
// weight layouts, weights as dense_resource constants, as function arguments,
// or as extern ml_program globals with a safetensors checkpoint beside the IR.
// The output is test input and demo for flashnorm-raise and the rest of the
// pipeline; @main runs the model on a deterministic input and prints the
// result.
//
// Argument order of @forward with --weights=args: %x, then per layer the
// weights in the order the layer uses them (norm gain [and bias], q, k, v
// [with biases], QK-norm gains, o, norms, MLP), then the final norm; the
// output lists them in a comment above @forward.
//
//===----------------------------------------------------------------------===//

#include "flashnorm/Utils/Safetensors.h"

#include "llvm/Support/CommandLine.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace cl = llvm::cl;

namespace {

constexpr double kPi = 3.14159265358979323846;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

enum class Family { Llama, Qwen2, Gemma, Gpt2, Olmo, Bert };
enum class Flavor { Linalg, Tosa };
enum class Style { Mixed, TorchMlir };
enum class WeightMode { Resource, Args, Checkpoint };
enum class DType { F32, BF16 };
enum class Quant { None, Int8, Int4 };
enum class CacheWrite { InsertSlice, StoreLoop };

cl::OptionCategory genCategory("flashnorm-gen options");

cl::opt<Family> familyOpt(
    "family", cl::desc("Model family"), cl::init(Family::Llama),
    cl::values(clEnumValN(Family::Llama, "llama", "RMSNorm, SwiGLU"),
               clEnumValN(Family::Qwen2, "qwen2", "llama with q/k/v biases"),
               clEnumValN(Family::Gemma, "gemma",
                          "sandwich (1 + g) RMSNorms, QK-norm, GeGLU"),
               clEnumValN(Family::Gpt2, "gpt2", "LayerNorm, GELU MLP"),
               clEnumValN(Family::Olmo, "olmo",
                          "LayerNorm without gain or bias (OLMo's "
                          "non-parametric one), SwiGLU"),
               clEnumValN(Family::Bert, "bert",
                          "post-LayerNorm (each norm after its residual "
                          "add, its result both the next projections' "
                          "input and the next residual), GELU MLP")),
    cl::cat(genCategory));
cl::opt<Flavor> flavorOpt("flavor",
                          cl::desc("Dialects the model is written in"),
                          cl::init(Flavor::Linalg),
                          cl::values(clEnumValN(Flavor::Linalg, "linalg",
                                                "linalg/tensor/arith"),
                                     clEnumValN(Flavor::Tosa, "tosa", "tosa")),
                          cl::cat(genCategory));
cl::opt<Style> styleOpt(
    "style", cl::desc("How the linalg flavor spells norms and weights"),
    cl::init(Style::Mixed),
    cl::values(
        clEnumValN(Style::Mixed, "mixed",
                   "every equivalent form in turn (docs/MATH.md §7)"),
        clEnumValN(Style::TorchMlir, "torch-mlir",
                   "as torch-mlir's linalg lowering writes them: norms on "
                   "[1, T, K] with literal-0 batch maps, row statistics "
                   "broadcast by gather and yield-only generics, f64 "
                   "variances and epsilons, nn.Linear weights transposed "
                   "by a yield-only generic; in bf16 every dtype change "
                   "a casting generic")),
    cl::cat(genCategory));
cl::opt<int64_t> hiddenOpt("hidden", cl::desc("Hidden size"), cl::init(64),
                           cl::cat(genCategory));
cl::opt<int64_t> layersOpt("layers", cl::desc("Number of decoder layers"),
                           cl::init(2), cl::cat(genCategory));
cl::opt<int64_t> tokensOpt("tokens", cl::desc("Sequence length"), cl::init(4),
                           cl::cat(genCategory));
cl::opt<int64_t> headsOpt("heads", cl::desc("Attention heads"), cl::init(4),
                          cl::cat(genCategory));
cl::opt<int64_t>
    mlpOpt("mlp",
           cl::desc("MLP size (default: 2 * hidden rounded up to a multiple "
                    "of 8)"),
           cl::init(0), cl::cat(genCategory));
cl::opt<WeightMode> weightsOpt(
    "weights", cl::desc("Where the weights live"),
    cl::init(WeightMode::Resource),
    cl::values(clEnumValN(WeightMode::Resource, "resource",
                          "dense_resource constants in @forward"),
               clEnumValN(WeightMode::Args, "args",
                          "arguments of @forward; @main holds the constants"),
               clEnumValN(WeightMode::Checkpoint, "checkpoint",
                          "extern ml_program globals named after the "
                          "checkpoint tensors, which go into a safetensors "
                          "file (--checkpoint)")),
    cl::cat(genCategory));
cl::opt<std::string> checkpointOpt(
    "checkpoint",
    cl::desc("With --weights=checkpoint: the safetensors file to write "
             "(default: the output with .safetensors for .mlir)"),
    cl::value_desc("file"), cl::init(""), cl::cat(genCategory));
cl::opt<unsigned> shardsOpt(
    "shards",
    cl::desc("With --weights=checkpoint: split the checkpoint into N files "
             "<name>-0000i-of-0000N.safetensors, as large models ship "
             "(default 1)"),
    cl::init(1), cl::cat(genCategory));
cl::opt<DType> dtypeOpt("dtype", cl::desc("Activation and weight type"),
                        cl::init(DType::F32),
                        cl::values(clEnumValN(DType::F32, "f32", "f32"),
                                   clEnumValN(DType::BF16, "bf16",
                                              "bf16; statistics in f32")),
                        cl::cat(genCategory));
cl::opt<Quant> quantOpt(
    "quant",
    cl::desc("Weight-only quantization of every projection weight (linalg "
             "flavor, RMSNorm families), dequantized by a linalg.generic "
             "before the matmul as frontends write it"),
    cl::init(Quant::None),
    cl::values(
        clEnumValN(Quant::None, "none", "float weights"),
        clEnumValN(Quant::Int8, "int8",
                   "signed i8 [N, K] (extsi, sitofp) times a per-output-"
                   "channel f32 scale [N]"),
        clEnumValN(Quant::Int4, "int4",
                   "unsigned 4-bit, two per i8 byte along k [N, K/2] "
                   "(shrui, andi, extui, uitofp), minus a zero point and "
                   "times a scale per group of k (group-wise, [N, K/G])")),
    cl::cat(genCategory));
cl::opt<bool> quantKScaleOpt(
    "quant-kscale",
    cl::desc("With --quant=int8: the dequantization also multiplies by a "
             "per-input-channel factor [K] (activation-aware scaling); a "
             "norm's gain folds into it"),
    cl::init(false), cl::cat(genCategory));
cl::opt<bool> decodeOpt(
    "decode",
    cl::desc("Write a decode step as importers do (linalg flavor): "
             "@forward takes i64 token ids [tokens] and an i64 position, "
             "looks the tokens up in an embedding, writes each layer's keys "
             "and values into its KV cache (arguments [cache, hidden]) at "
             "the position, attends over the cache, and returns the hidden "
             "state and the updated caches"),
    cl::init(false), cl::cat(genCategory));
cl::opt<CacheWrite> cacheWriteOpt(
    "cache-write",
    cl::desc("How --decode writes the new keys and values into a cache"),
    cl::init(CacheWrite::InsertSlice),
    cl::values(clEnumValN(CacheWrite::InsertSlice, "insert-slice",
                          "tensor.insert_slice of the rows (default)"),
               clEnumValN(CacheWrite::StoreLoop, "store-loop",
                          "as a PyTorch importer writes an in-place cache "
                          "update: an scf.for nest of memref.store into "
                          "bufferization.to_buffer of the cache argument, "
                          "read back by to_tensor restrict")),
    cl::cat(genCategory));
cl::opt<bool> ropeOpt(
    "rope",
    cl::desc("Rotate q and k by rotary position embeddings (llama and "
             "qwen2, linalg flavor): rotate_half with extract_slice and "
             "tensor.concat, cos and sin of the token positions computed in "
             "@forward, as HF Llama is imported"),
    cl::init(false), cl::cat(genCategory));
cl::opt<int64_t> cacheOpt("cache",
                          cl::desc("KV-cache rows with --decode (default 8)"),
                          cl::init(8), cl::cat(genCategory));
cl::opt<int64_t> vocabOpt("vocab",
                          cl::desc("Embedding rows with --decode (default 32)"),
                          cl::init(32), cl::cat(genCategory));
cl::opt<int64_t> callsOpt(
    "calls",
    cl::desc("How many times @main calls @forward on its input, printing "
             "each result (default 1; not with --decode), for tests of what "
             "a program keeps across calls"),
    cl::init(1), cl::cat(genCategory));
cl::opt<uint64_t> seedOpt("seed", cl::desc("Seed of the weight values"),
                          cl::init(1), cl::cat(genCategory));
cl::opt<std::string> outputOpt("o", cl::desc("Output file ('-' for stdout)"),
                               cl::value_desc("file"), cl::init("-"),
                               cl::cat(genCategory));

struct Config {
  Family family;
  Flavor flavor;
  Style style;
  int64_t hidden, layers, tokens, heads, mlp;
  WeightMode weights;
  DType dtype;
  uint64_t seed;
  bool decode = false;
  CacheWrite cacheWrite = CacheWrite::InsertSlice;
  bool rope = false;
  int64_t cache = 0, vocab = 0;
  int64_t calls = 1;
  Quant quant = Quant::None;
  bool kscale = false;

  int64_t headDim() const { return hidden / heads; }
  bool tosa() const { return flavor == Flavor::Tosa; }
  bool bf16() const { return dtype == DType::BF16; }
  std::string elt() const { return bf16() ? "bf16" : "f32"; }
};

const char *familyName(Family f) {
  switch (f) {
  case Family::Llama:
    return "llama";
  case Family::Qwen2:
    return "qwen2";
  case Family::Gemma:
    return "gemma";
  case Family::Gpt2:
    return "gpt2";
  case Family::Olmo:
    return "olmo";
  case Family::Bert:
    return "bert";
  }
  return "?";
}

/// The family as its papers write it, for the header.
const char *familyTitle(Family f) {
  switch (f) {
  case Family::Llama:
    return "Llama";
  case Family::Qwen2:
    return "Qwen2";
  case Family::Gemma:
    return "Gemma";
  case Family::Gpt2:
    return "GPT-2";
  case Family::Olmo:
    return "OLMo";
  case Family::Bert:
    return "BERT";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Text helpers
//===----------------------------------------------------------------------===//

using Shape = std::vector<int64_t>;

template <typename... Ts> std::string cat(const Ts &...parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

std::string join(const std::vector<std::string> &parts,
                 const std::string &sep = ", ") {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? sep : "") + parts[i];
  return out;
}

std::string joinInts(const Shape &v, const std::string &sep = ", ") {
  std::vector<std::string> parts;
  for (int64_t x : v)
    parts.push_back(std::to_string(x));
  return join(parts, sep);
}

/// An MLIR float literal (MLIR needs a '.' in it: 1e-05 is not one).
std::string fmtFloat(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find('.') != std::string::npos)
    return s;
  size_t e = s.find('e');
  if (e == std::string::npos)
    return s + ".0";
  return s.substr(0, e) + ".0" + s.substr(e);
}

std::string tensorType(const Shape &shape, const std::string &elt) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + elt + ">";
}

/// `affine_map<(d0, .., dN-1) -> (results)>`.
std::string affineMap(int64_t nDims, const std::vector<std::string> &results) {
  std::vector<std::string> dims;
  for (int64_t i = 0; i < nDims; ++i)
    dims.push_back(cat("d", i));
  return cat("affine_map<(", join(dims), ") -> (", join(results), ")>");
}
std::string identityMap(int64_t r) {
  std::vector<std::string> res;
  for (int64_t i = 0; i < r; ++i)
    res.push_back(cat("d", i));
  return affineMap(r, res);
}
/// The row of a rank-r tensor: all but the last dimension, or a unit last
/// dimension (PyTorch's keepdim).
std::string rowMap(int64_t r, bool keepdim) {
  std::vector<std::string> res;
  for (int64_t i = 0; i + 1 < r; ++i)
    res.push_back(cat("d", i));
  if (keepdim)
    res.push_back("0");
  return affineMap(r, res);
}
/// A feature vector [K] broadcast over the rows, or its [1, .., 1, K] form.
std::string featureMap(int64_t r, bool expanded) {
  std::vector<std::string> res;
  if (expanded)
    for (int64_t i = 0; i + 1 < r; ++i)
      res.push_back("0");
  res.push_back(cat("d", r - 1));
  return affineMap(r, res);
}

//===----------------------------------------------------------------------===//
// Values, weights and the function builder
//===----------------------------------------------------------------------===//

struct Val {
  std::string name;
  Shape shape;
  std::string elt;
  std::string type() const { return tensorType(shape, elt); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t last() const { return shape.back(); }
};

enum class Init {
  Matrix,
  PlainGain,
  OnePlusGain,
  Bias,
  // --quant: integers (stored as i8), their scales, zero points, k factors.
  QInt8,
  QPacked4,
  QScale8,
  QScale4,
  QZero,
  KScale
};

/// A weight of @forward. Matrices are defined logically as PyTorch's N x K
/// (out x in); `kxn` says the stored layout is K x N instead, so every
/// flavor and layout of one model holds the same numbers.
struct Weight {
  std::string name;
  Shape shape;
  std::string elt;
  Init init;
  int64_t fanIn = 1;
  bool kxn = false;
};

std::string weightType(const Weight &w) { return tensorType(w.shape, w.elt); }

/// Builds the body of one function as text, handing out unique SSA names.
class FuncBuilder {
public:
  explicit FuncBuilder(int64_t &counter) : counter(counter) {}

  std::string fresh(const std::string &hint) {
    return cat("%", hint, "_", counter++);
  }
  void line(const std::string &text) { body += "  " + text + "\n"; }
  void comment(const std::string &text) { line("// " + text); }
  /// Emits `%name = text` with the result type given by shape and elt.
  Val op(const std::string &hint, const Shape &shape, const std::string &elt,
         const std::string &text) {
    Val v{fresh(hint), shape, elt};
    line(v.name + " = " + text);
    return v;
  }
  /// A scalar arith.constant, emitted once per function.
  std::string scalar(double value, const std::string &elt) {
    std::string lit = fmtFloat(value);
    std::string key = lit + ":" + elt;
    auto it = scalars.find(key);
    if (it != scalars.end())
      return it->second;
    std::string n = fresh("cst");
    line(cat(n, " = arith.constant ", lit, " : ", elt));
    return scalars[key] = n;
  }
  /// A cached value (a constant tensor) under `key`, made by `make` once.
  Val cached(const std::string &key, const std::function<Val()> &make) {
    auto it = cache.find(key);
    if (it != cache.end())
      return it->second;
    Val v = make();
    cache[key] = v;
    return v;
  }
  const std::string &text() const { return body; }

private:
  int64_t &counter;
  std::string body;
  std::map<std::string, std::string> scalars;
  std::map<std::string, Val> cache;
};

/// The body of a linalg region: numbered scalar ops, indented one level more.
class Body {
public:
  Body(FuncBuilder &b, std::string &text) : b(b), text(text) {}
  std::string op(const std::string &hint, const std::string &rhs) {
    std::string n = b.fresh(hint);
    text += "    " + n + " = " + rhs + "\n";
    return n;
  }
  /// A constant inside the region (for ops whose operand must be local).
  std::string constant(const std::string &lit, const std::string &type) {
    return op("c", cat("arith.constant ", lit, " : ", type));
  }

private:
  FuncBuilder &b;
  std::string &text;
};

struct NormCounts {
  int rms = 0, layer = 0, gains = 0, qk = 0;
  /// Norms whose every user is a projection: --flashnorm defers them.
  int deferrable = 0;
  /// Of those, the ones fold-gains folds something of (the gain; a
  /// LayerNorm without one, OLMo's, only where its weights are arguments or
  /// in a checkpoint, whose centering or column sums the prepare function
  /// or the fold plan makes).
  int foldable = 0;
  /// Of those, the ones --flashnorm defers without folding their gains
  /// (argument weights without prepare-function, checkpoint weights
  /// without fold-plan): x * g feeds the projections.
  int deferredUnfolded = 0;
  /// Gated MLPs whose up path's 1/RMS moves past the down projection.
  int ffnMoved = 0;
  /// Attention layers whose query post-scale merges into the logits' scale
  /// (the attention scale stays out of an unfolded query weight).
  int queryMerged = 0;
};

enum class Gain { Plain, OnePlus };
struct NormSpec {
  std::string prefix; // weight name prefix: <prefix>.weight, <prefix>.bias
  Gain gain = Gain::Plain;
  double eps = 1e-5;
  bool layerNorm = false;
  /// A learned gain (and a LayerNorm's bias); OLMo's LayerNorms have none.
  bool affine = true;
  bool qk = false;
  /// Feeds projections only (the pre-attention and pre-MLP norms).
  bool projections = false;
};

enum class Act { Silu, GeluTanh };

/// --quant=int4's group along k: the largest of 32, 16, ... dividing k.
int64_t quantGroup(int64_t k) {
  int64_t g = 32;
  while (k % g)
    g /= 2;
  return g;
}

//===----------------------------------------------------------------------===//
// Emitter: the model parts, one subclass per flavor
//===----------------------------------------------------------------------===//

class Emitter {
public:
  Emitter(const Config &cfg, FuncBuilder &b, std::vector<Weight> &weights)
      : cfg(cfg), b(b), weights(weights) {}
  virtual ~Emitter() = default;

  /// A normalization over the last dimension of x, counted for the header.
  Val norm(const Val &x, const NormSpec &spec) {
    b.comment(cat(spec.layerNorm ? "LayerNorm " : "RMSNorm ", spec.prefix,
                  " (eps ", fmtFloat(spec.eps),
                  spec.gain == Gain::OnePlus ? ", 1 + gain)" : ")"));
    counts.gains += spec.affine;
    counts.deferrable += spec.projections;
    counts.foldable += spec.projections &&
                       (spec.affine || cfg.weights != WeightMode::Resource);
    counts.deferredUnfolded += spec.projections && !spec.layerNorm &&
                               (cfg.weights != WeightMode::Resource ||
                                (cfg.quant != Quant::None && !cfg.kscale));
    if (spec.layerNorm) {
      ++counts.layer;
      return layerNorm(x, spec, normIndex++);
    }
    ++counts.rms;
    counts.qk += spec.qk;
    return rmsNorm(x, spec, normIndex++);
  }

  /// x [.., K] times the weight `name` [K -> n], plus an optional bias.
  virtual Val projection(const Val &x, const std::string &name, int64_t n,
                         bool bias) = 0;
  /// Causal multi-head attention of [tokens, hidden] activations; the
  /// QK-norms (Gemma) act on each head after the split.
  virtual Val attention(const Val &q, const Val &k, const Val &v,
                        const NormSpec *qNorm, const NormSpec *kNorm) = 0;
  /// act(gate) * up, or act(gate) alone when up is null.
  virtual Val activation(Act act, const Val &gate, const Val *up) = 0;
  virtual Val add(const Val &a, const Val &b) = 0;
  virtual Val castTo(const Val &x, const std::string &elt) = 0;
  /// --decode: the token ids looked up in the embedding, [tokens, hidden].
  virtual Val embed(const Val &ids) = 0;
  /// --decode: `x` [tokens, hidden] written into `cache` at the position.
  virtual Val writeCache(const Val &cache, const Val &x) = 0;
  /// --rope: `x` [tokens, hidden] rotated per head by its tokens'
  /// positions.
  virtual Val rope(const Val &x) = 0;
  void comment(const std::string &text) { b.comment(text); }
  /// --decode: the position as an index value (keys above it are masked).
  std::string position;

  NormCounts counts;

protected:
  virtual Val rmsNorm(const Val &x, const NormSpec &spec, int idx) = 0;
  virtual Val layerNorm(const Val &x, const NormSpec &spec, int idx) = 0;
  /// Materializes a stored weight as a constant of this flavor.
  virtual Val constant(const Weight &w) = 0;

  /// The weight as @forward sees it: a dense_resource constant or an
  /// argument.
  Val weight(const std::string &name, const Shape &shape, Init init,
             int64_t fanIn = 1, bool kxn = false, std::string elt = "") {
    Weight w{name, shape, elt.empty() ? cfg.elt() : elt, init, fanIn, kxn};
    weights.push_back(w);
    if (cfg.weights == WeightMode::Args)
      return Val{"%" + name, shape, w.elt};
    if (cfg.weights == WeightMode::Checkpoint)
      return b.op("w", shape, w.elt,
                  cat("ml_program.global_load_const @\"", name,
                      "\" : ", weightType(w)));
    return constant(w);
  }
  Val toF32(const Val &x) { return castTo(x, "f32"); }

  const Config &cfg;
  FuncBuilder &b;
  std::vector<Weight> &weights;
  int normIndex = 0, projIndex = 0, attnIndex = 0;
};

//===----------------------------------------------------------------------===//
// linalg flavor: linalg, tensor, arith and math on [tokens, hidden]
//===----------------------------------------------------------------------===//

class LinalgEmitter : public Emitter {
public:
  using Emitter::Emitter;

  Val castTo(const Val &x, const std::string &elt) override {
    if (x.elt == elt)
      return x;
    bool widen = elt == "f32";
    return b.op(widen ? "ext" : "trunc", x.shape, elt,
                cat(widen ? "arith.extf " : "arith.truncf ", x.name, " : ",
                    x.type(), " to ", tensorType(x.shape, elt)));
  }

  Val add(const Val &x, const Val &y) override {
    return b.op("res", x.shape, x.elt,
                cat("arith.addf ", x.name, ", ", y.name, " : ", x.type()));
  }

  Val projection(const Val &xIn, const std::string &name, int64_t n,
                 bool bias) override {
    Val x = castTo(xIn, cfg.elt());
    int64_t k = x.last(), t = x.shape[0];
    Val acc = zeros({t, n});
    std::string result =
        cat(" outs(", acc.name, " : ", acc.type(), ") -> ", acc.type());
    Val y;
    // Rotate through the layouts frontends use: K x N, PyTorch's N x K read
    // through transposed indexing maps, N x K through a linalg.transpose.
    // (Quantized weights are N x K, as checkpoints store them.)
    int layout = projIndex++ % 3;
    if (cfg.quant != Quant::None && layout == 0)
      layout = 1;
    switch (layout) {
    case 0: {
      Val w = weight(name + ".weight", {k, n}, Init::Matrix, k, true);
      y = b.op("mm", {t, n}, "f32",
               cat("linalg.matmul ins(", x.name, ", ", w.name, " : ", x.type(),
                   ", ", w.type(), ")", result));
      break;
    }
    case 1: {
      Val w = matrix(name, n, k);
      std::string maps = "[affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, "
                         "k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]";
      y = b.op("mm", {t, n}, "f32",
               cat("linalg.matmul indexing_maps = ", maps, " ins(", x.name,
                   ", ", w.name, " : ", x.type(), ", ", w.type(), ")", result));
      break;
    }
    default: {
      Val w = matrix(name, n, k);
      Val wt = transpose(w, {1, 0});
      y = b.op("mm", {t, n}, "f32",
               cat("linalg.matmul ins(", x.name, ", ", wt.name, " : ", x.type(),
                   ", ", wt.type(), ")", result));
      break;
    }
    }
    y = castTo(y, cfg.elt());
    if (!bias)
      return y;
    Val bv = weight(name + ".bias", {n}, Init::Bias);
    return broadcastFeature(y, bv, "arith.addf", projIndex % 2, "bias");
  }

  Val embed(const Val &ids) override {
    int64_t t = ids.shape[0], hidden = cfg.hidden;
    Val table =
        weight("embed_tokens.weight", {cfg.vocab, hidden}, Init::Matrix);
    b.comment("token embedding: a gather by id");
    return generic(
        "embed", {{ids, "affine_map<(d0, d1) -> (d0)>"}},
        empty({t, hidden}, table.elt), identityMap(2), {"parallel", "parallel"},
        [&](Body &r, const std::vector<std::string> &a) {
          std::string row =
              r.op("row", cat("arith.index_cast ", a[0], " : i64 to index"));
          std::string col = r.op("col", "linalg.index 1 : index");
          return r.op("e", cat("tensor.extract ", table.name, "[", row, ", ",
                               col, "] : ", table.type()));
        });
  }

  Val writeCache(const Val &cache, const Val &x) override {
    if (cfg.cacheWrite == CacheWrite::StoreLoop)
      return storeLoop(cache, x);
    return b.op("cache", cache.shape, cache.elt,
                cat("tensor.insert_slice ", x.name, " into ", cache.name, "[",
                    position, ", 0] [", x.shape[0], ", ", x.shape[1],
                    "] [1, 1] : ", x.type(), " into ", cache.type()));
  }

  /// The in-place update a PyTorch importer writes for `cache[pos:pos+t] =
  /// x`: the argument's buffer stored to element by element, then read
  /// back as the updated tensor (`restrict`: nothing else aliases it).
  Val storeLoop(const Val &cache, const Val &x) {
    std::string buf = b.fresh("cache_buf");
    std::string memref =
        "memref<" + joinInts(cache.shape, "x") + "x" + cache.elt + ">";
    b.line(cat(buf, " = bufferization.to_buffer ", cache.name, " : ",
               cache.type(), " to ", memref));
    std::string zero = b.fresh("c0"), one = b.fresh("c1"),
                rows = b.fresh("rows"), cols = b.fresh("cols");
    b.line(cat(zero, " = arith.constant 0 : index"));
    b.line(cat(one, " = arith.constant 1 : index"));
    b.line(cat(rows, " = arith.constant ", x.shape[0], " : index"));
    b.line(cat(cols, " = arith.constant ", x.shape[1], " : index"));
    std::string t = b.fresh("t"), j = b.fresh("j"), at = b.fresh("at"),
                v = b.fresh("v");
    b.line(cat("scf.for ", t, " = ", zero, " to ", rows, " step ", one, " {"));
    b.line(cat("  ", at, " = arith.addi ", position, ", ", t, " : index"));
    b.line(
        cat("  scf.for ", j, " = ", zero, " to ", cols, " step ", one, " {"));
    b.line(cat("    ", v, " = tensor.extract ", x.name, "[", t, ", ", j,
               "] : ", x.type()));
    b.line(cat("    memref.store ", v, ", ", buf, "[", at, ", ", j,
               "] : ", memref));
    b.line("  }");
    b.line("}");
    return b.op("cache", cache.shape, cache.elt,
                cat("bufferization.to_tensor ", buf, " restrict : ", memref,
                    " to ", cache.type()));
  }

  Val rope(const Val &x) override {
    int64_t t = x.shape[0], h = cfg.heads, d = cfg.headDim(), half = d / 2;
    b.comment("rotary position embedding: x cos + rotate_half(x) sin");
    // cos and sin of (position + i) theta^(-2 (j mod d/2) / d), [t, d], once
    // per function.
    auto table = [&](const char *fn) {
      return b.cached(cat("rope.", fn), [&] {
        std::string step = b.scalar(-2.0 * std::log(10000.0) / d, "f32");
        return generic(
            fn, {}, empty({t, d}, "f32"), identityMap(2),
            {"parallel", "parallel"},
            [&](Body &r, const std::vector<std::string> &) {
              std::string i = r.op("i", "linalg.index 0 : index");
              if (!position.empty())
                i = r.op("p",
                         cat("arith.addi ", i, ", ", position, " : index"));
              std::string j = r.op("j", "linalg.index 1 : index");
              std::string jj =
                  r.op("jj", cat("arith.remui ", j, ", ",
                                 r.constant(cat(half), "index"), " : index"));
              auto toFloat = [&](const std::string &idx) {
                std::string n =
                    r.op("n", cat("arith.index_cast ", idx, " : index to i64"));
                return r.op("f", cat("arith.sitofp ", n, " : i64 to f32"));
              };
              std::string e = r.op(
                  "e", cat("arith.mulf ", toFloat(jj), ", ", step, " : f32"));
              std::string inv = r.op("inv", cat("math.exp ", e, " : f32"));
              std::string angle = r.op(
                  "angle", cat("arith.mulf ", toFloat(i), ", ", inv, " : f32"));
              return r.op(fn, cat("math.", fn, " ", angle, " : f32"));
            });
      });
    };
    Val cos = table("cos"), sin = table("sin");
    Val xf = toF32(x);
    Shape heads{t, h, d}, halves{t, h, half};
    Val xh = b.op("heads", heads, "f32",
                  cat("tensor.expand_shape ", xf.name,
                      " [[0], [1, 2]] output_shape [", t, ", ", h, ", ", d,
                      "] : ", xf.type(), " into ", tensorType(heads, "f32")));
    auto slice = [&](int64_t offset) {
      return b.op("half", halves, "f32",
                  cat("tensor.extract_slice ", xh.name, "[0, 0, ", offset,
                      "] [", t, ", ", h, ", ", half, "] [1, 1, 1] : ",
                      xh.type(), " to ", tensorType(halves, "f32")));
    };
    Val x1 = slice(0), x2 = slice(half);
    Val neg = generic("neg", {{x2, identityMap(3)}}, empty(halves, "f32"),
                      identityMap(3), {"parallel", "parallel", "parallel"},
                      [&](Body &r, const std::vector<std::string> &a) {
                        return r.op("n", cat("arith.negf ", a[0], " : f32"));
                      });
    Val rot = b.op("rot", heads, "f32",
                   cat("tensor.concat dim(2) ", neg.name, ", ", x1.name, " : (",
                       neg.type(), ", ", x1.type(), ") -> ",
                       tensorType(heads, "f32")));
    std::string table3 = "affine_map<(d0, d1, d2) -> (d0, d2)>";
    Val y =
        generic("rope",
                {{xh, identityMap(3)},
                 {cos, table3},
                 {rot, identityMap(3)},
                 {sin, table3}},
                empty(heads, "f32"), identityMap(3),
                {"parallel", "parallel", "parallel"},
                [&](Body &r, const std::vector<std::string> &a) {
                  std::string c =
                      r.op("c", cat("arith.mulf ", a[0], ", ", a[1], " : f32"));
                  std::string s =
                      r.op("s", cat("arith.mulf ", a[2], ", ", a[3], " : f32"));
                  return r.op("y", cat("arith.addf ", c, ", ", s, " : f32"));
                });
    Val merged = b.op("roped", {t, h * d}, "f32",
                      cat("tensor.collapse_shape ", y.name, " [[0], [1, 2]] : ",
                          y.type(), " into ", tensorType({t, h * d}, "f32")));
    return castTo(merged, x.elt);
  }

  Val attention(const Val &q, const Val &k, const Val &v, const NormSpec *qNorm,
                const NormSpec *kNorm) override {
    // Queries are the tokens; keys are the tokens, or the whole cache.
    int64_t t = q.shape[0], tk = k.shape[0], h = cfg.heads, d = cfg.headDim();
    bool scoresAsGeneric = attnIndex++ % 2;
    b.comment(cat("attention: ", h, " heads of ", d, ", causal"));
    auto split = [&](const Val &x, const NormSpec *spec) {
      int64_t rows = x.shape[0];
      Val s = b.op("heads", {rows, h, d}, x.elt,
                   cat("tensor.expand_shape ", x.name,
                       " [[0], [1, 2]] output_shape [", rows, ", ", h, ", ", d,
                       "] : ", x.type(), " into ",
                       tensorType({rows, h, d}, x.elt)));
      return toF32(spec ? norm(s, *spec) : s);
    };
    Val qh = transpose(split(q, qNorm), {1, 0, 2}); // [H, T, D]
    Val kh = split(k, kNorm);
    Val vh = transpose(split(v, nullptr), {1, 0, 2});

    Val scores;
    if (scoresAsGeneric) {
      // q k^T as a contraction over d of [H, T, D] x [H, T, D].
      Val kt = transpose(kh, {1, 0, 2});
      Val init = zeros({h, t, tk});
      scores = generic(
          "scores",
          {{qh, "affine_map<(h, i, j, d) -> (h, i, d)>"},
           {kt, "affine_map<(h, i, j, d) -> (h, j, d)>"}},
          init, "affine_map<(h, i, j, d) -> (h, i, j)>",
          {"parallel", "parallel", "parallel", "reduction"},
          [](Body &r, const std::vector<std::string> &a) {
            std::string m =
                r.op("m", cat("arith.mulf ", a[0], ", ", a[1], " : f32"));
            return r.op("s", cat("arith.addf ", m, ", ", a[2], " : f32"));
          });
    } else {
      Val kt = transpose(kh, {1, 2, 0}); // [H, D, T]
      Val init = zeros({h, t, tk});
      scores = b.op("scores", {h, t, tk}, "f32",
                    cat("linalg.batch_matmul ins(", qh.name, ", ", kt.name,
                        " : ", qh.type(), ", ", kt.type(), ") outs(", init.name,
                        " : ", init.type(), ") -> ", init.type()));
    }
    // Scale by 1/sqrt(D) and add a large negative number above the diagonal.
    std::string scale = b.scalar(1.0 / std::sqrt(double(d)), "f32");
    std::string neg = b.scalar(-1e9, "f32");
    std::string zero = b.scalar(0.0, "f32");
    Val masked = generic(
        "masked", {{scores, identityMap(3)}}, empty({h, t, tk}, "f32"),
        identityMap(3), {"parallel", "parallel", "parallel"},
        [&](Body &r, const std::vector<std::string> &a) {
          std::string i = r.op("i", "linalg.index 1 : index");
          std::string j = r.op("j", "linalg.index 2 : index");
          if (!position.empty()) // Query i sits at position + i.
            i = r.op("qi", cat("arith.addi ", i, ", ", position, " : index"));
          std::string above =
              r.op("above", cat("arith.cmpi ugt, ", j, ", ", i, " : index"));
          std::string m = r.op("m", cat("arith.select ", above, ", ", neg, ", ",
                                        zero, " : f32"));
          std::string s =
              r.op("s", cat("arith.mulf ", a[0], ", ", scale, " : f32"));
          return r.op("sm", cat("arith.addf ", s, ", ", m, " : f32"));
        });
    Val probs = softmax(masked);
    Val init = zeros({h, t, d});
    Val o = b.op("attn", {h, t, d}, "f32",
                 cat("linalg.batch_matmul ins(", probs.name, ", ", vh.name,
                     " : ", probs.type(), ", ", vh.type(), ") outs(", init.name,
                     " : ", init.type(), ") -> ", init.type()));
    Val ot = transpose(o, {1, 0, 2});
    return b.op("merged", {t, h * d}, "f32",
                cat("tensor.collapse_shape ", ot.name, " [[0], [1, 2]] : ",
                    ot.type(), " into ", tensorType({t, h * d}, "f32")));
  }

  Val activation(Act act, const Val &gateIn, const Val *upIn) override {
    Val gate = toF32(gateIn);
    std::vector<In> ins{{gate, identityMap(2)}};
    if (upIn)
      ins.push_back({toF32(*upIn), identityMap(2)});
    bool silu = act == Act::Silu;
    std::string one = b.scalar(1.0, "f32");
    std::string half = silu ? "" : b.scalar(0.5, "f32");
    std::string c0 = silu ? "" : b.scalar(0.044715, "f32");
    std::string c1 = silu ? "" : b.scalar(std::sqrt(2.0 / kPi), "f32");
    return generic(
        act == Act::Silu ? "swiglu" : "gelu", ins, empty(gate.shape, "f32"),
        identityMap(2), {"parallel", "parallel"},
        [&](Body &r, const std::vector<std::string> &a) {
          const std::string &g = a[0];
          std::string y;
          if (act == Act::Silu) {
            // silu(g) = g / (1 + exp(-g))
            std::string ng = r.op("ng", cat("arith.negf ", g, " : f32"));
            std::string e = r.op("e", cat("math.exp ", ng, " : f32"));
            std::string den =
                r.op("den", cat("arith.addf ", one, ", ", e, " : f32"));
            y = r.op("silu", cat("arith.divf ", g, ", ", den, " : f32"));
          } else {
            // 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
            std::string g2 =
                r.op("g2", cat("arith.mulf ", g, ", ", g, " : f32"));
            std::string g3 =
                r.op("g3", cat("arith.mulf ", g2, ", ", g, " : f32"));
            std::string a3 =
                r.op("a3", cat("arith.mulf ", g3, ", ", c0, " : f32"));
            std::string in =
                r.op("in", cat("arith.addf ", g, ", ", a3, " : f32"));
            std::string sc =
                r.op("sc", cat("arith.mulf ", in, ", ", c1, " : f32"));
            std::string th = r.op("th", cat("math.tanh ", sc, " : f32"));
            std::string op1 =
                r.op("op", cat("arith.addf ", th, ", ", one, " : f32"));
            std::string hg =
                r.op("hg", cat("arith.mulf ", g, ", ", half, " : f32"));
            y = r.op("gelu", cat("arith.mulf ", hg, ", ", op1, " : f32"));
          }
          if (a.size() == 3)
            y = r.op("act", cat("arith.mulf ", y, ", ", a[1], " : f32"));
          return y;
        });
  }

protected:
  struct In {
    Val v;
    std::string map;
  };
  using BodyFn =
      std::function<std::string(Body &, const std::vector<std::string> &)>;

  /// The [n, k] weight of projection `name` as @forward uses it: stored,
  /// or (--quant) integers dequantized by a linalg.generic, as frontends
  /// write weight-only quantization.
  Val matrix(const std::string &name, int64_t n, int64_t k) {
    if (cfg.quant == Quant::None)
      return weight(name + ".weight", {n, k}, Init::Matrix, k);
    std::string id = "affine_map<(n, k) -> (n, k)>";
    std::vector<In> ins;
    bool int8 = cfg.quant == Quant::Int8;
    if (int8) {
      ins.push_back(
          {weight(name + ".qweight", {n, k}, Init::QInt8, k, false, "i8"), id});
      ins.push_back(
          {weight(name + ".scales", {n}, Init::QScale8, k, false, "f32"),
           "affine_map<(n, k) -> (n)>"});
    } else {
      int64_t g = quantGroup(k);
      std::string group = cat("affine_map<(n, k) -> (n, k floordiv ", g, ")>");
      ins.push_back({weight(name + ".qweight", {n, k / 2}, Init::QPacked4, k,
                            false, "i8"),
                     "affine_map<(n, k) -> (n, k floordiv 2)>"});
      ins.push_back(
          {weight(name + ".scales", {n, k / g}, Init::QScale4, k, false, "f32"),
           group});
      ins.push_back(
          {weight(name + ".zeros", {n, k / g}, Init::QZero, k, false, "f32"),
           group});
    }
    if (cfg.kscale)
      ins.push_back(
          {weight(name + ".kscale", {k}, Init::KScale, k, false, "f32"),
           "affine_map<(n, k) -> (k)>"});
    std::string elt = cfg.elt();
    return generic(
        "dequant", ins, empty({n, k}, elt), id, {"parallel", "parallel"},
        [&](Body &r, const std::vector<std::string> &a) {
          std::string f;
          if (int8) {
            std::string e =
                r.op("e", cat("arith.extsi ", a[0], " : i8 to i32"));
            f = r.op("f", cat("arith.sitofp ", e, " : i32 to f32"));
            f = r.op("w", cat("arith.mulf ", f, ", ", a[1], " : f32"));
          } else {
            // The low nibble holds even k, the high one odd k.
            std::string kk = r.op("k", "linalg.index 1 : index");
            std::string k8 =
                r.op("k8", cat("arith.index_cast ", kk, " : index to i8"));
            std::string odd = r.op("odd", cat("arith.andi ", k8, ", ",
                                              r.constant("1", "i8"), " : i8"));
            std::string sh = r.op("sh", cat("arith.muli ", odd, ", ",
                                            r.constant("4", "i8"), " : i8"));
            std::string v =
                r.op("v", cat("arith.shrui ", a[0], ", ", sh, " : i8"));
            std::string q = r.op("q", cat("arith.andi ", v, ", ",
                                          r.constant("15", "i8"), " : i8"));
            std::string e = r.op("e", cat("arith.extui ", q, " : i8 to i32"));
            f = r.op("f", cat("arith.uitofp ", e, " : i32 to f32"));
            f = r.op("d", cat("arith.subf ", f, ", ", a[2], " : f32"));
            f = r.op("w", cat("arith.mulf ", f, ", ", a[1], " : f32"));
          }
          if (cfg.kscale)
            f = r.op("wk",
                     cat("arith.mulf ", f, ", ", a[ins.size() - 1], " : f32"));
          if (elt != "f32")
            f = r.op("wt", cat("arith.truncf ", f, " : f32 to ", elt));
          return f;
        });
  }

  Val constant(const Weight &w) override {
    return b.op(
        "w", w.shape, w.elt,
        cat("arith.constant dense_resource<", w.name, "> : ", weightType(w)));
  }

  Val empty(const Shape &shape, const std::string &elt) {
    return b.op("empty", shape, elt,
                "tensor.empty() : " + tensorType(shape, elt));
  }
  Val fill(const Shape &shape, const std::string &value) {
    Val e = empty(shape, "f32");
    return b.op("fill", shape, "f32",
                cat("linalg.fill ins(", value, " : f32) outs(", e.name, " : ",
                    e.type(), ") -> ", e.type()));
  }
  Val zeros(const Shape &shape) { return fill(shape, b.scalar(0.0, "f32")); }

  Val transpose(const Val &x, const Shape &perm) {
    Shape out;
    for (int64_t p : perm)
      out.push_back(x.shape[p]);
    Val e = empty(out, x.elt);
    return b.op("tr", out, x.elt,
                cat("linalg.transpose ins(", x.name, " : ", x.type(), ") outs(",
                    e.name, " : ", e.type(), ") permutation = [",
                    joinInts(perm), "]"));
  }

  /// A linalg.generic; the body gets the block arguments (inputs, then the
  /// output) and returns the value to yield.
  Val generic(const std::string &hint, const std::vector<In> &ins,
              const Val &init, const std::string &outMap,
              const std::vector<std::string> &iters, const BodyFn &body) {
    std::vector<std::string> maps, names, types, args, argDecls;
    for (const In &in : ins) {
      maps.push_back(in.map);
      names.push_back(in.v.name);
      types.push_back(in.v.type());
    }
    maps.push_back(outMap);
    std::vector<std::string> quoted;
    for (const std::string &it : iters)
      quoted.push_back("\"" + it + "\"");
    std::vector<const Val *> all;
    for (const In &in : ins)
      all.push_back(&in.v);
    all.push_back(&init);
    for (const Val *v : all) {
      std::string a = b.fresh("a");
      args.push_back(a);
      argDecls.push_back(a + ": " + v->elt);
    }
    std::string region;
    Body r(b, region);
    std::string yielded = body(r, args);
    std::string insText =
        ins.empty() ? "" : cat(" ins(", join(names), " : ", join(types), ")");
    Val out{b.fresh(hint), init.shape, init.elt};
    b.line(cat(out.name, " = linalg.generic {indexing_maps = [", join(maps),
               "], iterator_types = [", join(quoted), "]}", insText, " outs(",
               init.name, " : ", init.type(), ") {\n  ^bb0(", join(argDecls),
               "):\n", region, "    linalg.yield ", yielded, " : ", init.elt,
               "\n  } -> ", init.type()));
    return out;
  }

  /// An element-wise generic over same-shaped tensors.
  Val map(const std::string &hint, const std::vector<Val> &xs,
          const BodyFn &body) {
    std::vector<In> ins;
    for (const Val &x : xs)
      ins.push_back({x, identityMap(x.rank())});
    std::vector<std::string> iters(xs[0].rank(), "parallel");
    return generic(hint, ins, empty(xs[0].shape, xs[0].elt),
                   identityMap(xs[0].rank()), iters, body);
  }

  /// A per-row statistic: [rows] or, with keepdim, [rows, 1].
  struct Row {
    Val v;
    bool keepdim;
  };

  /// x^2, as math.fpowi in a generic or as arith.mulf on tensors.
  Val square(const Val &x, int form) {
    if (form == 0)
      return map("sq", {x}, [&](Body &r, const std::vector<std::string> &a) {
        std::string two = r.constant("2", "i32");
        return r.op("p", cat("math.fpowi ", a[0], ", ", two, " : f32, i32"));
      });
    return b.op("sq", x.shape, x.elt,
                cat("arith.mulf ", x.name, ", ", x.name, " : ", x.type()));
  }

  /// Sum over the last dimension: linalg.reduce to [rows], or a reducing
  /// generic to [rows, 1].
  Row sumLast(const Val &x, int form) {
    int64_t r = x.rank();
    Shape rows(x.shape.begin(), x.shape.end() - 1);
    if (form == 0) {
      Val init = zeros(rows);
      Val out{b.fresh("sum"), rows, "f32"};
      std::string in = b.fresh("in"), acc = b.fresh("acc"), s = b.fresh("s");
      b.line(cat(out.name, " = linalg.reduce ins(", x.name, " : ", x.type(),
                 ") outs(", init.name, " : ", init.type(), ") dimensions = [",
                 r - 1, "]\n    (", in, ": f32, ", acc, ": f32) {\n      ", s,
                 " = arith.addf ", in, ", ", acc, " : f32\n      linalg.yield ",
                 s, " : f32\n    }"));
      return {out, false};
    }
    rows.push_back(1);
    std::vector<std::string> iters(r, "parallel");
    iters.back() = "reduction";
    Val sum = generic(
        "sum", {{x, identityMap(r)}}, zeros(rows), rowMap(r, true), iters,
        [](Body &body, const std::vector<std::string> &a) {
          return body.op("s", cat("arith.addf ", a[0], ", ", a[1], " : f32"));
        });
    return {sum, true};
  }

  /// An element-wise op on a row statistic.
  Row onRow(const Row &row, const std::string &hint, const BodyFn &body) {
    return {map(hint, {row.v}, body), row.keepdim};
  }

  /// x op row, the row broadcast along the last dimension: by an indexing
  /// map for keepdim rows, by linalg.broadcast and an op on tensors else.
  Val withRow(const Val &x, const Row &row, const std::string &opName,
              const std::string &hint) {
    int64_t r = x.rank();
    if (row.keepdim) {
      std::vector<std::string> iters(r, "parallel");
      return generic(hint, {{x, identityMap(r)}, {row.v, rowMap(r, true)}},
                     empty(x.shape, x.elt), identityMap(r), iters,
                     [&](Body &body, const std::vector<std::string> &a) {
                       return body.op(
                           "v", cat(opName, " ", a[0], ", ", a[1], " : f32"));
                     });
    }
    Val e = empty(x.shape, x.elt);
    Val bc = b.op("bcast", x.shape, x.elt,
                  cat("linalg.broadcast ins(", row.v.name, " : ", row.v.type(),
                      ") outs(", e.name, " : ", e.type(), ") dimensions = [",
                      r - 1, "]"));
    return b.op(hint, x.shape, x.elt,
                cat(opName, " ", x.name, ", ", bc.name, " : ", x.type()));
  }

  /// y op g for a [K] vector g: through indexing maps, linalg.broadcast, or
  /// tensor.expand_shape to [1, .., K] and a broadcasting map.
  Val broadcastFeature(const Val &y, const Val &g, const std::string &opName,
                       int form, const std::string &hint) {
    int64_t r = y.rank();
    std::vector<std::string> iters(r, "parallel");
    BodyFn body = [&](Body &bd, const std::vector<std::string> &a) {
      return bd.op("v", cat(opName, " ", a[0], ", ", a[1], " : ", y.elt));
    };
    if (form == 0)
      return generic(hint, {{y, identityMap(r)}, {g, featureMap(r, false)}},
                     empty(y.shape, y.elt), identityMap(r), iters, body);
    if (form == 1) {
      Shape dims;
      for (int64_t i = 0; i + 1 < r; ++i)
        dims.push_back(i);
      Val e = empty(y.shape, g.elt);
      Val bc = b.op("bcast", y.shape, g.elt,
                    cat("linalg.broadcast ins(", g.name, " : ", g.type(),
                        ") outs(", e.name, " : ", e.type(), ") dimensions = [",
                        joinInts(dims), "]"));
      return b.op(hint, y.shape, y.elt,
                  cat(opName, " ", y.name, ", ", bc.name, " : ", y.type()));
    }
    Shape ones(r, 1), all;
    ones.back() = g.last();
    for (int64_t i = 0; i < r; ++i)
      all.push_back(i);
    Val ex = b.op("gx", ones, g.elt,
                  cat("tensor.expand_shape ", g.name, " [[", joinInts(all),
                      "]] output_shape [", joinInts(ones), "] : ", g.type(),
                      " into ", tensorType(ones, g.elt)));
    return generic(hint, {{y, identityMap(r)}, {ex, featureMap(r, true)}},
                   empty(y.shape, y.elt), identityMap(r), iters, body);
  }

  /// sum / K: a multiply by the constant 1/K or a divide by K.
  Row mean(const Row &sum, int64_t k, int form) {
    std::string c = b.scalar(form == 0 ? 1.0 / double(k) : double(k), "f32");
    std::string opName = form == 0 ? "arith.mulf " : "arith.divf ";
    return onRow(sum, "mean", [&](Body &r, const std::vector<std::string> &a) {
      return r.op("m", cat(opName, a[0], ", ", c, " : f32"));
    });
  }

  /// x / sqrt(ms + eps), as rsqrt, as 1 / sqrt or as a divide by sqrt.
  Val normalize(const Val &x, const Row &ms, double eps, int form) {
    std::string e = b.scalar(eps, "f32");
    Row ve = onRow(ms, "ve", [&](Body &r, const std::vector<std::string> &a) {
      return r.op("v", cat("arith.addf ", a[0], ", ", e, " : f32"));
    });
    std::string fn = form == 0 ? "math.rsqrt " : "math.sqrt ";
    Row s = onRow(ve, form == 0 ? "inv" : "rms",
                  [&](Body &r, const std::vector<std::string> &a) {
                    return r.op("s", cat(fn, a[0], " : f32"));
                  });
    if (form == 2)
      return withRow(x, s, "arith.divf", "normed");
    if (form == 1) {
      std::string one = b.scalar(1.0, "f32");
      s = onRow(s, "inv", [&](Body &r, const std::vector<std::string> &a) {
        return r.op("s", cat("arith.divf ", one, ", ", a[0], " : f32"));
      });
    }
    return withRow(x, s, "arith.mulf", "normed");
  }

  Val rmsNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    int64_t k = xIn.last();
    Val x = toF32(xIn);
    Val sq = square(x, idx % 2);
    Row sum = sumLast(sq, (idx + 1) / 2 % 2);
    Row ms = mean(sum, k, idx / 2 % 2);
    Val y = normalize(x, ms, spec.eps, idx % 3);
    Val g =
        weight(spec.prefix + ".weight", {k},
               spec.gain == Gain::Plain ? Init::PlainGain : Init::OnePlusGain);
    int form = (idx + 1) % 3;
    if (spec.gain == Gain::Plain) {
      // Llama order: round the normalized value, then apply the gain.
      y = castTo(y, xIn.elt);
      return broadcastFeature(y, g, "arith.mulf", form, "gained");
    }
    // Gemma order: (1 + g) formed and applied in f32, rounded after.
    std::string one = b.scalar(1.0, "f32");
    Val onePlus =
        map("one_plus", {toF32(g)},
            [&](Body &r, const std::vector<std::string> &a) {
              return r.op("o", cat("arith.addf ", one, ", ", a[0], " : f32"));
            });
    y = broadcastFeature(y, onePlus, "arith.mulf", form, "gained");
    return castTo(y, xIn.elt);
  }

  Val layerNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    // bf16 as PyTorch's kernels compute it: in f32 (the row, the gain and
    // the bias widened), rounded once at the end.
    int64_t k = xIn.last();
    Val x = toF32(xIn);
    int sumForm = (idx + 1) / 2 % 2, meanForm = idx / 2 % 2;
    Row mu = mean(sumLast(x, sumForm), k, meanForm);
    // Two-pass variance: center first, then average the squares.
    Val c = withRow(x, mu, "arith.subf", "centered");
    Row var = mean(sumLast(square(c, idx % 2), 1 - sumForm), k, 1 - meanForm);
    Val y = normalize(c, var, spec.eps, idx % 3);
    if (!spec.affine)
      return castTo(y, xIn.elt);
    Val g = weight(spec.prefix + ".weight", {k}, Init::PlainGain);
    Val bias = weight(spec.prefix + ".bias", {k}, Init::Bias);
    y = broadcastFeature(y, toF32(g), "arith.mulf", (idx + 1) % 3, "gained");
    y = broadcastFeature(y, toF32(bias), "arith.addf", (idx + 2) % 3, "biased");
    return castTo(y, xIn.elt);
  }

  /// Max-subtracted softmax over the last dimension of [H, T, T].
  Val softmax(const Val &s) {
    Shape rows(s.shape.begin(), s.shape.end() - 1);
    Val init = fill(rows, b.scalar(-3.0e38, "f32"));
    Val mx{b.fresh("max"), rows, "f32"};
    std::string in = b.fresh("in"), acc = b.fresh("acc"), m = b.fresh("m");
    b.line(cat(mx.name, " = linalg.reduce ins(", s.name, " : ", s.type(),
               ") outs(", init.name, " : ", init.type(),
               ") dimensions = [2]\n    (", in, ": f32, ", acc,
               ": f32) {\n      ", m, " = arith.maximumf ", in, ", ", acc,
               " : f32\n      linalg.yield ", m, " : f32\n    }"));
    std::vector<std::string> par(3, "parallel");
    Val e = generic("exp", {{s, identityMap(3)}, {mx, rowMap(3, false)}},
                    empty(s.shape, "f32"), identityMap(3), par,
                    [](Body &r, const std::vector<std::string> &a) {
                      std::string d = r.op(
                          "d", cat("arith.subf ", a[0], ", ", a[1], " : f32"));
                      return r.op("e", cat("math.exp ", d, " : f32"));
                    });
    Val z = generic("denom", {{e, identityMap(3)}}, zeros(rows),
                    rowMap(3, false), {"parallel", "parallel", "reduction"},
                    [](Body &r, const std::vector<std::string> &a) {
                      return r.op(
                          "s", cat("arith.addf ", a[0], ", ", a[1], " : f32"));
                    });
    return generic("probs", {{e, identityMap(3)}, {z, rowMap(3, false)}},
                   empty(s.shape, "f32"), identityMap(3), par,
                   [](Body &r, const std::vector<std::string> &a) {
                     return r.op(
                         "p", cat("arith.divf ", a[0], ", ", a[1], " : f32"));
                   });
  }
};

//===----------------------------------------------------------------------===//
// torch-mlir style: the linalg flavor as torch-mlir's lowering writes it
//===----------------------------------------------------------------------===//

/// Norms run on [1, T, K] (the batch of 1 read through literal 0 results of
/// the indexing maps), row statistics are [1, T, 1] and are broadcast to
/// full shape by a gather generic (`tensor.extract` at `linalg.index 1`) or
/// by a yield-only generic before they are used; every second LayerNorm
/// computes its variance in f64; epsilons are f64 constants truncated in
/// the body. nn.Linear weights [N, K] are transposed by a yield-only generic
/// (aten.t) and the bias is added after the matmul.
///
/// bf16 as torch-mlir lowers a bf16 HuggingFace model: every dtype change
/// (`.to(torch.float32)`, `.type_as(x)`, the matmul's f32 accumulator back
/// to bf16) is a generic whose body casts; RMSNorm's statistics are taken
/// on the widened row and the normalized row is rounded before the bf16
/// gain multiplies it (LlamaRMSNorm), Gemma's (1 + g) is applied in f32 and
/// rounded after; LayerNorms are widened, gain and bias too, and rounded
/// once; the bias of a projection is added in bf16 after the rounding.
class TorchMlirEmitter : public LinalgEmitter {
public:
  using LinalgEmitter::LinalgEmitter;

  Val castTo(const Val &x, const std::string &elt) override {
    if (x.elt == elt)
      return x;
    bool widen = elt == "f32";
    int64_t r = x.rank();
    return generic(widen ? "to_f32" : "to_bf16", {{x, identityMap(r)}},
                   empty(x.shape, elt), identityMap(r),
                   std::vector<std::string>(r, "parallel"),
                   [&](Body &body, const std::vector<std::string> &a) {
                     return body.op("c",
                                    cat(widen ? "arith.extf " : "arith.truncf ",
                                        a[0], " : ", x.elt, " to ", elt));
                   });
  }

  Val projection(const Val &xIn, const std::string &name, int64_t n,
                 bool bias) override {
    Val x = castTo(xIn, cfg.elt());
    int64_t k = x.last(), t = x.shape[0];
    Val w = matrix(name, n, k);
    Val wt = generic(
        "t", {{w, "affine_map<(d0, d1) -> (d0, d1)>"}}, empty({k, n}, w.elt),
        "affine_map<(d0, d1) -> (d1, d0)>", {"parallel", "parallel"},
        [](Body &, const std::vector<std::string> &a) { return a[0]; });
    Val acc = zeros({t, n});
    Val y = b.op("mm", {t, n}, "f32",
                 cat("linalg.matmul ins(", x.name, ", ", wt.name, " : ",
                     x.type(), ", ", wt.type(), ") outs(", acc.name, " : ",
                     acc.type(), ") -> ", acc.type()));
    y = castTo(y, cfg.elt());
    if (!bias)
      return y;
    Val bv = weight(name + ".bias", {n}, Init::Bias);
    return generic(
        "biased", {{bv, "affine_map<(d0, d1) -> (d1)>"}, {y, identityMap(2)}},
        empty(y.shape, y.elt), identityMap(2), {"parallel", "parallel"},
        [&](Body &r, const std::vector<std::string> &a) {
          return r.op("v", cat("arith.addf ", a[0], ", ", a[1], " : ", y.elt));
        });
  }

protected:
  /// Maps over the [1, T, K] (or [1, T, 1]) iteration space.
  static std::string full() {
    return "affine_map<(d0, d1, d2) -> (0, d1, d2)>";
  }
  static std::string row() { return "affine_map<(d0, d1, d2) -> (0, d1, 0)>"; }
  static std::string feature() { return "affine_map<(d0, d1, d2) -> (d2)>"; }
  static std::vector<std::string> par3() {
    return {"parallel", "parallel", "parallel"};
  }

  Val batched(const Val &x) {
    Shape s{1, x.shape[0], x.shape[1]};
    return b.op("b", s, x.elt,
                cat("tensor.expand_shape ", x.name, " [[0, 1], [2]] ",
                    "output_shape [", joinInts(s), "] : ", x.type(), " into ",
                    tensorType(s, x.elt)));
  }
  Val unbatched(const Val &x) {
    Shape s{x.shape[1], x.shape[2]};
    return b.op("u", s, x.elt,
                cat("tensor.collapse_shape ", x.name, " [[0, 1], [2]] : ",
                    x.type(), " into ", tensorType(s, x.elt)));
  }
  Val zerosOf(const Shape &shape, const std::string &elt) {
    Val e = empty(shape, elt);
    return b.op("fill", shape, elt,
                cat("linalg.fill ins(", b.scalar(0.0, elt), " : ", elt,
                    ") outs(", e.name, " : ", e.type(), ") -> ", e.type()));
  }
  /// [1, T, K] -> [1, T, 1]: sum over the last dimension, keepdim.
  Val rowSum(const Val &x) {
    Shape rows{1, x.shape[1], 1};
    return generic(
        "sum", {{x, identityMap(3)}}, zerosOf(rows, x.elt),
        "affine_map<(d0, d1, d2) -> (d0, d1, 0)>",
        {"parallel", "parallel", "reduction"},
        [&](Body &r, const std::vector<std::string> &a) {
          return r.op("s", cat("arith.addf ", a[0], ", ", a[1], " : ", x.elt));
        });
  }
  /// An element-wise op on a [1, T, 1] statistic, result in `elt`.
  Val onRow(const Val &v, const std::string &elt, const std::string &hint,
            const BodyFn &body) {
    return generic(hint, {{v, row()}}, empty(v.shape, elt), identityMap(3),
                   par3(), body);
  }
  /// The statistic at full shape [1, T, K]: gathered, or copied.
  Val expandRow(const Val &v, int64_t k, int form) {
    Shape s{1, v.shape[1], k};
    if (form == 0) {
      std::string zero = indexZero();
      return generic("expand", {}, empty(s, v.elt), identityMap(3), par3(),
                     [&](Body &r, const std::vector<std::string> &) {
                       std::string i = r.op("i", "linalg.index 1 : index");
                       return r.op("v",
                                   cat("tensor.extract ", v.name, "[", zero,
                                       ", ", i, ", ", zero, "] : ", v.type()));
                     });
    }
    return generic(
        "expand", {{v, row()}}, empty(s, v.elt), identityMap(3), par3(),
        [](Body &, const std::vector<std::string> &a) { return a[0]; });
  }
  std::string indexZero() {
    return b
        .cached(
            "c0:index",
            [&] { return b.op("c0", {}, "index", "arith.constant 0 : index"); })
        .name;
  }
  /// a op b over [1, T, K] values.
  Val both(const Val &x, const Val &y, const std::string &opName,
           const std::string &hint) {
    return generic(
        hint, {{x, full()}, {y, full()}}, empty(x.shape, x.elt), identityMap(3),
        par3(), [&](Body &r, const std::vector<std::string> &a) {
          return r.op("v", cat(opName, " ", a[0], ", ", a[1], " : ", x.elt));
        });
  }
  Val withFeature(const Val &x, const Val &g, const std::string &opName,
                  const std::string &hint) {
    return generic(hint, {{x, full()}, {g, feature()}}, empty(x.shape, x.elt),
                   identityMap(3), par3(),
                   [&](Body &r, const std::vector<std::string> &a) {
                     return r.op(
                         "v", cat(opName, " ", a[0], ", ", a[1], " : ", x.elt));
                   });
  }
  /// rsqrt(stat + eps) on a [1, T, 1] f32 statistic, eps an f64 constant
  /// truncated in the body.
  Val invStd(const Val &stat, double eps) {
    std::string e64 = b.scalar(eps, "f64");
    Val plus =
        onRow(stat, "f32", "plus_eps",
              [&](Body &r, const std::vector<std::string> &a) {
                std::string e =
                    r.op("e", cat("arith.truncf ", e64, " : f64 to f32"));
                return r.op("v", cat("arith.addf ", a[0], ", ", e, " : f32"));
              });
    return onRow(plus, "f32", "rsqrt",
                 [](Body &r, const std::vector<std::string> &a) {
                   return r.op("v", cat("math.rsqrt ", a[0], " : f32"));
                 });
  }
  Val divideBy(const Val &sum, int64_t k, const std::string &elt) {
    std::string kc = b.scalar(double(k), elt);
    return onRow(
        sum, elt, "mean", [&](Body &r, const std::vector<std::string> &a) {
          return r.op("v", cat("arith.divf ", a[0], ", ", kc, " : ", elt));
        });
  }

  Val rmsNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    // aten.rms_norm decomposed: pow 2, mean keepdim, + eps, rsqrt, mul,
    // then the weight (1 + weight for Gemma, formed first).
    if (xIn.rank() != 2) // Per-head QK-norms keep the mixed forms.
      return LinalgEmitter::rmsNorm(xIn, spec, idx);
    int64_t k = xIn.last();
    Val x = batched(toF32(xIn));
    Val sq = generic(
        "pow", {{x, full()}}, empty(x.shape, "f32"), identityMap(3), par3(),
        [](Body &r, const std::vector<std::string> &a) {
          std::string two = r.constant("2.0", "f32");
          return r.op("p", cat("math.powf ", a[0], ", ", two, " : f32"));
        });
    Val inv = invStd(divideBy(rowSum(sq), k, "f32"), spec.eps);
    Val y = both(x, expandRow(inv, k, idx % 2), "arith.mulf", "normed");
    Val g =
        weight(spec.prefix + ".weight", {k},
               spec.gain == Gain::Plain ? Init::PlainGain : Init::OnePlusGain);
    if (spec.gain == Gain::Plain)
      // LlamaRMSNorm: weight * hidden.to(input_dtype).
      return unbatched(
          withFeature(castTo(y, xIn.elt), g, "arith.mulf", "gained"));
    std::string one = b.scalar(1.0, "f32");
    g = generic("one_plus", {{toF32(g), "affine_map<(d0) -> (d0)>"}},
                empty(g.shape, "f32"), "affine_map<(d0) -> (d0)>", {"parallel"},
                [&](Body &r, const std::vector<std::string> &a) {
                  return r.op("o",
                              cat("arith.addf ", a[0], ", ", one, " : f32"));
                });
    return castTo(unbatched(withFeature(y, g, "arith.mulf", "gained")),
                  xIn.elt);
  }

  Val layerNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    // aten.native_layer_norm decomposed: mean, x - mean, var (two-pass; in
    // f64 every second norm), + eps, rsqrt, times, weight, bias.
    int64_t k = xIn.last();
    Val x = batched(toF32(xIn));
    Val mu = divideBy(rowSum(x), k, "f32");
    Val c = both(x, expandRow(mu, k, idx % 2), "arith.subf", "centered");
    Val var;
    if (idx % 2) {
      Val sq =
          generic("sq", {{c, full()}}, empty(c.shape, "f64"), identityMap(3),
                  par3(), [](Body &r, const std::vector<std::string> &a) {
                    std::string w =
                        r.op("w", cat("arith.extf ", a[0], " : f32 to f64"));
                    return r.op("m", cat("arith.mulf ", w, ", ", w, " : f64"));
                  });
      Val v64 = divideBy(rowSum(sq), k, "f64");
      var = onRow(
          v64, "f32", "var", [](Body &r, const std::vector<std::string> &a) {
            return r.op("t", cat("arith.truncf ", a[0], " : f64 to f32"));
          });
    } else {
      var = divideBy(rowSum(both(c, c, "arith.mulf", "sq")), k, "f32");
    }
    Val y = both(c, expandRow(invStd(var, spec.eps), k, (idx + 1) % 2),
                 "arith.mulf", "normed");
    if (!spec.affine)
      return castTo(unbatched(y), xIn.elt);
    Val g = weight(spec.prefix + ".weight", {k}, Init::PlainGain);
    Val bias = weight(spec.prefix + ".bias", {k}, Init::Bias);
    y = withFeature(y, toF32(g), "arith.mulf", "gained");
    y = withFeature(y, toF32(bias), "arith.addf", "biased");
    return castTo(unbatched(y), xIn.elt);
  }
};

//===----------------------------------------------------------------------===//
// TOSA flavor: tosa on [1, tokens, hidden]
//===----------------------------------------------------------------------===//

class TosaEmitter : public Emitter {
public:
  using Emitter::Emitter;

  // (--decode is linalg-only; main() refuses it for TOSA.)
  Val embed(const Val &ids) override { return ids; }
  Val writeCache(const Val &, const Val &x) override { return x; }
  Val rope(const Val &x) override { return x; } // main() refuses --rope

  Val castTo(const Val &x, const std::string &elt) override {
    if (x.elt == elt)
      return x;
    return b.op("cast", x.shape, elt,
                cat("tosa.cast ", x.name, " : (", x.type(), ") -> ",
                    tensorType(x.shape, elt)));
  }

  Val add(const Val &x, const Val &y) override { return binary("add", x, y); }

  Val projection(const Val &xIn, const std::string &name, int64_t n,
                 bool bias) override {
    Val x = castTo(xIn, cfg.elt());
    int64_t k = x.last(), t = x.shape[1];
    Val w3;
    // K x N reshaped to [1, K, N]; PyTorch's N x K transposed then
    // reshaped, or reshaped then transposed.
    switch (projIndex++ % 3) {
    case 0:
      w3 = reshape(weight(name + ".weight", {k, n}, Init::Matrix, k, true),
                   {1, k, n});
      break;
    case 1:
      w3 = reshape(
          transpose(weight(name + ".weight", {n, k}, Init::Matrix, k), {1, 0}),
          {1, k, n});
      break;
    default:
      w3 = transpose(
          reshape(weight(name + ".weight", {n, k}, Init::Matrix, k), {1, n, k}),
          {0, 2, 1});
      break;
    }
    Val y = matmul(x, w3, {1, t, n});
    y = castTo(y, cfg.elt());
    if (!bias)
      return y;
    Val bv = reshape(weight(name + ".bias", {n}, Init::Bias), {1, 1, n});
    return binary("add", y, bv);
  }

  Val attention(const Val &q, const Val &k, const Val &v, const NormSpec *qNorm,
                const NormSpec *kNorm) override {
    int64_t t = cfg.tokens, h = cfg.heads, d = cfg.headDim();
    b.comment(cat("attention: ", h, " heads of ", d, ", causal"));
    auto split = [&](const Val &x, const NormSpec *spec) {
      Val s = reshape(x, {t, h, d});
      return toF32(spec ? norm(s, *spec) : s);
    };
    Val qh = transpose(split(q, qNorm), {1, 0, 2}); // [H, T, D]
    Val kt = transpose(split(k, kNorm), {1, 2, 0}); // [H, D, T]
    Val vh = transpose(split(v, nullptr), {1, 0, 2});
    Val s = matmul(qh, kt, {h, t, t});
    s = binary("mul", s, scalarConst(1.0 / std::sqrt(double(d)), 3));
    s = binary("add", s, causalMask());
    // Max-subtracted softmax over the keys.
    Val mx = reduce("reduce_max", s);
    Val e = unary("exp", binary("sub", s, mx));
    Val z = reduce("reduce_sum", e);
    Val p = binary("mul", e, unary("reciprocal", z));
    Val o = transpose(matmul(p, vh, {h, t, d}), {1, 0, 2});
    return reshape(o, {1, t, h * d});
  }

  Val activation(Act act, const Val &gateIn, const Val *up) override {
    Val g = toF32(gateIn);
    Val y;
    if (act == Act::Silu) {
      y = binary("mul", g, unary("sigmoid", g));
    } else {
      // 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
      Val g3 = binary("pow", g, scalarConst(3.0, 3));
      Val in = binary("add", g, binary("mul", g3, scalarConst(0.044715, 3)));
      Val th = unary("tanh",
                     binary("mul", in, scalarConst(std::sqrt(2.0 / kPi), 3)));
      Val half = binary("mul", g, scalarConst(0.5, 3));
      y = binary("mul", half, binary("add", th, scalarConst(1.0, 3)));
    }
    return up ? binary("mul", y, toF32(*up)) : y;
  }

protected:
  Val constant(const Weight &w) override {
    return b.op("w", w.shape, w.elt,
                cat("\"tosa.const\"() {values = dense_resource<", w.name,
                    "> : ", weightType(w), "} : () -> ", weightType(w)));
  }

  /// A splat constant of `rank` unit dimensions (TOSA broadcasts by rank).
  Val scalarConst(double v, int64_t rank, const std::string &elt = "f32") {
    Shape shape(rank, 1);
    std::string type = tensorType(shape, elt);
    return b.cached(cat("splat", fmtFloat(v), type), [&] {
      return b.op("c", shape, elt,
                  cat("\"tosa.const\"() {values = dense<", fmtFloat(v),
                      "> : ", type, "} : () -> ", type));
    });
  }
  Val shift() {
    return b.cached("shift", [&] {
      return b.op("shift", {1}, "i8",
                  "\"tosa.const\"() {values = dense<0> : tensor<1xi8>} : () "
                  "-> tensor<1xi8>");
    });
  }
  Val causalMask() {
    int64_t t = cfg.tokens;
    return b.cached("mask", [&] {
      std::vector<std::string> rows;
      for (int64_t i = 0; i < t; ++i) {
        std::vector<std::string> row;
        for (int64_t j = 0; j < t; ++j)
          row.push_back(j > i ? "-1.0e+09" : "0.0");
        rows.push_back("[" + join(row) + "]");
      }
      std::string type = tensorType({1, t, t}, "f32");
      return b.op("mask", {1, t, t}, "f32",
                  cat("\"tosa.const\"() {values = dense<[[", join(rows),
                      "]]> : ", type, "} : () -> ", type));
    });
  }

  Shape broadcastShape(const Val &x, const Val &y) {
    Shape s = x.shape;
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = std::max(s[i], y.shape[i]);
    return s;
  }
  Val binary(const std::string &op, const Val &x, const Val &y) {
    Shape s = broadcastShape(x, y);
    std::string rt = tensorType(s, x.elt);
    if (op == "mul") {
      Val sh = shift();
      return b.op("mul", s, x.elt,
                  cat("tosa.mul ", x.name, ", ", y.name, ", ", sh.name, " : (",
                      x.type(), ", ", y.type(), ", ", sh.type(), ") -> ", rt));
    }
    return b.op(op, s, x.elt,
                cat("tosa.", op, " ", x.name, ", ", y.name, " : (", x.type(),
                    ", ", y.type(), ") -> ", rt));
  }
  Val unary(const std::string &op, const Val &x) {
    return b.op(
        op, x.shape, x.elt,
        cat("tosa.", op, " ", x.name, " : (", x.type(), ") -> ", x.type()));
  }
  Val reduce(const std::string &op, const Val &x) {
    Shape s = x.shape;
    s.back() = 1;
    return b.op(op == "reduce_sum" ? "sum" : "max", s, x.elt,
                cat("tosa.", op, " ", x.name, " {axis = ", x.rank() - 1,
                    " : i32} : (", x.type(), ") -> ", tensorType(s, x.elt)));
  }
  Val reshape(const Val &x, const Shape &to) {
    std::string rank = std::to_string(to.size());
    Val shape = b.cached("shape" + joinInts(to, "x"), [&] {
      Val s{b.fresh("shape"), {}, "index"};
      b.line(cat(s.name, " = tosa.const_shape {values = dense<[", joinInts(to),
                 "]> : tensor<", rank, "xindex>} : () -> !tosa.shape<", rank,
                 ">"));
      return s;
    });
    return b.op("rs", to, x.elt,
                cat("tosa.reshape ", x.name, ", ", shape.name, " : (", x.type(),
                    ", !tosa.shape<", rank, ">) -> ", tensorType(to, x.elt)));
  }
  Val transpose(const Val &x, const Shape &perm) {
    Shape out;
    for (int64_t p : perm)
      out.push_back(x.shape[p]);
    return b.op("tr", out, x.elt,
                cat("tosa.transpose ", x.name,
                    " {perms = array<i32: ", joinInts(perm), ">} : (", x.type(),
                    ") -> ", tensorType(out, x.elt)));
  }
  /// tosa.matmul with zero points; f32 result (bf16 accumulates in f32).
  Val matmul(const Val &x, const Val &w, const Shape &out) {
    std::string zt = tensorType({1}, x.elt);
    Val zp = b.cached("zp" + x.elt, [&] {
      return b.op("zp", {1}, x.elt,
                  cat("\"tosa.const\"() {values = dense<0.0> : ", zt,
                      "} : () -> ", zt));
    });
    return b.op("mm", out, "f32",
                cat("tosa.matmul ", x.name, ", ", w.name, ", ", zp.name, ", ",
                    zp.name, " : (", x.type(), ", ", w.type(), ", ", zt, ", ",
                    zt, ") -> ", tensorType(out, "f32")));
  }
  /// The [K] vector g reshaped to [1, .., 1, K] to broadcast by rank.
  Val featureVector(const Val &g, int64_t rank) {
    Shape s(rank, 1);
    s.back() = g.last();
    return reshape(g, s);
  }

  /// 1 / sqrt(v) as tosa.rsqrt, or tosa.reciprocal of tosa.pow(v, 0.5).
  Val invSqrt(const Val &v, int form) {
    if (form == 0)
      return unary("rsqrt", v);
    return unary("reciprocal", binary("pow", v, scalarConst(0.5, v.rank())));
  }
  Val square(const Val &x, int form) {
    if (form == 0)
      return binary("mul", x, x);
    return binary("pow", x, scalarConst(2.0, x.rank()));
  }
  /// The mean of the last dimension from its sum: times 1/K, or times the
  /// reciprocal of K (TOSA spells a float divide that way).
  Val mean(const Val &sum, int64_t k, int form) {
    if (form == 0)
      return binary("mul", sum, scalarConst(1.0 / double(k), sum.rank()));
    return binary("mul", sum,
                  unary("reciprocal", scalarConst(double(k), sum.rank())));
  }

  Val rmsNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    int64_t k = xIn.last(), r = xIn.rank();
    Val x = toF32(xIn);
    Val ms = mean(reduce("reduce_sum", square(x, idx % 2)), k, idx / 2 % 2);
    Val ve = binary("add", ms, scalarConst(spec.eps, r));
    Val y = binary("mul", x, invSqrt(ve, (idx + 1) / 2 % 2));
    Val g =
        weight(spec.prefix + ".weight", {k},
               spec.gain == Gain::Plain ? Init::PlainGain : Init::OnePlusGain);
    if (spec.gain == Gain::Plain) {
      // Llama order: round the normalized value, then apply the gain.
      y = castTo(y, xIn.elt);
      return binary("mul", y, featureVector(g, r));
    }
    // Gemma order: (1 + g) formed and applied in f32, rounded after.
    Val onePlus =
        binary("add", scalarConst(1.0, r), toF32(featureVector(g, r)));
    return castTo(binary("mul", y, onePlus), xIn.elt);
  }

  Val layerNorm(const Val &xIn, const NormSpec &spec, int idx) override {
    // bf16: in f32, rounded once at the end (as in the linalg flavor).
    int64_t k = xIn.last(), r = xIn.rank();
    Val x = toF32(xIn);
    int meanForm = idx / 2 % 2;
    Val mu = mean(reduce("reduce_sum", x), k, meanForm);
    // Two-pass variance: center first, then average the squares.
    Val c = binary("sub", x, mu);
    Val var = mean(reduce("reduce_sum", square(c, idx % 2)), k, 1 - meanForm);
    Val ve = binary("add", var, scalarConst(spec.eps, r));
    Val y = binary("mul", c, invSqrt(ve, (idx + 1) / 2 % 2));
    if (!spec.affine)
      return castTo(y, xIn.elt);
    Val g = weight(spec.prefix + ".weight", {k}, Init::PlainGain);
    Val bias = weight(spec.prefix + ".bias", {k}, Init::Bias);
    y = binary("mul", y, toF32(featureVector(g, r)));
    return castTo(binary("add", y, toF32(featureVector(bias, r))), xIn.elt);
  }
};

//===----------------------------------------------------------------------===//
// The decoder stack, shared by both flavors
//===----------------------------------------------------------------------===//

class DecoderWriter {
public:
  DecoderWriter(const Config &cfg, Emitter &e) : cfg(cfg), e(e) {}

  /// --decode: each layer's key and value caches (arguments), and what the
  /// layer makes of them (results).
  std::vector<Val> caches, updatedCaches;

  /// Keys or values of layer i: through its cache under --decode.
  Val cached(int64_t i, int which, const Val &x) {
    if (!cfg.decode)
      return x;
    Val updated = e.writeCache(caches[2 * i + which], x);
    updatedCaches.push_back(updated);
    return updated;
  }

  Val forward(Val x) {
    if (cfg.family == Family::Bert) {
      // Post-norm: the embeddings' LayerNorm opens the stack, each layer's
      // last one closes it (and feeds no projection after the last layer).
      x = e.norm(x, feedingProjections(lnSpec("embeddings.LayerNorm")));
      for (int64_t i = 0; i < cfg.layers; ++i)
        x = bertLayer(i, x, i + 1 == cfg.layers);
      return x;
    }
    for (int64_t i = 0; i < cfg.layers; ++i) {
      x = cfg.family == Family::Gpt2 ? gpt2Layer(i, x) : rmsLayer(i, x);
    }
    if (cfg.family == Family::Gpt2)
      return e.norm(x, lnSpec("ln_f"));
    return e.norm(x, preNormSpec("norm"));
  }

private:
  double rmsEps() const { return cfg.family == Family::Llama ? 1e-5 : 1e-6; }
  Gain gain() const {
    return cfg.family == Family::Gemma ? Gain::OnePlus : Gain::Plain;
  }
  NormSpec rmsSpec(const std::string &prefix, bool qk) const {
    NormSpec s;
    s.prefix = prefix;
    s.gain = gain();
    s.eps = rmsEps();
    s.qk = qk;
    return s;
  }
  NormSpec lnSpec(const std::string &prefix) const {
    NormSpec s;
    s.prefix = prefix;
    s.layerNorm = true;
    return s;
  }
  /// The norm before attention, the MLP and the output: RMSNorm, or
  /// OLMo's LayerNorm without gain or bias.
  NormSpec preNormSpec(const std::string &prefix) const {
    if (cfg.family != Family::Olmo)
      return rmsSpec(prefix, false);
    NormSpec s = lnSpec(prefix);
    s.affine = false;
    return s;
  }
  NormSpec feedingProjections(NormSpec s) const {
    s.projections = true;
    return s;
  }

  /// Llama, Qwen2, Gemma and OLMo layers: pre-norm attention and gated
  /// MLP; Gemma adds post-norms (sandwich) and QK-norms.
  Val rmsLayer(int64_t i, const Val &x) {
    std::string p = cat("layers.", i, ".");
    bool gemma = cfg.family == Family::Gemma;
    bool qkvBias = cfg.family == Family::Qwen2;
    e.comment(cat("layer ", i));
    Val n = e.norm(x, feedingProjections(preNormSpec(p + "input_layernorm")));
    // The query's 1/RMS merges into the logits' scale where the scale stays
    // out of the query weight (deferred without folding) and nothing but
    // linear ops stand between: no bias (qwen2), no QK-norm (gemma), an f32
    // post-scale, the scale in a generic (not TOSA's mul).
    bool unfolded = cfg.weights != WeightMode::Resource ||
                    (cfg.quant != Quant::None && !cfg.kscale);
    // (OLMo has no gain to carry the attention scale into the query
    // weight, whatever the weights.)
    bool olmo = cfg.family == Family::Olmo;
    e.counts.queryMerged +=
        ((unfolded && cfg.family == Family::Llama) || olmo) && !cfg.tosa() &&
        !cfg.bf16();
    Val q = e.projection(n, p + "self_attn.q_proj", cfg.hidden, qkvBias);
    Val k = e.projection(n, p + "self_attn.k_proj", cfg.hidden, qkvBias);
    Val v = e.projection(n, p + "self_attn.v_proj", cfg.hidden, qkvBias);
    if (cfg.rope) {
      q = e.rope(q);
      k = e.rope(k); // Caches hold rotated keys.
    }
    k = cached(i, 0, k);
    v = cached(i, 1, v);
    NormSpec qn = rmsSpec(p + "self_attn.q_norm", true);
    NormSpec kn = rmsSpec(p + "self_attn.k_norm", true);
    Val a = e.attention(q, k, v, gemma ? &qn : nullptr, gemma ? &kn : nullptr);
    Val o = e.projection(a, p + "self_attn.o_proj", cfg.hidden, false);
    if (gemma)
      o = e.norm(o, rmsSpec(p + "post_attention_layernorm", false));
    Val h = e.add(x, o);

    Val m = e.norm(h, feedingProjections(preNormSpec(
                          p + (gemma ? "pre_feedforward_layernorm"
                                     : "post_attention_layernorm"))));
    Val gate = e.projection(m, p + "mlp.gate_proj", cfg.mlp, false);
    Val up = e.projection(m, p + "mlp.up_proj", cfg.mlp, false);
    Val act = e.activation(gemma ? Act::GeluTanh : Act::Silu, gate, &up);
    // (A bf16 LayerNorm's centered post-scale stays where it is.)
    e.counts.ffnMoved += !(olmo && cfg.bf16());
    Val down = e.projection(act, p + "mlp.down_proj", cfg.hidden, false);
    if (gemma)
      down = e.norm(down, rmsSpec(p + "post_feedforward_layernorm", false));
    return e.add(h, down);
  }

  /// Layer i's attention of `x` with biased q, k, v and output projections
  /// named `names` (in that order), keys and values through the cache:
  /// GPT-2's and BERT's, which differ only in where their norms stand.
  Val biasedAttention(int64_t i, const Val &x,
                      const std::array<std::string, 4> &names) {
    Val q = e.projection(x, names[0], cfg.hidden, true);
    Val k = e.projection(x, names[1], cfg.hidden, true);
    Val v = e.projection(x, names[2], cfg.hidden, true);
    k = cached(i, 0, k);
    v = cached(i, 1, v);
    Val a = e.attention(q, k, v, nullptr, nullptr);
    return e.projection(a, names[3], cfg.hidden, true);
  }

  /// GPT-2: pre-LayerNorm attention and GELU MLP, biases everywhere.
  Val gpt2Layer(int64_t i, const Val &x) {
    std::string p = cat("h.", i, ".");
    e.comment(cat("layer ", i));
    Val n = e.norm(x, feedingProjections(lnSpec(p + "ln_1")));
    Val o = biasedAttention(i, n,
                            {p + "attn.q_proj", p + "attn.k_proj",
                             p + "attn.v_proj", p + "attn.c_proj"});
    Val h = e.add(x, o);
    Val m = e.norm(h, feedingProjections(lnSpec(p + "ln_2")));
    Val fc = e.projection(m, p + "mlp.c_fc", cfg.mlp, true);
    Val act = e.activation(Act::GeluTanh, fc, nullptr);
    Val proj = e.projection(act, p + "mlp.c_proj", cfg.hidden, true);
    return e.add(h, proj);
  }

  /// BERT: post-LayerNorm attention and GELU MLP, biases everywhere. Each
  /// norm follows its residual add, and its result is both the next
  /// projections' input and the next residual (fold-gains folds it for the
  /// projections, the residual keeps the gained norm). The attention is the
  /// generator's causal one: flashnorm reads the norms, not the mask.
  Val bertLayer(int64_t i, const Val &x, bool last) {
    std::string p = cat("encoder.layer.", i, ".");
    e.comment(cat("layer ", i));
    Val o = biasedAttention(
        i, x,
        {p + "attention.self.query", p + "attention.self.key",
         p + "attention.self.value", p + "attention.output.dense"});
    Val h =
        e.norm(e.add(x, o),
               feedingProjections(lnSpec(p + "attention.output.LayerNorm")));
    Val fc = e.projection(h, p + "intermediate.dense", cfg.mlp, true);
    Val act = e.activation(Act::GeluTanh, fc, nullptr);
    Val out = e.projection(act, p + "output.dense", cfg.hidden, true);
    NormSpec closing = lnSpec(p + "output.LayerNorm");
    return e.norm(e.add(h, out), last ? closing : feedingProjections(closing));
  }

  const Config &cfg;
  Emitter &e;
};

//===----------------------------------------------------------------------===//
// Weight values and the resource blobs
//===----------------------------------------------------------------------===//

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001B3ull;
  return h;
}

/// Element `index` (row-major in the logical N x K layout for matrices) of a
/// weight: counter-based, so any layout can be written in any order.
float weightValue(uint64_t key, const Weight &w, uint64_t index) {
  double u = double(splitmix64(key + index) >> 40) * 0x1.0p-24; // [0, 1)
  switch (w.init) {
  case Init::Matrix: {
    double bound = 1.0 / std::sqrt(double(w.fanIn));
    return float((2 * u - 1) * bound);
  }
  case Init::PlainGain:
    return float(0.5 + u);
  case Init::OnePlusGain:
    return float(u - 0.5);
  case Init::Bias:
    return float((2 * u - 1) * 0.1);
  case Init::QInt8:
    return float(std::lround((2 * u - 1) * 127));
  case Init::QPacked4:
    return float(std::floor(u * 256)); // Two nibbles, 0..15 each.
  case Init::QScale8:
  case Init::QScale4: {
    // Dequantized values within about +-1/sqrt(fan-in), as for Matrix.
    double range = w.init == Init::QScale8 ? 127.0 : 8.0;
    return float((0.75 + 0.5 * u) / std::sqrt(double(w.fanIn)) / range);
  }
  case Init::QZero:
    return float(7 + std::floor(u * 3)); // 7, 8 or 9.
  case Init::KScale:
    return float(0.5 + u);
  }
  return 0.0f;
}

uint16_t toBF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7FFF + ((bits >> 16) & 1); // round to nearest even
  return uint16_t(bits >> 16);
}

/// Buffered output; blobs are hex-encoded straight into the buffer, a row at
/// a time (a 32-layer hidden-2048 model is gigabytes of hex).
class Out {
public:
  explicit Out(std::FILE *f) : f(f), buf(kChunk) {
    for (int i = 0; i < 256; ++i) {
      hex[2 * i] = "0123456789ABCDEF"[i >> 4];
      hex[2 * i + 1] = "0123456789ABCDEF"[i & 15];
    }
  }
  ~Out() { flush(); }
  void write(const std::string &s) {
    std::memcpy(reserve(s.size()), s.data(), s.size());
  }
  /// Room for n bytes, written by the caller.
  char *reserve(size_t n) {
    if (used + n > buf.size()) {
      flush();
      if (n > buf.size())
        buf.resize(n);
    }
    char *p = buf.data() + used;
    used += n;
    return p;
  }
  /// The hex digits of `bytes` little-endian bytes of `v` at p.
  char *hexLE(char *p, uint32_t v, int bytes) const {
    for (int i = 0; i < bytes; ++i, v >>= 8, p += 2)
      std::memcpy(p, hex + 2 * (v & 0xFF), 2);
    return p;
  }
  void flush() {
    if (used && std::fwrite(buf.data(), 1, used, f) != used)
      failed = true;
    used = 0;
  }
  bool failed = false;

private:
  static constexpr size_t kChunk = 1 << 22;
  std::FILE *f;
  std::vector<char> buf;
  size_t used = 0;
  char hex[512];
};

/// Calls `row(bytes, n)` for each stored row of `w`: `n` little-endian
/// bytes of the weight in its stored layout, one row at a time.
void forEachStoredRow(uint64_t seed, const Weight &w,
                      const std::function<void(const char *, size_t)> &row) {
  uint64_t key = splitmix64(seed) ^ fnv1a(w.name);
  int bytes = w.elt == "i8" ? 1 : w.elt == "bf16" ? 2 : 4;
  // Logical n x k (PyTorch); stored k x n when kxn. Vectors are one row.
  int64_t n = w.shape.size() == 2 ? (w.kxn ? w.shape[1] : w.shape[0]) : 1;
  int64_t k = w.shape.back();
  if (w.shape.size() == 2 && w.kxn)
    k = w.shape[0];
  int64_t outer = w.kxn ? k : n, inner = w.kxn ? n : k;
  std::vector<char> buffer(size_t(inner) * bytes);
  for (int64_t a = 0; a < outer; ++a) {
    char *p = buffer.data();
    for (int64_t c = 0; c < inner; ++c, p += bytes) {
      uint64_t logical = w.kxn ? uint64_t(c) * k + a : uint64_t(a) * k + c;
      float v = weightValue(key, w, logical);
      if (bytes == 1) {
        // Integers (QInt8 in [-127, 127], QPacked4 in [0, 255]).
        *p = char(uint8_t(int(v) & 0xFF));
      } else if (bytes == 2) {
        uint16_t b = toBF16(v);
        std::memcpy(p, &b, 2); // Little-endian hosts only (x86, Arm).
      } else {
        std::memcpy(p, &v, 4);
      }
    }
    row(buffer.data(), buffer.size());
  }
}

/// `"0x04000000<little-endian bytes>"`: alignment 4, then the stored layout.
void writeBlob(Out &out, uint64_t seed, const Weight &w) {
  out.write("\"0x04000000");
  forEachStoredRow(seed, w, [&](const char *bytes, size_t n) {
    char *p = out.reserve(n * 2);
    for (size_t i = 0; i < n; ++i)
      p = out.hexLE(p, static_cast<uint8_t>(bytes[i]), 1);
  });
  out.write("\"");
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

/// @main under --decode: token ids, a position and caches, the call, the
/// printout of the hidden state and every updated cache.
std::string writeDecodeMain(const Config &cfg, const Val &y,
                            const std::vector<Val> &caches,
                            const std::vector<Weight> &weights,
                            int64_t &counter) {
  FuncBuilder b(counter);
  std::vector<std::string> ids;
  for (int64_t t = 0; t < cfg.tokens; ++t)
    ids.push_back(std::to_string((7 * t + 3) % cfg.vocab));
  std::string idsType = tensorType({cfg.tokens}, "i64");
  b.line(cat("%ids = arith.constant dense<[", join(ids), "]> : ", idsType));
  // The last position the new tokens fit at.
  b.line(cat("%pos = arith.constant ", cfg.cache - cfg.tokens, " : i64"));
  std::vector<std::string> args{"%ids", "%pos"}, types{idsType, "i64"};
  if (cfg.weights == WeightMode::Args) {
    b.comment("the weights of @forward, in its argument order");
    for (const Weight &w : weights) {
      std::string n = b.fresh("w");
      b.line(cat(n, " = arith.constant dense_resource<", w.name,
                 "> : ", weightType(w)));
      args.push_back(n);
      types.push_back(weightType(w));
    }
  }
  b.comment("caches: earlier keys and values, 0.05 and -0.05");
  for (const Val &c : caches) {
    std::string n = b.fresh("c");
    bool key = c.name.find("cache_k") != std::string::npos;
    b.line(cat(n, " = arith.constant dense<", key ? "0.05" : "-0.05",
               "> : ", c.type()));
    args.push_back(n);
    types.push_back(c.type());
  }
  std::vector<std::string> results, resultTypes{y.type()};
  for (const Val &c : caches)
    resultTypes.push_back(c.type());
  std::string res = b.fresh("r");
  b.line(cat(res, ":", resultTypes.size(), " = func.call @forward(", join(args),
             ") : (", join(types), ") -> (", join(resultTypes), ")"));
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    std::string r = cat(res, "#", i), type = resultTypes[i];
    if (cfg.bf16()) {
      std::string wide =
          tensorType(i == 0 ? y.shape : caches[i - 1].shape, "f32");
      std::string f = b.fresh("f");
      b.line(cat(f, " = arith.extf ", r, " : ", type, " to ", wide));
      r = f;
      type = wide;
    }
    std::string u = b.fresh("u");
    b.line(cat(u, " = tensor.cast ", r, " : ", type, " to tensor<*xf32>"));
    b.line(cat("func.call @printMemrefF32(", u, ") : (tensor<*xf32>) -> ()"));
  }
  b.line("return");
  return "func.func @main() {\n" + b.text() + "}\n";
}

/// @main: a deterministic input, the call, the printout.
std::string writeMain(const Config &cfg, const Val &x, const Val &y,
                      const std::vector<Weight> &weights, int64_t &counter) {
  FuncBuilder b(counter);
  int64_t r = x.rank();
  Val e{b.fresh("empty"), x.shape, "f32"};
  b.line(cat(e.name, " = tensor.empty() : ", e.type()));
  // x[.., t, i] = sin(0.37 t + 0.11 i) + 0.01 i
  std::string in = b.fresh("x");
  std::string region;
  Body body(b, region);
  auto asF32 = [&](int dim) {
    std::string idx = body.op("idx", cat("linalg.index ", dim, " : index"));
    std::string i32 =
        body.op("i", cat("arith.index_cast ", idx, " : index to i32"));
    return body.op("f", cat("arith.sitofp ", i32, " : i32 to f32"));
  };
  std::string t = asF32(int(r - 2)), i = asF32(int(r - 1));
  std::string a = body.constant("0.37", "f32");
  std::string c = body.constant("0.11", "f32");
  std::string d = body.constant("0.01", "f32");
  std::string ta = body.op("ta", cat("arith.mulf ", t, ", ", a, " : f32"));
  std::string ic = body.op("ic", cat("arith.mulf ", i, ", ", c, " : f32"));
  std::string arg = body.op("arg", cat("arith.addf ", ta, ", ", ic, " : f32"));
  std::string s = body.op("s", cat("math.sin ", arg, " : f32"));
  std::string id = body.op("id", cat("arith.mulf ", i, ", ", d, " : f32"));
  std::string v = body.op("v", cat("arith.addf ", s, ", ", id, " : f32"));
  std::vector<std::string> iters(r, "\"parallel\"");
  std::string o = b.fresh("o");
  b.line(cat(in, " = linalg.generic {indexing_maps = [", identityMap(r),
             "], iterator_types = [", join(iters), "]} outs(", e.name, " : ",
             e.type(), ") {\n  ^bb0(", o, ": f32):\n", region,
             "    linalg.yield ", v, " : f32\n  } -> ", e.type()));
  std::string xin = in;
  if (cfg.bf16()) {
    xin = b.fresh("xb");
    b.line(cat(xin, " = arith.truncf ", in, " : ", e.type(), " to ", x.type()));
  }
  std::vector<std::string> args{xin}, types{x.type()};
  if (cfg.weights == WeightMode::Args) {
    b.comment("the weights of @forward, in its argument order");
    for (const Weight &w : weights) {
      std::string n = b.fresh("w");
      std::string type = weightType(w);
      if (cfg.tosa())
        b.line(cat(n, " = \"tosa.const\"() {values = dense_resource<", w.name,
                   "> : ", type, "} : () -> ", type));
      else
        b.line(
            cat(n, " = arith.constant dense_resource<", w.name, "> : ", type));
      args.push_back(n);
      types.push_back(type);
    }
  }
  if (cfg.calls > 1) {
    std::string lb = b.fresh("c"), ub = b.fresh("c"), step = b.fresh("c");
    b.line(cat(lb, " = arith.constant 0 : index"));
    b.line(cat(ub, " = arith.constant ", cfg.calls, " : index"));
    b.line(cat(step, " = arith.constant 1 : index"));
    b.line(cat("scf.for ", b.fresh("call"), " = ", lb, " to ", ub, " step ",
               step, " {"));
  }
  std::string res = b.fresh("y");
  b.line(cat(res, " = func.call @forward(", join(args), ") : (", join(types),
             ") -> ", y.type()));
  std::string f32 = res;
  std::string f32Type = tensorType(y.shape, "f32");
  if (y.elt != "f32") {
    f32 = b.fresh("yf");
    b.line(cat(f32, " = arith.extf ", res, " : ", y.type(), " to ", f32Type));
  }
  std::string u = b.fresh("u");
  b.line(cat(u, " = tensor.cast ", f32, " : ", f32Type, " to tensor<*xf32>"));
  b.line(cat("func.call @printMemrefF32(", u, ") : (tensor<*xf32>) -> ()"));
  if (cfg.calls > 1)
    b.line("}");
  b.line("return");
  return "func.func @main() {\n" + b.text() + "}\n";
}

const char *weightModeName(WeightMode mode) {
  static const char *names[] = {"resource", "args", "checkpoint"};
  return names[int(mode)];
}

std::string commandLine(const Config &cfg) {
  static const char *flavors[] = {"linalg", "tosa"};
  return cat(
      "flashnorm-gen --family=", familyName(cfg.family),
      " --flavor=", flavors[int(cfg.flavor)],
      cfg.style == Style::TorchMlir ? " --style=torch-mlir" : "",
      cfg.decode ? cat(" --decode --cache=", cfg.cache, " --vocab=", cfg.vocab,
                       cfg.cacheWrite == CacheWrite::StoreLoop
                           ? " --cache-write=store-loop"
                           : "")
                 : "",
      cfg.rope ? " --rope" : "",
      cfg.calls > 1 ? cat(" --calls=", cfg.calls) : "",
      " --hidden=", cfg.hidden, " --layers=", cfg.layers,
      " --tokens=", cfg.tokens, " --heads=", cfg.heads, " --mlp=", cfg.mlp,
      " --weights=", weightModeName(cfg.weights), " --dtype=", cfg.elt(),
      cfg.quant == Quant::None   ? ""
      : cfg.quant == Quant::Int8 ? " --quant=int8"
                                 : " --quant=int4",
      cfg.kscale ? " --quant-kscale" : "", " --seed=", cfg.seed);
}

int writeModule(const Config &cfg, std::FILE *f, std::vector<Weight> &weights) {
  int64_t counter = 0;
  FuncBuilder fb(counter);
  std::unique_ptr<Emitter> emitter;
  if (cfg.tosa())
    emitter = std::make_unique<TosaEmitter>(cfg, fb, weights);
  else if (cfg.style == Style::TorchMlir)
    emitter = std::make_unique<TorchMlirEmitter>(cfg, fb, weights);
  else
    emitter = std::make_unique<LinalgEmitter>(cfg, fb, weights);

  Shape act = cfg.tosa() ? Shape{1, cfg.tokens, cfg.hidden}
                         : Shape{cfg.tokens, cfg.hidden};
  Val x{"%x", act, cfg.elt()};
  DecoderWriter writer(cfg, *emitter);
  std::vector<std::string> params{"%x: " + x.type()};
  if (cfg.decode) {
    Val ids{"%ids", {cfg.tokens}, "i64"};
    params = {"%ids: " + ids.type(), "%pos: i64"};
    fb.line("%pos_index = arith.index_cast %pos : i64 to index");
    emitter->position = "%pos_index";
    for (int64_t i = 0; i < cfg.layers; ++i)
      for (const char *kv : {"k", "v"})
        writer.caches.push_back(Val{
            cat("%cache_", kv, "_", i), {cfg.cache, cfg.hidden}, cfg.elt()});
    x = emitter->embed(ids);
  }
  Val y = writer.forward(x);
  std::vector<std::string> results{y.name}, resultTypes{y.type()};
  for (const Val &c : writer.updatedCaches) {
    results.push_back(c.name);
    resultTypes.push_back(c.type());
  }
  fb.line(cat("return ", join(results), " : ", join(resultTypes)));
  const NormCounts &n = emitter->counts;

  Out out(f);
  out.write(cat(
      "// Generated by ", commandLine(cfg), "\n// A ", cfg.layers, "-layer ",
      familyTitle(cfg.family), "-style decoder stack (hidden ", cfg.hidden,
      ", ", cfg.heads, " heads of ", cfg.headDim(), ", MLP ", cfg.mlp, ", ",
      cfg.tokens, " tokens, ", cfg.elt(), ")\n// in the ",
      cfg.tosa() ? "tosa" : "linalg", " flavor; weights ",
      cfg.weights == WeightMode::Args
          ? "are arguments of @forward (@main holds them)"
      : cfg.weights == WeightMode::Checkpoint
          ? "are extern ml_program globals (their values in the checkpoint)"
          : "are dense_resource constants",
      ".\n// Norms are spelled out the way frontends write them; @main runs "
      "@forward\n// on sin(0.37 t + 0.11 i) + 0.01 i and prints the result.\n",
      "// flashnorm-gen: family=", familyName(cfg.family),
      " flavor=", cfg.tosa() ? "tosa" : "linalg",
      cfg.style == Style::TorchMlir ? " style=torch-mlir" : "",
      " layers=", cfg.layers, " rms_norms=", n.rms, " layer_norms=", n.layer,
      " gains=", n.gains, " qk_norms=", n.qk, " deferrable=", n.deferrable,
      " foldable=", n.foldable, " deferred_unfolded=", n.deferredUnfolded,
      " ffn_moved=", n.ffnMoved, " query_merged=", n.queryMerged, "\n\n"));

  if (cfg.weights == WeightMode::Args) {
    out.write(cfg.decode ? "// @forward arguments after %ids and %pos, in "
                           "order (then the KV caches):\n"
                         : "// @forward arguments after %x, in order:\n");
    for (size_t i = 0; i < weights.size(); ++i) {
      out.write(cat("//   ", i + 1, ": ", weights[i].name, " : ",
                    weightType(weights[i]), "\n"));
      params.push_back(cat("%", weights[i].name, ": ", weightType(weights[i])));
    }
  }
  for (const Val &c : writer.caches)
    params.push_back(c.name + ": " + c.type());
  if (cfg.weights == WeightMode::Checkpoint) {
    for (const Weight &w : weights)
      out.write(cat("ml_program.global private @\"", w.name,
                    "\"(#ml_program.extern : ", weightType(w),
                    ") : ", weightType(w), "\n"));
    out.write("\n");
  }
  out.write(
      cat("func.func @forward(", join(params, ",\n    "), ") -> ",
          resultTypes.size() == 1 ? y.type() : "(" + join(resultTypes) + ")",
          " {\n"));
  out.write(fb.text());
  out.write("}\n\n");
  out.write(cfg.decode
                ? writeDecodeMain(cfg, y, writer.caches, weights, counter)
                : writeMain(cfg, x, y, weights, counter));
  out.write("func.func private @printMemrefF32(tensor<*xf32>)\n");
  if (cfg.weights == WeightMode::Checkpoint) {
    out.flush();
    return out.failed ? 1 : 0;
  }

  out.write("\n{-#\n  dialect_resources: {\n    builtin: {\n");
  for (size_t i = 0; i < weights.size(); ++i) {
    out.write(cat("      ", weights[i].name, ": "));
    writeBlob(out, cfg.seed, weights[i]);
    out.write(i + 1 < weights.size() ? ",\n" : "\n");
  }
  out.write("    }\n  }\n#-}\n");
  out.flush();
  return out.failed ? 1 : 0;
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "flashnorm-gen: error: %s\n", msg.c_str());
  return 1;
}

/// The weights of --weights=checkpoint as safetensors: one file at `path`,
/// or `shards` files `<path without .safetensors>-0000i-of-0000N.safetensors`
/// (consecutive weights, about equal sizes) with the index file
/// `<path>.index.json` that sharded Hugging Face checkpoints carry.
int writeCheckpoint(const Config &cfg, const std::vector<Weight> &weights,
                    std::string path, unsigned shards) {
  namespace st = mlir::flashnorm::safetensors;
  auto bytesOf = [](const Weight &w) {
    uint64_t n = w.elt == "bf16" ? 2 : 4;
    for (int64_t d : w.shape)
      n *= uint64_t(d);
    return n;
  };
  uint64_t total = 0;
  for (const Weight &w : weights)
    total += bytesOf(w);
  shards = std::max<unsigned>(1, std::min<unsigned>(shards, weights.size()));
  std::string base = path;
  if (base.size() > 12 && base.substr(base.size() - 12) == ".safetensors")
    base.resize(base.size() - 12);
  std::vector<std::vector<const Weight *>> parts(shards);
  uint64_t done = 0;
  for (const Weight &w : weights) {
    size_t shard = std::min<size_t>(
        shards - 1, done * shards / std::max<uint64_t>(total, 1));
    parts[shard].push_back(&w);
    done += bytesOf(w);
  }
  std::map<std::string, std::string> weightMap;
  for (unsigned i = 0; i < shards; ++i) {
    char suffix[64];
    std::snprintf(suffix, sizeof(suffix), "-%05u-of-%05u.safetensors", i + 1,
                  shards);
    std::string file = shards == 1 ? path : base + suffix;
    std::vector<st::OutputTensor> tensors;
    std::map<std::string, const Weight *> byName;
    for (const Weight *w : parts[i]) {
      st::OutputTensor t;
      t.name = w->name;
      t.dtype = w->elt == "bf16" ? "BF16" : "F32";
      t.shape.assign(w->shape.begin(), w->shape.end());
      t.size = bytesOf(*w);
      tensors.push_back(t);
      byName[w->name] = w;
      weightMap[w->name] = file.substr(file.find_last_of('/') + 1);
    }
    std::vector<uint64_t> offsets;
    std::string header = st::layOut(
        tensors, {{"format", "pt"}, {"generator", commandLine(cfg)}}, offsets);
    std::FILE *f = std::fopen(file.c_str(), "wb");
    if (!f)
      return fail(cat("cannot open '", file, "': ", std::strerror(errno)));
    bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
    for (const st::OutputTensor &t : tensors)
      forEachStoredRow(cfg.seed, *byName[t.name],
                       [&](const char *bytes, size_t n) {
                         ok &= std::fwrite(bytes, 1, n, f) == n;
                       });
    ok &= std::fclose(f) == 0;
    if (!ok) {
      std::remove(file.c_str());
      return fail(cat("writing '", file, "' failed"));
    }
  }
  if (shards == 1)
    return 0;
  std::string index = base + ".safetensors.index.json";
  std::FILE *f = std::fopen(index.c_str(), "wb");
  if (!f)
    return fail(cat("cannot open '", index, "': ", std::strerror(errno)));
  std::string text = cat("{\n  \"metadata\": {\"total_size\": ", total,
                         "},\n  \"weight_map\": {\n");
  size_t n = 0;
  for (const auto &[name, file] : weightMap)
    text += cat("    \"", name, "\": \"", file, "\"",
                ++n < weightMap.size() ? ",\n" : "\n");
  text += "  }\n}\n";
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok)
    return fail(cat("writing '", index, "' failed"));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(genCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "flashnorm-gen: writes a transformer decoder stack as frontend-style "
      "MLIR\n");
  Config cfg{familyOpt, flavorOpt, styleOpt,   hiddenOpt, layersOpt, tokensOpt,
             headsOpt,  mlpOpt,    weightsOpt, dtypeOpt,  seedOpt};
  cfg.decode = decodeOpt;
  cfg.quant = quantOpt;
  cfg.kscale = quantKScaleOpt;
  cfg.cache = cacheOpt;
  cfg.cacheWrite = cacheWriteOpt;
  cfg.rope = ropeOpt;
  cfg.vocab = vocabOpt;
  cfg.calls = callsOpt;
  if (cfg.calls < 1 || (cfg.calls > 1 && cfg.decode))
    return fail("--calls must be positive, and 1 with --decode");
  if (cfg.decode && cfg.tosa())
    return fail("--decode writes the linalg flavor");
  if (!cfg.decode && cacheWriteOpt.getNumOccurrences())
    return fail("--cache-write needs --decode");
  if (cfg.decode && (cfg.cache <= cfg.tokens || cfg.vocab <= 0))
    return fail("--decode needs --cache above --tokens (room for the "
                "position) and a positive --vocab");
  if (cfg.hidden <= 0 || cfg.layers <= 0 || cfg.tokens <= 0 || cfg.heads <= 0 ||
      cfg.mlp < 0)
    return fail("--hidden, --layers, --tokens and --heads must be positive, "
                "--mlp must not be negative");
  if (cfg.hidden % cfg.heads)
    return fail(cat("--hidden=", cfg.hidden,
                    " is not divisible by --heads=", cfg.heads));
  if (cfg.rope &&
      (cfg.tosa() ||
       (cfg.family != Family::Llama && cfg.family != Family::Qwen2) ||
       cfg.headDim() % 2))
    return fail("--rope writes llama and qwen2 in the linalg flavor, with "
                "an even head dimension");
  // Sizes whose products (a tensor's elements, its bytes) stay far from
  // overflowing: 2^24 per dimension, 2^36 elements per tensor.
  constexpr int64_t kMaxSize = int64_t(1) << 24, kMaxElements = int64_t(1)
                                                                << 36;
  for (int64_t size : {cfg.hidden, cfg.mlp, cfg.layers, cfg.tokens, cfg.heads,
                       cfg.cache, cfg.vocab, cfg.calls})
    if (size > kMaxSize)
      return fail(cat("a size of ", size, " is past the largest, ", kMaxSize));
  if (cfg.mlp == 0)
    cfg.mlp = (2 * cfg.hidden + 7) / 8 * 8;
  for (int64_t rows : {cfg.hidden, cfg.mlp, cfg.tokens, cfg.cache, cfg.vocab})
    if (rows * std::max(cfg.hidden, cfg.mlp) > kMaxElements)
      return fail(cat("a tensor of ", rows, " x ",
                      std::max(cfg.hidden, cfg.mlp),
                      " elements is past the largest, ", kMaxElements));
  if (cfg.style == Style::TorchMlir && cfg.tosa())
    return fail("--style=torch-mlir writes the linalg flavor");
  if (cfg.quant != Quant::None &&
      (cfg.tosa() || cfg.family == Family::Gpt2 || cfg.family == Family::Olmo ||
       cfg.family == Family::Bert || cfg.weights == WeightMode::Checkpoint))
    return fail("--quant writes the linalg flavor of llama, qwen2 and gemma "
                "with resource or argument weights");
  if (cfg.kscale && cfg.quant != Quant::Int8)
    return fail("--quant-kscale needs --quant=int8");
  if (cfg.quant == Quant::Int4 && (cfg.hidden % 2 || cfg.mlp % 2))
    return fail("--quant=int4 packs two values per byte: --hidden and --mlp "
                "must be even");

  std::string checkpoint = checkpointOpt;
  if (cfg.weights == WeightMode::Checkpoint && checkpoint.empty()) {
    if (outputOpt == "-")
      return fail("--weights=checkpoint writing to stdout needs --checkpoint");
    checkpoint = outputOpt;
    if (checkpoint.size() > 5 &&
        checkpoint.substr(checkpoint.size() - 5) == ".mlir")
      checkpoint.resize(checkpoint.size() - 5);
    checkpoint += ".safetensors";
  }
  if (cfg.weights != WeightMode::Checkpoint &&
      (!checkpointOpt.empty() || shardsOpt != 1))
    return fail("--checkpoint and --shards need --weights=checkpoint");
  if (shardsOpt == 0)
    return fail("--shards must be positive");

  std::FILE *f = stdout;
  if (outputOpt != "-") {
    f = std::fopen(outputOpt.c_str(), "wb");
    if (!f)
      return fail(cat("cannot open '", outputOpt, "': ", std::strerror(errno)));
  }
  std::vector<Weight> weights;
  int rc = writeModule(cfg, f, weights);
  if (f != stdout && std::fclose(f) != 0)
    rc = 1;
  if (rc)
    return fail(cat("writing '", outputOpt, "' failed"));
  if (cfg.weights == WeightMode::Checkpoint)
    return writeCheckpoint(cfg, weights, checkpoint, shardsOpt);
  return 0;
}
