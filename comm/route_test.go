package comm

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gorun-hpc/gorun/comm/jobenv"
)

// countingTransport records the losses it is told of.
type countingTransport struct {
	mu   sync.Mutex
	lost map[int][]error
}

func (t *countingTransport) Send(dst int, ctx uint64, tag int, payload []byte, req *Request) {
	req.Complete(Status{}, errors.New("not a data path"))
}
func (t *countingTransport) PeerLost(rank int, cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lost[rank] = append(t.lost[rank], cause)
}
func (t *countingTransport) Finalize() error     { return nil }
func (t *countingTransport) Abandon(cause error) {}

// TestLoseReportsOnce: a lost peer is reported to every transport and the engine exactly once,
// with the first cause, however many times it is found.
func TestLoseReportsOnce(t *testing.T) {
	w := newWorld(0, 3, "h", []string{"h", "h", "h"})
	a, b := &countingTransport{lost: map[int][]error{}}, &countingTransport{lost: map[int][]error{}}
	w.setTransports([]transport{a, b})
	c := newComm(w, worldCtx, nil)
	pending := Irecv(c, make([]byte, 8), 1, 7)
	first, second := errors.New("link ended"), errors.New("timeout")
	w.lose(1, first)
	w.lose(1, second)
	for _, tr := range []*countingTransport{a, b} {
		assert.Equal(t, []error{first}, tr.lost[1])
		assert.Empty(t, tr.lost[2])
	}
	_, err := pending.Wait()
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Rank)
	assert.ErrorIs(t, err, first)
	// A receive from the lost rank posted later fails at once; one from a live rank does not.
	_, err = Recv(c, make([]byte, 8), 1, 7)
	assert.ErrorIs(t, err, first)
	assert.False(t, Irecv(c, make([]byte, 8), 2, 7).Finished())
}

// TestRouteTable: the routes Init builds carry each peer through the transport
// GORUN_TRANSPORT names (the TCP mesh always first among the transports), and only a
// transport that carries every peer gets the direct path.
func TestRouteTable(t *testing.T) {
	for _, name := range []string{jobenv.TransportTCP, jobenv.TransportShm} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(RunTransportVar, name)
			err := Run(3, func(c *Comm) error {
				trs := c.w.transports()
				if _, ok := trs[0].(meshTransport); !ok {
					return errors.New("the mesh is not the first transport")
				}
				for r, rt := range c.w.routes {
					switch {
					case r == c.Rank():
						if rt.tr != nil {
							return errors.New("a route to the rank itself")
						}
					case name == jobenv.TransportTCP && (rt.tr != trs[0] || rt.direct != nil || len(trs) != 1):
						return errors.New("tcp: a peer not on the mesh, or a direct path")
					case name == jobenv.TransportShm && (len(trs) != 2 || rt.tr != trs[1] || rt.direct == nil):
						return errors.New("shm: a peer not on shared memory, or no direct path")
					}
				}
				// The routes carry messages both ways.
				next, prev := (c.Rank()+1)%c.Size(), (c.Rank()+c.Size()-1)%c.Size()
				req := Isend(c, []int32{int32(c.Rank())}, next, 3)
				got := make([]int32, 1)
				if _, err := Recv(c, got, prev, 3); err != nil {
					return err
				}
				if got[0] != int32(prev) {
					return errors.New("wrong value")
				}
				_, err := req.Wait()
				return err
			})
			require.NoError(t, err)
		})
	}
}
