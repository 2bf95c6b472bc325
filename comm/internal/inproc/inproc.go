// Package inproc is the in-process transport: the goroutine ranks of comm.Run, whose engines
// all live in one process, so that a send goes straight to the destination's engine.
package inproc

import "github.com/gorun-hpc/gorun/comm/internal/core"

// Transport connects rank Self to the other goroutine ranks of its process; Engines[r] is
// world rank r's engine.
type Transport struct {
	Self    int
	Engines []*core.Engine
}

// Send hands the message to the destination's engine: a small one is copied at once, a large
// one when its receive is posted.
func (t *Transport) Send(dst int, ctx uint64, tag int, payload []byte, req *core.Request) {
	core.DeliverLocal(t.Engines[dst], t.Self, ctx, tag, payload, req)
}

// Goroutine ranks fail and end together under comm.Run, which reports their losses itself.

// PeerLost does nothing: comm.Run fails the ranks' operations through their engines.
func (t *Transport) PeerLost(rank int, cause error) {}

// Finalize does nothing: there is nothing in flight outside the engines.
func (t *Transport) Finalize() error { return nil }

// Abandon does nothing, as Finalize.
func (t *Transport) Abandon(cause error) {}
