//===- AsyncHazardsTest.cpp - the mt3k async-hazard analysis --------------===//
//
// The analysis on small programs: which accesses conflict, the hazard kinds,
// the first conflicting operation per asynchronous operation, tokens never
// waited on, and whether a wait comes before an operation.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Analysis/AsyncHazards.h"
#include "MT3K/MT3KDialect.h"
#include "MT3K/MT3KOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace ratrain::mt3k;

namespace {
constexpr const char *kMachine =
    "mt3k.machine \"m\" ddr 1048576 gsm 65536 am 4096 cores 4 "
    "dma_channels 2 alignment 64\n"
    "mt3k.group @pp pipeline size 2\n";

class AsyncHazardsTest : public ::testing::Test {
protected:
  AsyncHazardsTest() { context.loadDialect<MT3KDialect>(); }

  /// Parses a module with the machine, @pp and `program`.
  ProgramOp parse(const std::string &program) {
    module = parseSourceString<ModuleOp>(kMachine + program, &context);
    if (!module)
      return {};
    return *module->getOps<ProgramOp>().begin();
  }

  /// The operations of `program` with the given name, in order.
  static SmallVector<Operation *> opsNamed(ProgramOp program, StringRef name) {
    SmallVector<Operation *> ops;
    for (Operation &op : program.getBodyBlock())
      if (op.getName().getStringRef() == name)
        ops.push_back(&op);
    return ops;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};
} // namespace

TEST_F(AsyncHazardsTest, ReadersDoNotConflictWritersDo) {
  ProgramOp program = parse(R"mlir(
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 8x8xf32>
  %c = mt3k.buffer "c" at 256 : !mt3k.buffer<ddr, 8x8xf32>
  %t = mt3k.send %a to 1 on @pp tag 0 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.gemm %a, %a -> %c : !mt3k.buffer<ddr, 8x8xf32>, !mt3k.buffer<ddr, 8x8xf32> -> !mt3k.buffer<ddr, 8x8xf32>
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.fill %a, 1.0 : !mt3k.buffer<ddr, 8x8xf32>
  mt3k.wait %t
}
)mlir");
  ASSERT_TRUE(program);
  AsyncHazardAnalysis analysis(program);
  // One hazard: the first fill; the second is covered by a wait before it.
  ASSERT_EQ(analysis.getHazards().size(), 1u);
  const AsyncHazard &hazard = analysis.getHazards().front();
  EXPECT_EQ(hazard.op, opsNamed(program, "mt3k.fill").front());
  EXPECT_EQ(static_cast<Operation *>(hazard.asyncOp),
            opsNamed(program, "mt3k.send").front());
  EXPECT_EQ(hazard.getKind(), HazardKind::WriteAfterRead);
  EXPECT_EQ(hazard.access.range->begin, 0);
  EXPECT_EQ(hazard.access.range->end, 256);
  EXPECT_TRUE(analysis.getUnwaitedOps().empty());
  EXPECT_FALSE(analysis.isHazardFree());
  // The wait comes after the fills.
  EXPECT_FALSE(AsyncHazardAnalysis::isWaitedBefore(hazard.asyncOp, hazard.op));
}

TEST_F(AsyncHazardsTest, KindsViewsAndCores) {
  ProgramOp program = parse(R"mlir(
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %g = mt3k.buffer "g" at 0 : !mt3k.buffer<gsm, 64xf32>
  %am = mt3k.buffer "am" at 0 : !mt3k.buffer<am, 64xf32>
  %tail = mt3k.view %g[128] : !mt3k.buffer<gsm, 64xf32> to !mt3k.buffer<gsm, 32xf32>
  %t0 = mt3k.dma %a -> %g : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<gsm, 64xf32>
  %t1 = mt3k.dma %a -> %am core 1 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  %t2 = mt3k.dma %a -> %am core 2 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  mt3k.elementwise scale ins(%tail : !mt3k.buffer<gsm, 32xf32>) outs(%tail : !mt3k.buffer<gsm, 32xf32>) scale 2.0
  %t3 = mt3k.dma %a -> %am core 1 : !mt3k.buffer<ddr, 64xf32> -> !mt3k.buffer<am, 64xf32>
  mt3k.wait %t0, %t1, %t2, %t3
}
)mlir");
  ASSERT_TRUE(program);
  AsyncHazardAnalysis analysis(program);
  SmallVector<Operation *> dmas = opsNamed(program, "mt3k.dma");
  // The kernel reads (and writes) the DMA'd GSM tail: read-after-write comes
  // first. The third DMA to core 1 overwrites the first one's AM; core 2's
  // AM is another memory.
  ASSERT_EQ(analysis.getHazards().size(), 2u);
  const AsyncHazard &kernel = analysis.getHazards()[0];
  EXPECT_EQ(static_cast<Operation *>(kernel.asyncOp), dmas[0]);
  EXPECT_EQ(kernel.getKind(), HazardKind::ReadAfterWrite);
  EXPECT_EQ(kernel.access.range->space, MemorySpace::gsm);
  EXPECT_EQ(kernel.access.range->begin, 128);
  EXPECT_EQ(kernel.access.range->end, 256);
  const AsyncHazard &am = analysis.getHazards()[1];
  EXPECT_EQ(static_cast<Operation *>(am.asyncOp), dmas[1]);
  EXPECT_EQ(am.op, dmas[3]);
  EXPECT_EQ(am.getKind(), HazardKind::WriteAfterWrite);
  EXPECT_EQ(am.access.range->core, 1);
  EXPECT_EQ(stringifyHazardKind(am.getKind()), "write-after-write");
}

TEST_F(AsyncHazardsTest, OffloadStoreSlotsAndUnwaitedTokens) {
  ProgramOp program = parse(R"mlir(
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %b = mt3k.buffer "b" at 256 : !mt3k.buffer<ddr, 64xf32>
  %o = mt3k.offload %a to host "k" : !mt3k.buffer<ddr, 64xf32>
  %s = mt3k.offload %a to storage "k" : !mt3k.buffer<ddr, 64xf32>
  %r = mt3k.reload %b from host "k" : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %o, %r
}
)mlir");
  ASSERT_TRUE(program);
  AsyncHazardAnalysis analysis(program);
  SmallVector<Operation *> offloads = opsNamed(program, "mt3k.offload");
  // The reload reads the host slot the first offload writes; the storage
  // tier's slot "k" is another one. Offloads only read `a`.
  ASSERT_EQ(analysis.getHazards().size(), 1u);
  const AsyncHazard &hazard = analysis.getHazards().front();
  EXPECT_EQ(static_cast<Operation *>(hazard.asyncOp), offloads[0]);
  EXPECT_EQ(hazard.op, opsNamed(program, "mt3k.reload").front());
  EXPECT_TRUE(hazard.pending.storeSlot);
  EXPECT_FALSE(hazard.pending.range);
  EXPECT_EQ(hazard.getKind(), HazardKind::ReadAfterWrite);
  // The storage offload is never waited on.
  ASSERT_EQ(analysis.getUnwaitedOps().size(), 1u);
  EXPECT_EQ(static_cast<Operation *>(analysis.getUnwaitedOps().front()),
            offloads[1]);
  EXPECT_FALSE(AsyncHazardAnalysis::getWait(analysis.getUnwaitedOps().front()));
}

TEST_F(AsyncHazardsTest, WaitedBeforeIsHazardFree) {
  ProgramOp program = parse(R"mlir(
mt3k.program @p stage 0 {
  %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 64xf32>
  %t = mt3k.recv %a from 1 on @pp tag 0 : !mt3k.buffer<ddr, 64xf32>
  mt3k.wait %t
  mt3k.fill %a, 0.0 : !mt3k.buffer<ddr, 64xf32>
}
)mlir");
  ASSERT_TRUE(program);
  AsyncHazardAnalysis analysis(program);
  EXPECT_TRUE(analysis.isHazardFree());
  auto recv = llvm::cast<AsyncOpInterface>(opsNamed(program, "mt3k.recv")[0]);
  Operation *fill = opsNamed(program, "mt3k.fill")[0];
  EXPECT_TRUE(AsyncHazardAnalysis::isWaitedBefore(recv, fill));
  EXPECT_FALSE(AsyncHazardAnalysis::isWaitedBefore(recv, recv));
  // Accesses come from the declared effects: fill writes its buffer.
  SmallVector<MemoryAccess> accesses = getMemoryAccesses(fill);
  ASSERT_EQ(accesses.size(), 1u);
  EXPECT_TRUE(accesses[0].writes);
  EXPECT_EQ(accesses[0].range->buffer.getName(), "a");
}
