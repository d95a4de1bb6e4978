//===- PostScaleFusion.cpp - Post-scales inside their consumer's kernel ---===//
//
// A post-scale whose result only feeds one element-wise op over the same
// rows (a bias add, a residual add, a SwiGLU gate) is computed inside that
// op's kernel instead of a kernel of its own: one generic reads the raw
// product and the scale and applies both bodies. On buffers an earlier op
// may read the same buffer (reused, or carried around a loop), so only a
// consumer after the post-scale, in its block, with the post-scale's inputs
// unchanged in between, takes it.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "flashnorm/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::flashnorm;
using namespace mlir::flashnorm::kernels;

FailureOr<PostScaleFusionPlan>
kernels::planPostScaleFusion(linalg::GenericOp post, std::string &why) {
  auto fail = [&](const Twine &msg) {
    why = msg.str();
    return failure();
  };
  if (!isElementwise(post) || usesOutput(post))
    return fail("it is not element-wise");
  Value result = post.getDpsInitOperand(0)->get();
  linalg::GenericOp consumer;
  OpOperand *use = nullptr;
  // One element-wise reader, which may also write its result in place
  // (then later readers see the consumer's result, not the post-scale's).
  auto writesInPlace = [&] {
    return consumer && consumer.getDpsInitOperand(0)->get() == result;
  };
  SmallVector<Operation *> laterReaders;
  for (OpOperand &u : result.getUses()) {
    if (u.getOwner() == post)
      continue;
    auto user = dyn_cast<linalg::GenericOp>(u.getOwner());
    if (!user || (consumer && user != consumer)) {
      laterReaders.push_back(u.getOwner());
      continue;
    }
    consumer = user;
    if (!user.isDpsInput(&u))
      continue;
    if (use)
      return fail("its consumer reads it twice");
    use = &u;
  }
  if (!use)
    return fail("nothing consumes it element-wise");
  for (Operation *reader : laterReaders)
    if (!writesInPlace() || reader->getBlock() != consumer->getBlock() ||
        !consumer->isBeforeInBlock(reader))
      return fail("its result has other users");
  if (consumer->getBlock() != post->getBlock() ||
      !post->isBeforeInBlock(consumer))
    return fail("its consumer does not come after it");
  if (!isElementwise(consumer) || usesOutput(consumer) ||
      consumer.getNumLoops() != post.getNumLoops() ||
      !consumer.getMatchingIndexingMap(use).isIdentity())
    return fail("its consumer is not element-wise over the same rows");
  // The post-scale's inputs must hold the same values at the consumer.
  for (Value input : post.getDpsInputs())
    if (writtenBetween(input, post, consumer))
      return fail("its inputs are written before its consumer runs");
  return PostScaleFusionPlan{post, consumer, use};
}

void kernels::buildPostScaleFusion(const PostScaleFusionPlan &plan) {
  linalg::GenericOp post = plan.post, consumer = plan.consumer;
  OpOperand *use = plan.use;
  // ins: the post-scale's, then the consumer's but the fused one.
  SmallVector<Value> ins(post.getDpsInputs());
  SmallVector<AffineMap> maps;
  for (OpOperand *in : post.getDpsInputOperands())
    maps.push_back(post.getMatchingIndexingMap(in));
  for (OpOperand *in : consumer.getDpsInputOperands())
    if (in != use) {
      ins.push_back(in->get());
      maps.push_back(consumer.getMatchingIndexingMap(in));
    }
  maps.push_back(
      consumer.getMatchingIndexingMap(consumer.getDpsInitOperand(0)));
  OpBuilder b(consumer);
  auto merged = linalg::GenericOp::create(
      b, consumer.getLoc(), TypeRange{}, ins, consumer.getDpsInits(), maps,
      consumer.getIteratorTypesArray(),
      [&](OpBuilder &nb, Location loc, ValueRange args) {
        unsigned nPost = post.getNumDpsInputs();
        SmallVector<Value> postArgs(args.take_front(nPost));
        postArgs.push_back(args.back()); // unused (checked)
        SmallVector<Value> ivs;
        for (unsigned d = 0; d < post.getNumLoops(); ++d)
          ivs.push_back(linalg::IndexOp::create(nb, loc, d));
        Value scaled = inlineBody(nb, post, postArgs, ivs)[0];
        SmallVector<Value> consumerArgs;
        unsigned next = nPost;
        for (OpOperand *in : consumer.getDpsInputOperands())
          consumerArgs.push_back(in == use ? scaled : args[next++]);
        consumerArgs.push_back(args.back());
        linalg::YieldOp::create(nb, loc,
                                inlineBody(nb, consumer, consumerArgs, ivs));
      });
  merged->setAttr(kAsyncRoleAttr, b.getStringAttr("post_fused"));
  consumer->erase();
  post->erase();
}
