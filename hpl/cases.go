package hpl

import "iter"

// Case is one test of a run: a problem size, a blocking factor, a grid and a variant.
type Case struct {
	N, NB, P, Q int
	Algo        Algo
}

// Cases lists a run's tests in netlib's driver order: grids outermost, then N, NB, DEPTH,
// BCAST, RFACT, PFACT, NBMIN and NDIV innermost. A run may hold up to MaxParam^9 tests:
// Driver walks GridCases rather than materializing them.
func (p *Params) Cases() []Case {
	var out []Case
	for ipq := range p.Ps {
		for c := range p.GridCases(ipq) {
			out = append(out, c)
		}
	}
	return out
}

// GridCases yields the tests on grid ipq (Ps[ipq] x Qs[ipq]) in netlib's order.
func (p *Params) GridCases(ipq int) iter.Seq[Case] {
	return func(yield func(Case) bool) {
		for _, n := range p.Ns {
			for _, nb := range p.NBs {
				for _, depth := range p.Depths {
					for _, top := range p.BCasts {
						for _, rf := range p.RFacts {
							for _, pf := range p.PFacts {
								for _, nbmin := range p.NBMins {
									for _, ndiv := range p.NDivs {
										c := Case{N: n, NB: nb, P: p.Ps[ipq], Q: p.Qs[ipq],
											Algo: Algo{PFact: pf, RFact: rf, NBMin: nbmin, NDiv: ndiv,
												BCast: top, Depth: depth, Swap: p.Swap, SwapThr: p.SwapThr,
												Order: p.PMap, L1NoTrans: p.L1NoTrans, UNoTrans: p.UNoTrans,
												Equil: p.Equil, Align: p.Align}}
										if !yield(c) {
											return
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}
