// Spawn-per-request HTTP server: net/http + os/exec.
// GET /echo runs `echo hi`, GET /cat runs `cat $BENCH_CAT_FILE`; the child's
// stdout is copied into the response as it arrives (os/exec pumps the pipe).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
)

func main() {
	port := os.Getenv("PORT")
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	catFile := os.Getenv("BENCH_CAT_FILE")

	run := func(name string, args ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			cmd := exec.Command(name, args...)
			cmd.Stdout = w
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				http.Error(w, "spawn failed", http.StatusInternalServerError)
			}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", run("echo", "hi"))
	mux.HandleFunc("/cat", run("cat", catFile))

	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
