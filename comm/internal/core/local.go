package core

// LocalEagerLimit: messages within one process up to this size are copied into a queue
// when no receive is posted yet; larger ones wait for the receive and are copied once.
const LocalEagerLimit = 64 << 10

// DeliverLocal hands a message from world rank src to an engine in this process (the same rank,
// or another goroutine rank of the inproc transport).
func DeliverLocal(dst *Engine, src int, ctx uint64, tag int, payload []byte, req *Request) {
	eager := len(payload) <= LocalEagerLimit
	r, _ := dst.Arrive(src, ctx, tag, len(payload), func(m *InMsg) {
		if eager {
			m.Data = append(make([]byte, 0, len(payload)), payload...)
			m.Ready = true
			return
		}
		m.Fetch = func(r *RecvOp) {
			r.Deliver(src, tag, payload)
			req.Complete(Status{}, nil)
		}
		m.Abort = func(err error) { req.Complete(Status{}, err) }
	})
	if r != nil {
		r.Deliver(src, tag, payload)
		req.Complete(Status{}, nil)
		return
	}
	if eager {
		req.Complete(Status{}, nil)
	}
}

// ArriveCopy hands the engine a whole message whose payload aliases a transport buffer that
// is reused afterwards: a posted receive gets it copied in, else it is queued as a copy.
func (e *Engine) ArriveCopy(src int, ctx uint64, tag int, payload []byte) {
	r, _ := e.Arrive(src, ctx, tag, len(payload), func(m *InMsg) {
		m.Data = append(make([]byte, 0, len(payload)), payload...)
		m.Ready = true
	})
	if r != nil {
		r.Deliver(src, tag, payload)
	}
}
