package linalg

func init() { kern = availableKernels()[0] }
