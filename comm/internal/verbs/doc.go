// Package verbs is the device side of comm's RDMA verbs transport: which device a rank uses
// for each peer (DeviceNames, GORUN_RDMA_DEVICE's device matrix), the GIDs a connection pairs
// (PairGID), and the cache that keeps user buffers registered between messages (RegCache).
// The transport's protocol (queue pairs, credits, matching) is comm/internal/verbstp.
package verbs
