// Package linalg provides the dense kernels that HPL and the rest of gorun
// need: BLAS routines (Dgemm, Dtrsm, Dger, Daxpy, Dscal, Dswap, Idamax) and
// LAPACK routines (Dgetrf, Dgetrs, Dlaswp).
//
// Conventions follow reference BLAS and LAPACK, not gonum's row-major ones:
// matrices are column-major, element (i, j) of an m×n matrix A with leading
// dimension lda is a[i+j*lda], and lda >= max(1, m). Pivot indices are
// zero-based row numbers (as in gonum): ipiv[i] = p means rows i and p were
// interchanged. Vector increments may be negative where reference BLAS allows
// it, with the same meaning (the vector starts at x[(1-n)*inc]).
//
// Invalid arguments (negative sizes, a leading dimension that is too small,
// a slice too short for the sizes given, an unknown Transpose, Uplo, Side or
// Diag value) are programmer errors: the routines panic with a message naming
// the routine and the argument, as BLAS's xerbla reports them, before they
// touch any memory. Numerical conditions are not errors: Dgetrf reports a
// zero pivot through its info result, as LAPACK does.
//
// Dgemm is organised as in BLIS: panels of A and B are packed into
// contiguous buffers sized to the caches and a small register-blocked
// micro-kernel (Go assembly where available, pure Go under the noasm build
// tag) computes each tile. Dtrsm and Dgetrf are blocked or recursive so that
// almost all of their floating-point work runs inside Dgemm. The kernel is
// chosen at start-up from the CPU's features: AVX-512 (24×8 tile) or
// AVX2+FMA (8×6) on amd64, NEON (8×6) on arm64, and a pure-Go 4×4 kernel
// elsewhere or when built with the noasm tag. GORUN_LINALG_BLOCKS=mc,kc,nc
// overrides the cache blocking for tuning on a new CPU. PackA and
// DgemmPackedA pack a left operand once for many products (HPL's L panel is
// packed by the process that factors it and broadcast packed); the layout is
// the kernel's, named by PackedALayout, so processes that exchange packed
// matrices must first agree on it.
//
// A call uses up to GOMAXPROCS goroutines (see SetThreads); every routine is
// safe for concurrent use on disjoint outputs. Packing buffers are kept and
// reused across calls, since touching fresh pages is slow; Reserve readies
// them ahead of a timed region.
package linalg

// Transpose says whether a matrix operand is used as is or transposed.
type Transpose byte

// Transpose values.
const (
	NoTrans Transpose = 'N'
	Trans   Transpose = 'T'
)

// Uplo says which triangle of a matrix is referenced.
type Uplo byte

// Uplo values.
const (
	Upper Uplo = 'U'
	Lower Uplo = 'L'
)

// Side says on which side a triangular matrix multiplies.
type Side byte

// Side values.
const (
	Left  Side = 'L'
	Right Side = 'R'
)

// Diag says whether a triangular matrix has an implicit unit diagonal.
type Diag byte

// Diag values.
const (
	NonUnit Diag = 'N'
	Unit    Diag = 'U'
)
