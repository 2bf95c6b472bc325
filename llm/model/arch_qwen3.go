package model

// qwen3: attention without biases but with an RMS norm of every query and key head before
// NeoX RoPE; a SwiGLU MLP.
//
// qwen3moe: the same attention; a mixture of experts (expert_feed_forward_length wide,
// softmax routing, the top-k probabilities renormalised), no shared expert.
func init() {
	register(&Arch{
		Name:    "qwen3",
		Rope:    RopeNeox,
		Hparams: func(r *Keys, c *Config) error { return nil },
		Block:   func(c *Config, i int) Block { return Block{QKNorm: true} },
	})
	register(&Arch{
		Name: "qwen3moe",
		Rope: RopeNeox,
		Hparams: func(r *Keys, c *Config) error {
			if err := readExperts(r, c, -1); err != nil {
				return err
			}
			if c.Experts == 0 {
				return r.Errorf("qwen3moe without qwen3moe.expert_count")
			}
			return nil
		},
		Block: func(c *Config, i int) Block {
			return Block{QKNorm: true, MoE: &MoE{NormTopK: true}}
		},
	})
}
