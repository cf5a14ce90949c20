package main

import "testing"

func TestLocalReadyURL(t *testing.T) {
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/readyz",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/readyz",
		"[::]:9000":      "http://127.0.0.1:9000/readyz",
		"127.0.0.2:8081": "http://127.0.0.2:8081/readyz",
		"nonsense":       "http://127.0.0.1:8080/readyz",
	} {
		if got := localReadyURL(addr); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}
