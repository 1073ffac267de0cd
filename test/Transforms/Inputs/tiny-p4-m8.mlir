// An 8-layer model (embedding, 6 decoder layers, head) planned on 4 stages
// of 2 layers with 8 micro-batches and dp = 2: stage 0 recomputes fully,
// stage 2 selectively.
ratrain.model @tiny family("llama") dtype(bf16) seq_len(128)
    max_positions(256) positions rope rms_eps(1.0e-05) rope_theta(1.0e+04)
    plan #ratrain.plan<clusters = 8, pp = 4, dp = 2, micro_batch_size = 1,
                       micro_batches = 8, zero = 0, stage_layers = [2, 2, 2, 2],
                       recompute = [full, none, selective, none], step_us = 0,
                       peak_bytes = 0> {
  ratrain.layer 0 embedding hidden(256) vocab(512)
  ratrain.layer 1 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 2 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 3 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 4 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 5 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 6 decoder hidden(256) heads(8) kv_heads(4) ffn(688)
  ratrain.layer 7 head hidden(256) vocab(512)
}
