package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qms-dev/qms/test/apptest"
)

// TestThirdPartyVerifierAcceptsDeliveries hands real deliveries to
// @octokit/webhooks-methods, a widely used verifier of the same scheme
// (sha256= and the hex HMAC-SHA256 of the raw body): it must accept them,
// compute the same signatures, and refuse a tampered body.
//
// The package is vendored in test/webhookverify (a tarball and its lock
// file) and installed with `npm ci --offline` into a temporary copy, so the
// check needs Node.js 20+ and npm but no network.
func TestThirdPartyVerifierAcceptsDeliveries(t *testing.T) {
	t.Parallel()
	node, npm := lookTool(t, "node"), lookTool(t, "npm")
	dir := copyNodeProject(t, "webhookverify")
	install := exec.Command(npm, "ci", "--offline", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}

	a := apptest.Memory(t, whNoLimit)
	rc := newWhReceiver(t, whStatic(http.StatusOK))
	run := whRun(t, a) // names with non-ASCII letters: the check is on bytes
	_, secret := whEndpoint(t, a, rc.URL(), "queue.closed", "queue.opened")
	for _, op := range []string{"close", "open", "close"} {
		whToggle(t, a, run, op)
	}
	hits := rc.wait(t, 3, 10*time.Second)

	type check struct {
		Secret    string `json:"secret"`
		Body      string `json:"body"`
		Signature string `json:"signature"`
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, h := range hits {
		_ = enc.Encode(check{secret, string(h.Body), h.Header.Get("X-Service-Signature")})
	}
	tampered := strings.Replace(string(hits[0].Body), `"queue.`, `"queue. `, 1)
	_ = enc.Encode(check{secret, tampered, hits[0].Header.Get("X-Service-Signature")})
	_ = enc.Encode(check{"whsec_not-the-secret", string(hits[0].Body), hits[0].Header.Get("X-Service-Signature")})

	verify := exec.Command(node, "verify.mjs")
	verify.Dir = dir
	verify.Stdin = &in
	var stderr bytes.Buffer
	verify.Stderr = &stderr
	out, err := verify.Output()
	if err != nil {
		t.Fatalf("node verify.mjs: %v\n%s", err, stderr.String())
	}
	var results []struct {
		OK   bool   `json:"ok"`
		Sign string `json:"sign"`
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			OK   bool   `json:"ok"`
			Sign string `json:"sign"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("verifier output %q: %v", sc.Text(), err)
		}
		results = append(results, r)
	}
	if len(results) != len(hits)+2 {
		t.Fatalf("%d results for %d checks: %s", len(results), len(hits)+2, out)
	}
	for i, h := range hits {
		if !results[i].OK || results[i].Sign != h.Header.Get("X-Service-Signature") {
			t.Errorf("delivery %s: octokit accepts %v, computes %s, the service sent %s", h.Delivery(), results[i].OK, results[i].Sign, h.Header.Get("X-Service-Signature"))
		}
	}
	if results[len(hits)].OK || results[len(hits)+1].OK {
		t.Error("octokit accepted a tampered body or a wrong secret: the check proves nothing")
	}
}

// lookTool finds a program, or skips the test outside CI when it is not
// installed (CI=true makes its absence a failure).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required: %v", name, err)
		}
		t.Skipf("%s is not installed (required when CI=true)", name)
	}
	return p
}

// copyNodeProject copies test/<name> (without node_modules) into a
// temporary directory, so installing it leaves the tree untouched.
func copyNodeProject(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("..", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
