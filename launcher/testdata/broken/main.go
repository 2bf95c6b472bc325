// Command broken does not compile: the launcher must report the build failure.
package main

func main() {
	var n int = "not a number"
	_ = n
}
