package comm

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/gorun-hpc/gorun/comm/internal/core"
)

// Send sends buf to rank dst of c with the given tag and returns once buf may be reused
// (MPI_Send, standard mode: small messages are buffered, large ones wait for the receiver).
func Send[T Elem](c *Comm, buf []T, dst, tag int) error {
	if ok, err := c.sendDirect(AsBytes(buf), dst, tag); ok {
		return err
	}
	_, err := c.isend(AsBytes(buf), dst, tag).Wait()
	return err
}

// Isend starts sending buf to dst; buf must not be modified until the request completes.
//
// A small message to a peer on the same host is copied into its shared-memory queue at
// once, where there is room: the request is then complete when Isend returns, and may be one
// completed Request that such sends share (its Wait and Test always report success).
func Isend[T Elem](c *Comm, buf []T, dst, tag int) *Request {
	return c.isend(AsBytes(buf), dst, tag)
}

// Recv receives a message from src (or AnySource) with tag (or AnyTag) into buf. A message
// longer than buf fills it and returns a *TruncateError.
func Recv[T Elem](c *Comm, buf []T, src, tag int) (Status, error) {
	if ok, st, err := c.recvDirect(AsBytes(buf), src, tag); ok {
		return st, err
	}
	return c.irecv(AsBytes(buf), src, tag, false).Req.Wait()
}

// Irecv starts a receive into buf; buf must not be read until the request completes.
//
// A receive from a peer on the same host whose message is already in its shared-memory queue
// (and that no earlier receive or queued message comes before) completes at once.
func Irecv[T Elem](c *Comm, buf []T, src, tag int) *Request {
	if ok, st, err := c.recvNow(AsBytes(buf), src, tag); ok {
		return core.CompletedRequest(st, err)
	}
	return &c.irecv(AsBytes(buf), src, tag, false).Req
}

// Sendrecv sends sendbuf to dst and receives into recvbuf from src at the same time, without
// the deadlock two blocking calls in a cycle of ranks would risk.
func Sendrecv[T Elem](c *Comm, sendbuf []T, dst, sendtag int, recvbuf []T, src, recvtag int) (Status, error) {
	// A small message to a direct-link peer is buffered by the blocking send, which polls the
	// incoming rings while it waits for room: the blocking pair cannot deadlock, and takes
	// the allocation-free path of Send and Recv.
	if sb := AsBytes(sendbuf); c.bufferedDirect(len(sb), dst) {
		if ok, err := c.sendDirect(sb, dst, sendtag); ok {
			if err != nil {
				return Status{}, err
			}
			return Recv(c, recvbuf, src, recvtag)
		}
	}
	rr := &c.irecv(AsBytes(recvbuf), src, recvtag, false).Req
	sr := c.isend(AsBytes(sendbuf), dst, sendtag)
	st, rerr := rr.Wait()
	_, serr := sr.Wait()
	if rerr != nil {
		return st, rerr
	}
	return st, serr
}

// Probe blocks until a message from src with tag can be received and returns its status
// without receiving it.
func (c *Comm) Probe(src, tag int) (Status, error) {
	ws, err := c.checkRecvArgs(src, tag)
	if err != nil {
		return Status{}, err
	}
	st, _, err := c.w.eng.Probe(c.index, ws, c.ctx, tag, true)
	return st, err
}

// Iprobe reports whether a message from src with tag can be received now, and its status.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	ws, err := c.checkRecvArgs(src, tag)
	if err != nil {
		return Status{}, false, err
	}
	return c.w.eng.Probe(c.index, ws, c.ctx, tag, false)
}

// SendValue sends any Go value (encoded with msgpack) to dst: the path for control messages
// and small structured data.
func (c *Comm) SendValue(v any, dst, tag int) error {
	var buf bytes.Buffer
	if err := msgpack.NewEncoder(&buf).Encode(v); err != nil {
		return fmt.Errorf("comm: SendValue to rank %d: encode: %w", dst, err)
	}
	return Send(c, buf.Bytes(), dst, tag)
}

// RecvValue receives a value sent with SendValue and decodes it into v (a pointer).
func (c *Comm) RecvValue(v any, src, tag int) (Status, error) {
	op := c.irecv(nil, src, tag, true)
	st, err := op.Req.Wait()
	if err != nil {
		return st, err
	}
	if err := msgpack.Unmarshal(op.Buf, v); err != nil {
		return st, fmt.Errorf("comm: RecvValue from rank %d: decode: %w", st.Source, err)
	}
	return st, nil
}

func (c *Comm) checkTag(tag int, anyOK bool) error {
	if (anyOK && tag == AnyTag) || (tag >= 0 && tag < MaxTag) {
		return nil
	}
	return fmt.Errorf("comm: tag %d out of range [0,%d)", tag, MaxTag)
}

func (c *Comm) checkRecvArgs(src, tag int) (int, error) {
	if c.w.closed.Load() {
		return 0, ErrClosed
	}
	if err := c.checkTag(tag, true); err != nil {
		return 0, err
	}
	if src == AnySource {
		return AnySource, nil
	}
	if src < 0 || src >= c.Size() {
		return 0, rankError("source", src, c.Size())
	}
	return c.WorldRank(src), nil
}

func (c *Comm) isend(b []byte, dst, tag int) *Request {
	if c.w.closed.Load() {
		return core.CompletedRequest(Status{}, ErrClosed)
	}
	if err := c.checkTag(tag, false); err != nil {
		return core.CompletedRequest(Status{}, err)
	}
	if dst < 0 || dst >= c.Size() {
		return core.CompletedRequest(Status{}, rankError("destination", dst, c.Size()))
	}
	if c.bufferedDirect(len(b), dst) {
		// Buffered at once (the general path would do the same, with a Request of its own).
		if ok, err := c.sendDirect(b, dst, tag); ok {
			if err != nil {
				return core.CompletedRequest(Status{}, err)
			}
			return sentRequest
		}
	}
	req := core.NewRequest()
	req.Prog, req.Patient = c.w.prog, c.patient
	w := c.WorldRank(dst)
	if w == c.w.rank {
		core.DeliverLocal(c.w.eng, w, c.ctx, tag, b, req)
		return req
	}
	if err := c.w.eng.IsDead(w); err != nil {
		req.Complete(Status{}, err)
		return req
	}
	c.w.routes[w].tr.Send(w, c.ctx, tag, b, req)
	return req
}

func (c *Comm) irecv(b []byte, src, tag int, alloc bool) *core.RecvOp {
	r := &core.RecvOp{Ctx: c.ctx, Tag: tag, Buf: b, Alloc: alloc, Index: c.index}
	r.Req.Prog, r.Req.Patient = c.w.prog, c.patient
	ws, err := c.checkRecvArgs(src, tag)
	if err != nil {
		r.Req.Complete(Status{}, err)
		return r
	}
	r.Src = ws
	c.w.eng.Post(r)
	return r
}

// sendDirect is a blocking Send through the route's direct link (route.go), where there is one
// and the arguments are valid: it reports false, having done nothing, where the general path
// (which also produces every error) must take the message.
func (c *Comm) sendDirect(b []byte, dst, tag int) (bool, error) {
	if dst < 0 || dst >= c.Size() || tag < 0 || tag >= MaxTag || c.w.closed.Load() || c.w.eng.NDead.Load() != 0 {
		return false, nil
	}
	d := c.w.routes[c.WorldRank(dst)].direct
	if d == nil {
		return false, nil
	}
	return d.SendDirect(c.ctx, c.patient, b, tag)
}

// bufferedDirect reports whether a message of n bytes to dst would go through a direct link
// and be buffered there (sendDirect returns without waiting for the receiver).
func (c *Comm) bufferedDirect(n, dst int) bool {
	if dst < 0 || dst >= c.Size() {
		return false
	}
	d := c.w.routes[c.WorldRank(dst)].direct
	return d != nil && n <= d.EagerMax()
}

// recvDirect is a blocking Recv from one peer through its route's direct link, as sendDirect.
func (c *Comm) recvDirect(b []byte, src, tag int) (bool, Status, error) {
	if src < 0 || src >= c.Size() || tag < 0 || tag >= MaxTag || c.w.closed.Load() {
		return false, Status{}, nil
	}
	ws := c.WorldRank(src)
	d := c.w.routes[ws].direct
	if d == nil {
		return false, Status{}, nil
	}
	return d.RecvDirect(c.ctx, c.index, c.patient, b, ws, tag)
}

// recvNow takes a message from one peer through its route's direct link if it is there
// already, as recvDirect without the wait; false: it took nothing.
func (c *Comm) recvNow(b []byte, src, tag int) (bool, Status, error) {
	if src < 0 || src >= c.Size() || (tag != AnyTag && (tag < 0 || tag >= MaxTag)) || c.w.closed.Load() {
		return false, Status{}, nil
	}
	ws := c.WorldRank(src)
	d := c.w.routes[ws].direct
	if d == nil {
		return false, Status{}, nil
	}
	return d.RecvNow(c.ctx, c.index, c.patient, b, ws, tag)
}
