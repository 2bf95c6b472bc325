package comm

import "unsafe"

// Elem is the set of element types the typed point-to-point calls accept. Buffers travel as
// their in-memory bytes (all supported platforms are little-endian), without conversion.
type Elem interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

func elemSize[T Elem](v T) int { return int(unsafe.Sizeof(v)) }

// AsBytes views a typed slice as its bytes without copying.
func AsBytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*elemSize(zero))
}
