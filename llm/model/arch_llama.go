package model

// llama and mistral: grouped-query attention without biases, RoPE on adjacent pairs (the
// converter permutes Q and K rows into that order), a SwiGLU MLP or, with
// llama.expert_count > 0 (Mixtral), a mixture of SwiGLU experts with softmax routing whose
// top-k probabilities are renormalised.
func init() {
	for _, name := range []string{"llama", "mistral"} {
		register(&Arch{
			Name: name,
			Rope: RopeNorm,
			Hparams: func(r *Keys, c *Config) error {
				return readExperts(r, c, c.FFN)
			},
			Block: func(c *Config, i int) Block {
				if c.Experts > 0 {
					return Block{MoE: &MoE{NormTopK: true}}
				}
				return Block{}
			},
		})
	}
}
