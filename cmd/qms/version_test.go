package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/qms-dev/qms", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-11-20T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tagged := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}
	tests := []struct {
		name                  string
		version, commit, date string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"stamped by make build", "v1.2.3", "abc1234", "2026-11-23T13:00:00Z", vcs,
			"qms v1.2.3 (commit abc1234, built 2026-11-23T13:00:00Z, go1.26.8)"},
		{"plain go build in a checkout", "", "", "", vcs,
			"qms dev (commit 0123456789ab-dirty, built 2026-11-20T10:00:00Z, go1.26.8)"},
		{"go install of a tag", "", "", "", tagged,
			"qms v1.4.0 (commit unknown, built unknown, go1.26.8)"},
		{"no build information", "", "", "", nil,
			"qms dev (commit unknown, built unknown, " + resolveVersion("", "", "", nil).Go + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolveVersion(tt.version, tt.commit, tt.date, tt.info).String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("qms version exited %d: %s", code, errOut.String())
	}
	if got := out.String(); !strings.HasPrefix(got, "qms ") || !strings.Contains(got, "commit ") || !strings.Contains(got, "built ") {
		t.Errorf("qms version printed %q, want version, commit and build date", got)
	}
}
