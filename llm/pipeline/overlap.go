package pipeline

import (
	"fmt"

	"github.com/gorun-hpc/gorun/comm"
)

// Overlapped passes: a scheduler on world rank 0 (llm/serve) keeps several passes of disjoint
// sequences in the pipeline at once. Every rank runs only its stage of each pass, in the order
// the passes were issued; a pass's plan (the scheduler's encoding of its sequences) travels
// down the pipeline ahead of its residual stream, and the last stage sends the pass's results
// to rank 0 alone, point to point, where their receives were posted before the pass was
// issued. Nothing in an overlapped pass is a collective over the whole job: the only
// collectives are those inside a stage (tensor-parallel allreduces, the last stage's gather of
// logits rows), and every rank of a stage runs the same passes in the same order.

// Tags of the overlapped passes' messages on the pipeline's communicator.
const (
	tagPlan   = 2 // a pass's plan, down the pipeline
	tagIDs    = 3 // the pass's number and greedy tokens, last stage to rank 0
	tagLogits = 4 // the full logits of the sampled rows, last stage to rank 0
)

// MaxPlan bounds the words of a plan RecvPlan accepts.
const MaxPlan = 1 << 26

// SendPlan hands a plan on down the pipeline: world rank 0 sends it to the other ranks of
// stage 0, and every rank not in the last stage to its peer (the same tensor-parallel index)
// in the next stage. Plans are small: the sends are buffered and do not wait for the
// receiver.
func (pm *Model) SendPlan(plan []int32) error {
	if pm.Stages == 1 {
		return fmt.Errorf("pipeline: overlapped passes need more than one stage")
	}
	me := pm.world.Rank()
	if me == 0 {
		for r := 1; r < pm.TP; r++ {
			if err := comm.Send(pm.pc, plan, r, tagPlan); err != nil {
				return fmt.Errorf("stage 0: sending a plan to rank %d: %w", r, err)
			}
		}
	}
	if !pm.last() {
		if err := comm.Send(pm.pc, plan, me+pm.TP, tagPlan); err != nil {
			return fmt.Errorf("stage %d: sending a plan to stage %d: %w", pm.Stage, pm.Stage+1, err)
		}
	}
	return nil
}

// RecvPlan receives the next plan on a rank other than world rank 0: from rank 0 in stage 0,
// else from the previous stage's peer.
func (pm *Model) RecvPlan() ([]int32, error) {
	me := pm.world.Rank()
	if me == 0 || pm.Stages == 1 {
		return nil, fmt.Errorf("pipeline: rank %d of %d stages receives no plans", me, pm.Stages)
	}
	src := me - pm.TP
	if pm.first() {
		src = 0
	}
	st, err := pm.pc.Probe(src, tagPlan)
	if err != nil {
		return nil, fmt.Errorf("stage %d: waiting for a plan from rank %d: %w", pm.Stage, src, err)
	}
	n := comm.Count[int32](st)
	if n < 1 || n > MaxPlan || st.Count%4 != 0 {
		return nil, fmt.Errorf("stage %d: a plan of %d bytes from rank %d", pm.Stage, st.Count, src)
	}
	plan := make([]int32, n)
	if _, err := comm.Recv(pm.pc, plan, src, tagPlan); err != nil {
		return nil, fmt.Errorf("stage %d: receiving a plan from rank %d: %w", pm.Stage, src, err)
	}
	return plan, nil
}

// SendResults, on the last stage's ranks after ForwardBatch, sends world rank 0 the pass's
// number, the greedy tokens of its logits rows and the full logits of the given rows (the
// stage gathers them first: every rank of the last stage calls it). Elsewhere it does nothing.
func (pm *Model) SendResults(pass int32, rows []int) error {
	if !pm.last() || pm.Stages == 1 {
		return nil
	}
	for _, r := range rows {
		if r < 0 || r >= pm.rows {
			return fmt.Errorf("model: logits row %d of %d", r, pm.rows)
		}
	}
	var flat []float32
	if len(rows) > 0 {
		flat = make([]float32, len(rows)*pm.Local.Cfg.Vocab)
		if err := pm.gatherRows(rows, flat); err != nil {
			return err
		}
	}
	if pm.world.Rank() != pm.root() {
		return nil
	}
	if len(pm.ids) != pm.rows {
		return fmt.Errorf("stage %d: %d greedy tokens for the %d logits rows of pass %d", pm.Stage, len(pm.ids), pm.rows, pass)
	}
	msg := append([]int32{pass}, pm.ids...)
	if err := comm.Send(pm.pc, msg, 0, tagIDs); err != nil {
		return fmt.Errorf("stage %d: sending pass %d's tokens to rank 0: %w", pm.Stage, pass, err)
	}
	if len(rows) > 0 {
		if err := comm.Send(pm.pc, flat, 0, tagLogits); err != nil {
			return fmt.Errorf("stage %d: sending pass %d's logits to rank 0: %w", pm.Stage, pass, err)
		}
	}
	return nil
}

// Results are one overlapped pass's results on world rank 0, received in the background.
type Results struct {
	pass         int32
	msg          []int32
	flat         []float32
	vocab        int
	idsReq, lReq *comm.Request
}

// PostResults posts, on world rank 0, the receives of a pass's results (n logits rows, the
// full logits of k of them) before the pass is issued, so that the last stage's sends never
// wait for rank 0. Passes are received in the order they are posted.
func (pm *Model) PostResults(pass int32, n, k int) *Results {
	r := &Results{pass: pass, msg: make([]int32, n+1), vocab: pm.Local.Cfg.Vocab}
	r.idsReq = comm.Irecv(pm.pc, r.msg, pm.root(), tagIDs)
	if k > 0 {
		r.flat = make([]float32, k*r.vocab)
		r.lReq = comm.Irecv(pm.pc, r.flat, pm.root(), tagLogits)
	}
	return r
}

// Done is closed when the results have arrived (or failed).
func (r *Results) Done() <-chan struct{} {
	if r.lReq != nil {
		return r.lReq.Done()
	}
	return r.idsReq.Done()
}

// Wait returns the pass's greedy tokens and its k full logits rows.
func (r *Results) Wait() ([]int32, [][]float32, error) {
	st, err := r.idsReq.Wait()
	if err == nil && r.lReq != nil {
		_, err = r.lReq.Wait()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("receiving pass %d's results from the last stage: %w", r.pass, err)
	}
	if got := comm.Count[int32](st); got != len(r.msg) || r.msg[0] != r.pass {
		return nil, nil, fmt.Errorf("pass %d: the last stage sent %d words for pass %d", r.pass, got, r.msg[0])
	}
	rows := make([][]float32, len(r.flat)/max(r.vocab, 1))
	for i := range rows {
		rows[i] = r.flat[i*r.vocab : (i+1)*r.vocab : (i+1)*r.vocab]
	}
	return r.msg[1:], rows, nil
}
