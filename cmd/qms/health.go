package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// health asks a running qms whether it is ready: the health check of the
// container image, which is FROM scratch and so has no curl or wget.
func health(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "URL to check (default: /readyz on the port of QMS_HTTP_ADDR, on 127.0.0.1)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		*url = localReadyURL(cmp.Or(os.Getenv("QMS_HTTP_ADDR"), ":8080"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %d: %s", *url, resp.StatusCode, body)
	}
	fmt.Fprintf(stdout, "%s\n", body)
	return nil
}

// localReadyURL is /readyz of a listener bound to addr, reached from the
// same machine.
func localReadyURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = "", "8080"
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz"
}
