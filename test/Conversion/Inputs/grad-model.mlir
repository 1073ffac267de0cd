// A 5-layer fp32 LLaMA small enough for the reference interpreter of
// mt3k-gradcheck.py: 2 stages, 2 micro-batches, stage 1 under full recompute.
ratrain.model @grad family("llama") dtype(f32) seq_len(4) max_positions(8) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 2, pp = 2, dp = 1, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 3], recompute = [none, full], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(8) vocab(11)
  ratrain.layer 1 decoder hidden(8) heads(2) kv_heads(1) ffn(12)
  ratrain.layer 2 decoder hidden(8) heads(2) kv_heads(1) ffn(12)
  ratrain.layer 3 decoder hidden(8) heads(2) kv_heads(1) ffn(12)
  ratrain.layer 4 head hidden(8) vocab(11)
}
