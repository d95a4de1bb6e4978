//===- InitAll.h - Register the flashnorm dialect and passes ----*- C++ -*-===//
//
// What a tool calls to know everything flashnorm defines: flashnorm-opt,
// the plugin, and other compilers that link the passes.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHNORM_INITALL_H
#define FLASHNORM_INITALL_H

namespace mlir {
class DialectRegistry;
namespace flashnorm {

/// Adds the flashnorm dialect (and the dialects its passes create) to
/// `registry`.
void registerAllDialects(DialectRegistry &registry);

/// Registers every flashnorm pass and pipeline with the global registry, so
/// that they parse from textual pipelines and command lines.
void registerAllPasses();

} // namespace flashnorm
} // namespace mlir

#endif
