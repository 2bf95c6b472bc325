// Package notmain is a library: the launcher must refuse to run it.
package notmain

// Answer exists so the package is not empty.
const Answer = 42
