package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/qms-dev/qms/bootstrap"
)

// resealSecrets is `qms reseal-secrets`: after a key rotation (the new key in
// QMS_WEBHOOKS_SECRET_KEY, the old ones in QMS_WEBHOOKS_OLD_SECRET_KEYS), it
// seals every stored signing secret under the new key, after which the old
// keys can be dropped.
func resealSecrets(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("reseal-secrets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	n, err := bootstrap.ResealSecrets(context.Background(), cfg)
	fmt.Fprintf(stderr, "qms: %d webhook signing secret(s) resealed under the current key\n", n)
	return err
}
