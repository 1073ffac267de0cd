// The simulator on a scheduled module: expand-1f1b + schedule-lifecycle (and
// assign-buffers) on a 4-layer model, p = 2 stages, m = 4 micro-batches,
// dp = 2, then ratrain-sim prints the summary fields and writes a trace and
// an SVG timeline.

// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/machine.yaml" \
// RUN:   | ratrain-sim - --machine=%S/Inputs/machine.yaml | FileCheck %s --check-prefix=RAT
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%S/Inputs/machine.yaml policy=gpu-style" \
// RUN:     --ratrain-assign-buffers="machine=%S/Inputs/machine.yaml" \
// RUN:   | ratrain-sim - --machine=%S/Inputs/machine.yaml --iterations=2 \
// RUN:     --trace=%t.json --svg=%t.svg --measured-step=0.01 | FileCheck %s --check-prefix=GPU
// RUN: FileCheck %s --check-prefix=TRACE < %t.json
// RUN: FileCheck %s --check-prefix=SVG < %t.svg
// Where the DMA runs on the cores (dma_on_cores: a CPU host) the update
// writes the refreshed view itself, on the compute stream: nothing waits for
// a DMA.
// RUN: sed 's/^  dma_channels: 4$/  dma_channels: 4\n  dma_on_cores: true/' %S/Inputs/machine.yaml > %t.on-cores.yaml
// RUN: ratrain-opt %s --ratrain-expand-1f1b --ratrain-schedule-lifecycle="machine=%t.on-cores.yaml" \
// RUN:   | ratrain-sim - --machine=%t.on-cores.yaml | FileCheck %s --check-prefix=ONCORES
// RUN: not ratrain-sim %s --machine=%S/Inputs/machine.yaml 2>&1 | FileCheck %s --check-prefix=NOPIPE
// RUN: not ratrain-sim %t.missing.mlir --machine=%S/Inputs/machine.yaml 2>&1 | FileCheck %s --check-prefix=MISSING

ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1,
                       micro_batches = 4, zero = 0, stage_layers = [2, 2],
                       recompute = [full, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 head hidden(256) vocab(512)
}

// RAT: program: tiny_step pp=2 dp=2 mbs=1 m=4 zero=0 {{.*}} (ratrain)
// RAT-NEXT: machine: small
// RAT-NEXT: stages: 2
// RAT-NEXT: clusters: 4
// RAT-NEXT: tasks-per-iteration: {{[1-9][0-9]*}}
// RAT-NEXT: iterations: 3
// RAT-NEXT: events: {{[1-9][0-9]*}}
// RAT-NEXT: first-iteration-s: {{[0-9.]+(e-[0-9]+)?}}
// RAT-NEXT: step-time-s: {{[0-9.]+(e-[0-9]+)?}}
// 2 replicas x 4 micro-batches x 128 tokens.
// RAT-NEXT: tokens-per-iteration: 1024
// RAT-NEXT: tokens-per-s: {{[0-9]+\.[0-9]+}}
// RAT-NEXT: mfu-percent: {{[0-9]+\.[0-9]+}}
// RAT-NEXT: bubble-mean-percent: {{[0-9]+\.[0-9]+}}
// RAT-NEXT: bubble-max-percent: {{[0-9]+\.[0-9]+}}
// RAT-NEXT: exposed-dma-s:
// RAT-NEXT: exposed-p2p-s:
// RAT-NEXT: exposed-all-reduce-s:
// RAT-NEXT: exposed-reduce-scatter-s: 0
// RAT-NEXT: exposed-all-gather-s: 0
// RAT-NEXT: exposed-offload-s: 0
// RAT-NEXT: peak-ddr-max-gib:
// RAT-NEXT: stage 0: name='stage 0' busy-s={{.*}} bubble-percent={{.*}} exposed-comm-s={{.*}} peak-ddr-gib=
// RAT-NEXT: stage 1: name='stage 1'

// ONCORES: program: tiny_step pp=2 dp=2 mbs=1 m=4 zero=0 {{.*}} (ratrain)
// ONCORES: exposed-dma-s: 0{{$}}

// GPU: program: tiny_step {{.*}} (gpu-style)
// GPU: iterations: 2
// GPU: tokens-per-iteration: 1024
// The buffer assignment's peak is reported next to the simulated one.
// GPU: stage 0: name='stage 0' {{.*}} peak-ddr-gib={{[0-9.]+}} assigned-ddr-gib={{[0-9.]+}}
// GPU: measured-step-s: 0.01
// GPU-NEXT: error-percent: {{-?[0-9]+\.[0-9]+}}

// TRACE: "traceEvents"
// TRACE-DAG: "name":"process_name"
// TRACE-DAG: "name":"fwd L1 mb0"
// TRACE-DAG: "name":"all-reduce L2"
// TRACE-DAG: "name":"dma 0"

// SVG: <svg xmlns="http://www.w3.org/2000/svg"
// SVG: tiny_step {{.*}}(gpu-style)
// SVG: >forward<
// SVG: end of iteration 2
// SVG: >stage 0<
// SVG: >stage 1<
// SVG: </svg>

// NOPIPE: error: {{.*}}the module has no ratrain.pipeline: run --ratrain-expand-1f1b and --ratrain-schedule-lifecycle first

// MISSING: error: {{.*}}missing.mlir
