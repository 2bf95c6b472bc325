//go:build openblas && cgo

package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>

extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv, double *b, const int *ldb, int *info);
*/
import "C"

// The callers (package linalg) have checked every argument, converted
// sizes to the 32-bit integers of OpenBLAS's LP64 interface and ensured
// that the slices are non-empty.

func trans(t bool) C.enum_CBLAS_TRANSPOSE {
	if t {
		return C.CblasTrans
	}
	return C.CblasNoTrans
}

// Dgemm is cblas_dgemm on column-major data.
func Dgemm(tA, tB bool, m, n, k int32, alpha float64, a []float64, lda int32, b []float64, ldb int32, beta float64, c []float64, ldc int32) {
	C.cblas_dgemm(C.CblasColMajor, trans(tA), trans(tB), C.int(m), C.int(n), C.int(k),
		C.double(alpha), (*C.double)(&a[0]), C.int(lda), (*C.double)(&b[0]), C.int(ldb),
		C.double(beta), (*C.double)(&c[0]), C.int(ldc))
}

// Dtrsm is cblas_dtrsm on column-major data.
func Dtrsm(left, upper, tA, unit bool, m, n int32, alpha float64, a []float64, lda int32, b []float64, ldb int32) {
	side, uplo, diag := C.enum_CBLAS_SIDE(C.CblasRight), C.enum_CBLAS_UPLO(C.CblasLower), C.enum_CBLAS_DIAG(C.CblasNonUnit)
	if left {
		side = C.CblasLeft
	}
	if upper {
		uplo = C.CblasUpper
	}
	if unit {
		diag = C.CblasUnit
	}
	C.cblas_dtrsm(C.CblasColMajor, side, uplo, trans(tA), diag, C.int(m), C.int(n),
		C.double(alpha), (*C.double)(&a[0]), C.int(lda), (*C.double)(&b[0]), C.int(ldb))
}

// Dgetrf is LAPACK's dgetrf; ipiv is one-based, as LAPACK writes it.
func Dgetrf(m, n int32, a []float64, lda int32, ipiv []int32) (info int32) {
	cm, cn, clda := C.int(m), C.int(n), C.int(lda)
	var ci C.int
	C.dgetrf_(&cm, &cn, (*C.double)(&a[0]), &clda, (*C.int)(&ipiv[0]), &ci)
	return int32(ci)
}

// Dgetrs is LAPACK's dgetrs; ipiv is one-based.
func Dgetrs(tA bool, n, nrhs int32, a []float64, lda int32, ipiv []int32, b []float64, ldb int32) (info int32) {
	t := C.char('N')
	if tA {
		t = 'T'
	}
	cn, cnrhs, clda, cldb := C.int(n), C.int(nrhs), C.int(lda), C.int(ldb)
	var ci C.int
	C.dgetrs_(&t, &cn, &cnrhs, (*C.double)(&a[0]), &clda, (*C.int)(&ipiv[0]), (*C.double)(&b[0]), &cldb, &ci)
	return int32(ci)
}

// SetNumThreads sets the size of OpenBLAS's thread pool.
func SetNumThreads(n int) { C.openblas_set_num_threads(C.int(n)) }
