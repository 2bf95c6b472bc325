//go:build !linux && !darwin

package ibv

import "errors"

func openSoft(string) (Device, error) {
	return nil, errors.New("the software RDMA device needs shared memory (Linux or macOS)")
}
