module github.com/gorun-hpc/gorun/linalg/_gen

go 1.26.0
