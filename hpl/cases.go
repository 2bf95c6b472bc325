package hpl

// Case is one test of a run: a problem size, a blocking factor, a grid and a variant.
type Case struct {
	N, NB, P, Q int
	Algo        Algo
}

// Cases lists a run's tests in netlib's driver order: grids outermost, then N, NB, DEPTH,
// BCAST, RFACT, PFACT, NBMIN and NDIV innermost.
func (p *Params) Cases() []Case {
	var out []Case
	for ipq := range p.Ps {
		for _, n := range p.Ns {
			for _, nb := range p.NBs {
				for _, depth := range p.Depths {
					for _, top := range p.BCasts {
						for _, rf := range p.RFacts {
							for _, pf := range p.PFacts {
								for _, nbmin := range p.NBMins {
									for _, ndiv := range p.NDivs {
										out = append(out, Case{N: n, NB: nb, P: p.Ps[ipq], Q: p.Qs[ipq],
											Algo: Algo{PFact: pf, RFact: rf, NBMin: nbmin, NDiv: ndiv,
												BCast: top, Depth: depth, Swap: p.Swap, SwapThr: p.SwapThr,
												Order: p.PMap, L1NoTrans: p.L1NoTrans, UNoTrans: p.UNoTrans,
												Equil: p.Equil, Align: p.Align}})
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}
