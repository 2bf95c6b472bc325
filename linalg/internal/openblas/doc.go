// Package openblas binds the few OpenBLAS (CBLAS and LAPACK) routines that
// package linalg's optional openblas backend uses. It has content only with
// the openblas build tag and cgo; it lives apart from linalg because a
// package that uses cgo cannot also hold Go assembly.
package openblas
