//go:build !linux && !darwin

package ibv

import "errors"

func openSoft() (Device, error) {
	return nil, errors.New("the software RDMA device needs shared memory (Linux or macOS)")
}
