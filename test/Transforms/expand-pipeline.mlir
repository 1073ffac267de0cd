// RUN: ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-expand-pipeline | FileCheck %s
// RUN: ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-expand-pipeline --ratrain-verify-schedule | FileCheck %s --check-prefix=VERIFIED
// RUN: ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-schedule-pipeline="machine=%S/Inputs/small-machine.yaml capacity=1000000000" | FileCheck %s --check-prefix=SCHEDULED
// RUN: not ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-expand-pipeline=schedule=zb-h1 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: not ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-expand-pipeline=schedule=2f2b 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not ratrain-opt %S/Inputs/interleaved-plan.mlir --ratrain-expand-pipeline=schedule-file=%t.missing.csv 2>&1 | FileCheck %s --check-prefix=MISSING

// The plan's interleaved 1F1B: rank 0 runs virtual stages 0 and 2, rank 1
// virtual stages 1 and 3; transfers name the chunk they leave or enter.
// CHECK: ratrain.pipeline @tiny_step for @tiny plan #ratrain.plan<{{.*}}schedule = interleaved_1f1b, virtual_stages = 2>
// CHECK: ratrain.stage 0 chunks [0: [0, 2), 2: [4, 6)] states(
// CHECK-SAME: !ratrain.view<0>
// CHECK-SAME: !ratrain.view<5>
// CHECK-NOT: ratrain.recv activation
// CHECK: ratrain.forward %{{.*}} mb(0) : !ratrain.view<0>
// CHECK-NEXT: ratrain.forward %{{.*}} mb(0) : !ratrain.view<1>
// CHECK-NEXT: ratrain.send activation mb(0) to(1) chunk(0)
// CHECK: ratrain.recv activation mb(0) from(1) chunk(2)
// CHECK-NEXT: ratrain.forward %{{.*}} mb(0) : !ratrain.view<4>
// CHECK: ratrain.stage 1 chunks [1: [2, 4), 3: [6, 8)] states(
// CHECK: ratrain.recv activation mb(0) from(0) chunk(1)
// CHECK: ratrain.send activation mb(0) to(0) chunk(1)
// The last virtual stage has no activation to send and recomputes layer 6.
// CHECK: ratrain.forward %{{.*}} mb(0) : !ratrain.view<7>
// CHECK-NOT: ratrain.send activation mb(0) to(0) chunk(3)
// CHECK: ratrain.recompute %{{.*}} mb(0) : !ratrain.view<6>, !ratrain.act<6, input>
// CHECK: ratrain.send gradient mb(0) to(0) chunk(3)

// VERIFIED: ratrain.pipeline @tiny_step

// The lifecycle runs per owned layer and the buffers are assigned.
// SCHEDULED: ratrain.stage 0 chunks
// SCHEDULED-COUNT-4: ratrain.update
// SCHEDULED: ratrain.stage 1 chunks
// SCHEDULED-COUNT-4: ratrain.update

// MISMATCH: error: cannot build schedule zb-h1 for the plan (pp = 2, 2 virtual stages per rank, 4 micro-batches)
// UNKNOWN: error: unknown schedule '2f2b'; expected 1f1b, interleaved-1f1b, zb-h1 or zbv
// MISSING: error: cannot read schedule file '{{.*}}missing.csv'
