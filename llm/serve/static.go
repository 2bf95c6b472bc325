package serve

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var staticFiles embed.FS

// addStatic routes GET / to the chat page and GET /NAME to each of its assets; other paths
// stay unrouted (404, or 405 on the API's POST routes). It returns the paths it routed.
func addStatic(mux *http.ServeMux) []string {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux.Handle("GET /{$}", files)
	paths := []string{"/"}
	entries, _ := fs.ReadDir(sub, ".")
	for _, e := range entries {
		if e.Name() != "index.html" {
			mux.Handle("GET /"+e.Name(), files)
			paths = append(paths, "/"+e.Name())
		}
	}
	return paths
}
