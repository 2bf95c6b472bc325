//go:build !linux

package tcp

func NewLinkWaiter() LinkWaiter { return PollWaiter{} }
