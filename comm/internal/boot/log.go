package boot

import (
	"fmt"
	"os"
)

// Logf reports events a bootstrap cannot return as an error (a refused stranger). A variable
// so that tests can capture it.
var Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
