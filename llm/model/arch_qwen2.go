package model

// qwen2: llama's block with biases on the Q, K and V projections and NeoX RoPE (halves
// rotated together).
//
// qwen2moe: the same attention; the feed-forward part is a mixture of experts
// (expert_feed_forward_length wide, softmax routing, top-k probabilities used as they are)
// plus a shared expert (expert_shared_feed_forward_length wide) on every token whose output is
// scaled by sigmoid(ffn_gate_inp_shexp · x).
func init() {
	register(&Arch{
		Name:    "qwen2",
		Rope:    RopeNeox,
		Hparams: func(r *Keys, c *Config) error { return nil },
		Block:   func(c *Config, i int) Block { return Block{AttnBias: true} },
	})
	register(&Arch{
		Name: "qwen2moe",
		Rope: RopeNeox,
		Hparams: func(r *Keys, c *Config) error {
			if err := readExperts(r, c, 0); err != nil {
				return err
			}
			if c.Experts == 0 {
				return r.Errorf("qwen2moe without qwen2moe.expert_count")
			}
			if c.ExpertFFN == 0 { // llama.cpp's default
				c.ExpertFFN = c.FFN / c.ExpertsUsed
			}
			var err error
			if c.SharedFFN, err = r.Int("expert_shared_feed_forward_length", c.FFN); err != nil {
				return err
			}
			if c.SharedFFN <= 0 {
				return r.Errorf("shared expert hidden size %d", c.SharedFFN)
			}
			return nil
		},
		Block: func(c *Config, i int) Block {
			return Block{AttnBias: true, MoE: &MoE{SharedGate: true}}
		},
	})
}
