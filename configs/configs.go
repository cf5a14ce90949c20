// Package configs embeds the default configuration, so the binary runs with
// no file beside it.
package configs

import _ "embed"

// Default is configs/default.yaml.
//
//go:embed default.yaml
var Default []byte
