package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// startPprof serves Go's profiles (/debug/pprof/) on QMS_PPROF_ADDR when it
// is set, for measuring where a process spends its time (docs/scaling.md).
// It is off by default and meant for a loopback address: profiles show the
// process's internals, so never expose it.
func startPprof(stderr io.Writer) {
	addr := os.Getenv("QMS_PPROF_ADDR")
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "qms: QMS_PPROF_ADDR %s: %v\n", addr, err)
		return
	}
	go func() { _ = http.Serve(ln, mux) }() //nolint:gosec // loopback debugging only, off by default
}
