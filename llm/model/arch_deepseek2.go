package model

import "math"

// deepseek2 (DeepSeek V2, V2.5, V3, R1 and Kimi K2 files): multi-head latent attention (mla.go)
// with RoPE on adjacent pairs of the RopeDim rotary part of each head and optional YaRN
// scaling; the first leading_dense_block_count layers have a dense MLP, the others a mixture
// of experts with ungated shared experts (expert_shared_count of expert_feed_forward_length),
// softmax or sigmoid scores (expert_gating_func 1 or 2) with an optional score-correction bias
// for the choice (exp_probs_b), the chosen weights renormalised if expert_weights_norm, and
// scaled by expert_weights_scale.
//
// Not read: expert_group_count / expert_group_used_count (group-limited routing, which
// llama.cpp c392e50 does not apply either); files that set them more than one group are refused.
func init() {
	register(&Arch{
		Name: "deepseek2",
		Rope: RopeNorm,
		MLA:  true,
		Hparams: func(r *Keys, c *Config) error {
			var err error
			if c.LeadingDense, err = r.Int("leading_dense_block_count", 0); err != nil {
				return err
			}
			if c.QLoraRank, err = r.Int("attention.q_lora_rank", 0); err != nil {
				return err
			}
			if c.KVLoraRank, err = r.Int("attention.kv_lora_rank", -1); err != nil {
				return err
			}
			if c.KVLoraRank <= 0 || c.KVLoraRank > 1<<16 || c.QLoraRank > 1<<16 {
				return r.Errorf("latent ranks q %d, kv %d", c.QLoraRank, c.KVLoraRank)
			}
			if c.RopeDim >= c.HeadDim {
				return r.Errorf("rope dimension %d leaves no non-rotary part of the %d-wide key heads", c.RopeDim, c.HeadDim)
			}
			if c.KVHeads != c.Heads {
				return r.Errorf("%d KV heads for %d heads: latent attention has one key per head", c.KVHeads, c.Heads)
			}
			if err := readExperts(r, c, -1); err != nil {
				return err
			}
			if c.Experts == 0 || c.LeadingDense > c.Layers {
				return r.Errorf("%d experts, %d leading dense layers of %d", c.Experts, c.LeadingDense, c.Layers)
			}
			for _, k := range []string{"expert_group_count", "expert_group_used_count"} {
				if g, err := r.Int(k, 1); err != nil {
					return err
				} else if g > 1 {
					return r.Errorf("deepseek2 %s = %d: group-limited routing is not supported", k, g)
				}
			}
			shared, err := r.Int("expert_shared_count", 0)
			if err != nil {
				return err
			}
			if shared > 64 {
				return r.Errorf("%d shared experts", shared)
			}
			c.SharedFFN = shared * c.ExpertFFN
			if c.ExpertWeightsScale, err = r.Float("expert_weights_scale", 1); err != nil {
				return err
			}
			if !(c.ExpertWeightsScale > 0 && c.ExpertWeightsScale < 1e6) {
				return r.Errorf("expert weights scale %g", c.ExpertWeightsScale)
			}
			if c.ExpertWeightsNorm, err = r.Bool("expert_weights_norm", false); err != nil {
				return err
			}
			switch g, err := r.Int("expert_gating_func", 0); {
			case err != nil:
				return err
			case g == 0 || g == 1: // 0: files from before the key, softmax
			case g == 2:
				c.ExpertSigmoid = true
			default:
				return r.Errorf("expert gating function %d (1: softmax, 2: sigmoid)", g)
			}
			c.AttnScale = 1 / math.Sqrt(float64(c.HeadDim))
			if c.Yarn {
				logMul, err := r.Float("rope.scaling.yarn_log_multiplier", 0)
				if err != nil {
					return err
				}
				orig, err := r.Int("rope.scaling.original_context_length", c.ContextLen)
				if err != nil {
					return err
				}
				// The correction range: the dimensions whose wavelength fits 32 (beta fast)
				// and 1 (beta slow) times in the original context (llama.cpp's defaults).
				corr := func(rot float64) float64 {
					return float64(c.RopeDim) * math.Log(float64(orig)/(rot*2*math.Pi)) / (2 * math.Log(c.RopeBase))
				}
				c.YarnLow = max(0, math.Floor(corr(32)))
				c.YarnHigh = min(float64(c.RopeDim-1), math.Ceil(corr(1)))
				ms := 1 + logMul*math.Log(c.RopeScale)
				c.AttnScale *= ms * ms
			}
			return nil
		},
		Block: func(c *Config, i int) Block {
			if i < c.LeadingDense {
				return Block{MLA: true}
			}
			return Block{MLA: true, MoE: &MoE{Shared: c.SharedFFN > 0, Sigmoid: c.ExpertSigmoid,
				NormTopK: c.ExpertWeightsNorm, Scale: float32(c.ExpertWeightsScale)}}
		},
	})
}
