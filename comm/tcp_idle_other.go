//go:build !linux

package comm

func newLinkWaiter() linkWaiter { return pollWaiter{} }
