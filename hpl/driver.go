package hpl

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gorun-hpc/gorun/collectives"
	"github.com/gorun-hpc/gorun/comm"
	"github.com/vmihailenco/msgpack/v5"
)

// ErrIllegalInput is returned (on every rank) when the run cannot start: too few ranks for
// the grids, or a malformed HPL.dat on rank 0. Netlib exits with status 1 then.
var ErrIllegalInput = errors.New("hpl: illegal input in HPL.dat")

// paramsMsg carries rank 0's parsed HPL.dat (or its error) to the other ranks.
type paramsMsg struct {
	P   *Params
	Err string
}

// maxParamsBytes bounds the encoded parameters a rank accepts (an HPL.dat is a few hundred
// bytes; its lists hold at most a few dozen entries).
const maxParamsBytes = 1 << 20

// ShareParams makes rank 0's parameters every rank's (netlib reads HPL.dat on process 0 and
// broadcasts it): rank 0 passes what it parsed, or the parse error; every rank gets the
// parameters, or an error wrapping ErrIllegalInput. Collective over world.
func ShareParams(world *comm.Comm, p *Params, perr error) (*Params, error) {
	msg := paramsMsg{P: p}
	if perr != nil {
		msg = paramsMsg{Err: perr.Error()}
	}
	var enc []byte
	size := []int64{0}
	if world.Rank() == 0 {
		var err error
		if enc, err = msgpack.Marshal(msg); err != nil {
			// Still take part in the broadcasts, so that no rank is left waiting.
			enc, _ = msgpack.Marshal(paramsMsg{Err: "encoding the parameters: " + err.Error()})
		}
		size[0] = int64(len(enc))
	}
	if err := collectives.Bcast(world, size, 0); err != nil {
		return nil, fmt.Errorf("hpl: sharing HPL.dat: %w", err)
	}
	if size[0] < 0 || size[0] > maxParamsBytes {
		return nil, fmt.Errorf("hpl: sharing HPL.dat: rank 0 announced %d bytes (limit %d)", size[0], maxParamsBytes)
	}
	if world.Rank() != 0 {
		enc = make([]byte, size[0])
	}
	if err := collectives.Bcast(world, enc, 0); err != nil {
		return nil, fmt.Errorf("hpl: sharing HPL.dat: %w", err)
	}
	if world.Rank() != 0 {
		msg = paramsMsg{}
		if err := msgpack.Unmarshal(enc, &msg); err != nil {
			return nil, fmt.Errorf("hpl: decoding HPL.dat from rank 0: %w", err)
		}
	}
	if msg.Err != "" {
		return nil, fmt.Errorf("%w: %s", ErrIllegalInput, msg.Err)
	}
	return msg.P, nil
}

// Driver runs every test of an HPL.dat, as netlib's HPL_pddriver: out and errOut are used on
// world rank 0 only (netlib's output and its error messages).
type Driver struct {
	Params  *Params
	Out     io.Writer
	ErrOut  io.Writer
	Options Options
	// OnResult, if set, is called on world rank 0 after each test.
	OnResult func(c Case, r *Result)
}

// Run runs the tests on world; it is collective over world. Ranks beyond a grid's P x Q wait
// for the grid's tests to end. It returns the summary (meaningful on rank 0) and an error
// wrapping ErrIllegalInput when there are too few ranks for the grids.
func (d *Driver) Run(world *comm.Comm) (Summary, error) {
	p := d.Params
	root := world.Rank() == 0
	sum := Summary{Checked: p.Threshold > 0, Detailed: d.Options.DetailedTiming}
	if need := p.MaxProcs(); need > world.Size() {
		if root {
			fmt.Fprint(d.ErrOut, PWarn(0, "HPL_pdinfo", fmt.Sprintf("Need at least %d processes for these tests", need)))
			fmt.Fprint(d.ErrOut, PWarn(0, "HPL_pdinfo", "Illegal input in file HPL.dat. Exiting ..."))
		}
		return sum, fmt.Errorf("%w: need at least %d processes, have %d", ErrIllegalInput, need, world.Size())
	}
	if root {
		if err := WriteHeader(d.Out, p); err != nil {
			return sum, err
		}
	}
	first := true
	for ipq := range p.Ps {
		g, err := NewGrid(world, p.PMap, p.Ps[ipq], p.Qs[ipq])
		if err != nil {
			return sum, err
		}
		if g == nil {
			continue // this rank is beyond the grid: it waits for the next
		}
		for c := range p.GridCases(ipq) {
			r, _, err := RunTest(g, c.Algo, c.N, c.NB, p.Threshold, d.Options)
			if err != nil {
				return sum, err
			}
			switch {
			case r.Skipped || r.NoMemory:
				sum.Skip++
			case !r.Checked || r.Passed:
				sum.Pass++
			default:
				sum.Fail++
			}
			if root {
				if r.NoMemory {
					// Netlib warns and skips before the table's head, which the next test prints.
					if err := WriteResult(d.Out, r); err != nil {
						return sum, err
					}
					if d.OnResult != nil {
						d.OnResult(c, r)
					}
					continue
				}
				if first || p.Threshold > 0 {
					if err := WriteTableHead(d.Out); err != nil {
						return sum, err
					}
				}
				first = false
				if err := WriteResult(d.Out, r); err != nil {
					return sum, err
				}
				if d.OnResult != nil {
					d.OnResult(c, r)
				}
			}
		}
	}
	if root {
		if err := WriteSummary(d.Out, sum); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// DefaultParams is the built-in run used when there is no HPL.dat: one N sized for a short
// run (about half a minute with 4 ranks on a laptop), netlib's usual variant (WR11C2R4, mix
// swapping at 64 columns) and the squarest P x Q grid with P <= Q for the rank count.
func DefaultParams(ranks int) *Params {
	P, Q := SquarestGrid(ranks)
	return &Params{OutFile: "HPL.out", Device: 6, Ns: []int{DefaultN(ranks)}, NBs: []int{192},
		PMap: RowMajor, Ps: []int{P}, Qs: []int{Q}, Threshold: 16, PFacts: []Fact{Right},
		NBMins: []int{4}, NDivs: []int{2}, RFacts: []Fact{Crout}, BCasts: []Topo{Ring1M},
		Depths: []int{1}, Swap: SwapMix, SwapThr: 64, Equil: true, Align: 8}
}

// DefaultN grows the default problem with the rank count (the work per rank stays near a
// 5000^3 LU's), rounded to a multiple of the default NB.
func DefaultN(ranks int) int {
	n := 5000 * math.Cbrt(float64(max(ranks, 1)))
	return int(math.Round(n/192)) * 192
}

// SquarestGrid is the P x Q factorization of n with P <= Q and P as large as possible.
func SquarestGrid(n int) (P, Q int) {
	n = max(n, 1)
	P = 1
	for p := 1; p*p <= n; p++ {
		if n%p == 0 {
			P = p
		}
	}
	return P, n / P
}
