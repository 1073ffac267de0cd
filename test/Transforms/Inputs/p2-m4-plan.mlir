// A 4-layer model (embedding, 2 decoder layers, head) on 2 stages of 2
// layers with 4 micro-batches: the plan the hand-written schedules of
// schedule-csv.test run.
ratrain.model @small family("llama") dtype(f32) seq_len(32)
    max_positions(64) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1,
                       micro_batches = 4, zero = 0, stage_layers = [2, 2],
                       recompute = [none, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 2 decoder hidden(64) heads(4) kv_heads(2) ffn(128)
  ratrain.layer 3 head hidden(64) vocab(128)
}
