// A small bf16 LLaMA planned on 2 stages x 2 replicas (ZeRO-0), for the
// lowering tests. Not a test itself (lit.cfg excludes Inputs/).
ratrain.model @small family("llama") dtype(bf16) seq_len(64) max_positions(128) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04) plan #ratrain.plan<clusters = 4, pp = 2, dp = 2, micro_batch_size = 1, micro_batches = 2, zero = 0, stage_layers = [2, 2], recompute = [none, none], step_us = 1000, peak_bytes = 1000000> {
  ratrain.layer 0 embedding hidden(64) vocab(128)
  ratrain.layer 1 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 2 decoder hidden(64) heads(2) kv_heads(2) ffn(172)
  ratrain.layer 3 head hidden(64) vocab(128)
}
