package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped at build time by `make build` and the container image:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc1234 -X main.date=2026-11-23T13:00:00Z"
//
// Whatever is left empty comes from the build information the Go toolchain
// records in every binary (the module version, vcs.revision, vcs.time), so a
// plain `go build` or `go install` still tells which commit it is.
var (
	version string
	commit  string
	date    string
)

// buildVersion is what `qms version` tells.
type buildVersion struct {
	Version, Commit, Date, Go string
	Modified                  bool
}

// currentVersion combines the stamped values with the build information.
func currentVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return resolveVersion(version, commit, date, info)
}

func resolveVersion(version, commit, date string, info *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: version, Commit: commit, Date: date, Go: runtime.Version()}
	if info != nil {
		v.Go = info.GoVersion
		if v.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if v.Commit == "" {
					v.Commit = s.Value
				}
			case "vcs.time":
				if v.Date == "" {
					v.Date = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true" && commit == ""
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if len(v.Commit) == 40 { // a full SHA-1: the usual short form
		v.Commit = v.Commit[:12]
	}
	if v.Modified && !strings.HasSuffix(v.Commit, "-dirty") {
		v.Commit += "-dirty"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	if v.Date == "" {
		v.Date = "unknown"
	}
	return v
}

func (v buildVersion) String() string {
	return fmt.Sprintf("qms %s (commit %s, built %s, %s)", v.Version, v.Commit, v.Date, v.Go)
}
