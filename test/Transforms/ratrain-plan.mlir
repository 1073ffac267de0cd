// --ratrain-plan attaches the planner's best plan to the model; the planned
// module expands into a verified 1F1B pipeline.

// RUN: ratrain-translate --import-hf-config %examples/models/llama-2-7b.json --machine=%examples/machines/mt3000.yaml | ratrain-opt --ratrain-plan="clusters=1024 global-batch=1024 pp=4 micro-batch-size=1" | FileCheck %s --check-prefix=FIXED
// FIXED: ratrain.model @llama_2_7b
// FIXED-SAME: plan #ratrain.plan<clusters = 1024, pp = 4, dp = 256, micro_batch_size = 1, micro_batches = 4, zero = {{[0-3]}}, stage_layers = [{{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}, {{[0-9]+}}], recompute = [{{none|selective|full}}, {{none|selective|full}}, {{none|selective|full}}, {{none|selective|full}}], step_us = {{[1-9][0-9]*}}, peak_bytes = {{[1-9][0-9]*}}{{(, weight_partition = [0-9]+)?(, grad_partition = [0-9]+)?(, act_offload = \[[0-9, ]+\])?}}>

// The free search on 64 clusters, then the plan is used by expansion.
// RUN: ratrain-translate --import-hf-config %examples/models/llama-2-7b.json --machine=%examples/machines/mt3000.yaml | ratrain-opt --ratrain-plan="clusters=64 global-batch=256" --ratrain-expand-1f1b | FileCheck %s --check-prefix=FREE
// FREE: ratrain.model @llama_2_7b {{.*}} plan #ratrain.plan<clusters = 64,
// FREE: ratrain.pipeline @llama_2_7b_step for @llama_2_7b
// FREE: ratrain.stage 0 layers [0,

// show-top prints the ranked table and the best plan's per-stage memory.
// RUN: ratrain-translate --import-hf-config %examples/models/qwen2.5-32b.json --machine=%examples/machines/mt3000.yaml | ratrain-opt --ratrain-plan="clusters=256 global-batch=512 show-top=3" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOP
// TOP: remark: {{[0-9]+}} candidates evaluated, {{[0-9]+}} fit 20.0 GB per cluster
// TOP-NEXT: rank   pp    dp  mbs     m zero
// TOP-NEXT: {{^ +1 +[0-9]+ +[0-9]+ }}
// TOP-NEXT: {{^ +2 +[0-9]+ +[0-9]+ }}
// TOP-NEXT: {{^ +3 +[0-9]+ +[0-9]+ }}
// TOP: stage layers recompute
// TOP-NOT: see current operation

// The machine file can come from the pass option instead of the module.
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json | ratrain-opt --ratrain-plan="machine=%examples/machines/host.yaml clusters=2 global-batch=8" | FileCheck %s --check-prefix=OPTION
// OPTION: plan #ratrain.plan<clusters = 2,

// Diagnostics.
// RUN: ratrain-translate --import-hf-config %examples/models/llama-2-70b.json --machine=%examples/machines/mt3000.yaml | not ratrain-opt --ratrain-plan="clusters=8 global-batch=64" 2>&1 | FileCheck %s --check-prefix=INFEASIBLE
// INFEASIBLE: error: no feasible plan for 'llama_2_70b' on 8 clusters of 'mt3000': {{.*}}closest: {{.*}}stage {{[0-9]+}} needs {{[0-9.]+}} GB of 20.0 GB: {{.*}}
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json --machine=%examples/machines/host.yaml | not ratrain-opt --ratrain-plan="clusters=2" 2>&1 | FileCheck %s --check-prefix=BATCH
// BATCH: error: --ratrain-plan needs global-batch=<sequences>
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json --machine=%examples/machines/host.yaml | not ratrain-opt --ratrain-plan="global-batch=8 policy=fastest" 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: error: --ratrain-plan: unknown policy 'fastest' (ratrain or gpu-style)
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json | not ratrain-opt --ratrain-plan="global-batch=8" 2>&1 | FileCheck %s --check-prefix=NOMACHINE
// NOMACHINE: error: no machine file: pass machine=<file> or import with --machine
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json | not ratrain-opt --ratrain-plan="machine=%t.missing.yaml global-batch=8" 2>&1 | FileCheck %s --check-prefix=BADMACHINE
// BADMACHINE: error: {{.*}}missing.yaml

// zero=3 fixes ZeRO-3: the scheduled pipeline gathers the view shards.
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json | ratrain-opt --ratrain-plan="machine=%examples/machines/host.yaml clusters=2 global-batch=4 pp=1 zero=3" --ratrain-schedule-pipeline="machine=%examples/machines/host.yaml" | FileCheck %s --check-prefix=ZERO3
// ZERO3: plan #ratrain.plan<clusters = 2, pp = 1, dp = 2, {{.*}} zero = 3,
// ZERO3: ratrain.stage 0
// ZERO3-NEXT: ratrain.sync all_gather %view0
// ZERO3: ratrain.sync reduce_scatter
// RUN: ratrain-translate --import-hf-config %examples/models/tiny-llama.json | not ratrain-opt --ratrain-plan="machine=%examples/machines/host.yaml clusters=2 global-batch=4 zero=4" 2>&1 | FileCheck %s --check-prefix=ZERO4
// ZERO4: --ratrain-plan: zero must be 0, 1, 2 or 3, got 4
