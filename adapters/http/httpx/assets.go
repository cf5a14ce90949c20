package httpx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/qms-dev/qms/core/platform"
)

// Cache lifetimes of the waiting-room pages' static files. A versioned
// address (…?v=<version>, the one the pages link to) names one content for
// ever, so a phone keeps it for a year without asking again; an address
// without the version (or an old version) may change with the next
// release, so it is kept five minutes and then revalidated with its ETag
// (304, no body).
const (
	CacheVersioned   = "public, max-age=31536000, immutable"
	CacheUnversioned = "public, max-age=300"
)

// AssetSet is the static files of an embedded page (the display board,
// the ticket page, the strings both use): scripts, style sheets and JSON
// catalogues read once at start, each with its ETag (a hash of its
// content), and a version naming the whole set. They are served without a
// rate limit (a waiting room behind one address loads them for every
// phone) and are cached by the browser; what a phone asks again is
// answered 304.
type AssetSet struct {
	prefix  string
	version string
	files   map[string]asset
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// NewAssets reads the .js, .css and .json files under dir of fsys ("." for
// all), served under prefix (e.g. "/ticket/assets/") by their base names
// (which must differ). Anything else embedded there is never served.
func NewAssets(fsys fs.FS, dir, prefix string) *AssetSet {
	s := &AssetSet{prefix: prefix, files: map[string]asset{}}
	var names []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ctype := assetType(p)
		if ctype == "" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if _, dup := s.files[path.Base(p)]; dup {
			return fmt.Errorf("two files named %s", path.Base(p))
		}
		name := path.Base(p)
		sum := sha256.Sum256(b)
		s.files[name] = asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		names = append(names, name)
		return nil
	})
	if err != nil {
		panic("httpx: reading embedded assets: " + err.Error())
	}
	sort.Strings(names)
	all := sha256.New()
	for _, n := range names {
		all.Write([]byte(n))
		all.Write([]byte(s.files[n].etag))
	}
	s.version = hex.EncodeToString(all.Sum(nil)[:6])
	return s
}

func assetType(name string) string {
	switch {
	case strings.HasSuffix(name, ".js"):
		return "text/javascript; charset=utf-8"
	case strings.HasSuffix(name, ".css"):
		return "text/css; charset=utf-8"
	case strings.HasSuffix(name, ".json"):
		return "application/json; charset=utf-8"
	}
	return ""
}

// Version names the content of the whole set: it changes when any file
// does.
func (s *AssetSet) Version() string { return s.version }

// URL is the versioned address of a file of the set.
func (s *AssetSet) URL(name string) string { return s.prefix + name + "?v=" + s.version }

// Versioned rewrites a page so that it links to the set's files by their
// versioned addresses: every quoted prefix+name becomes URL(name).
func (s *AssetSet) Versioned(page []byte) []byte {
	for name := range s.files {
		page = bytes.ReplaceAll(page, []byte(`"`+s.prefix+name+`"`), []byte(`"`+s.URL(name)+`"`))
	}
	return page
}

// Handler serves the set by the route's :file parameter (404 for any other
// name): the versioned address for a year, any other for five minutes,
// each with its ETag, answering If-None-Match with 304.
func (s *AssetSet) Handler() fiber.Handler {
	return func(c *fiber.Ctx) error {
		name := c.Params("file")
		a, ok := s.files[name]
		if !ok {
			return platform.NotFound("asset", name)
		}
		c.Set(fiber.HeaderContentType, a.ctype)
		c.Set("X-Content-Type-Options", "nosniff")
		c.Set(fiber.HeaderETag, a.etag)
		if c.Query("v") == s.version {
			c.Set(fiber.HeaderCacheControl, CacheVersioned)
		} else {
			c.Set(fiber.HeaderCacheControl, CacheUnversioned)
		}
		if match := c.Get(fiber.HeaderIfNoneMatch); match != "" && etagMatches(match, a.etag) {
			return c.SendStatus(fiber.StatusNotModified)
		}
		return c.Send(a.body)
	}
}

// etagMatches reports whether an If-None-Match header names etag (or *),
// weak or strong.
func etagMatches(header, etag string) bool {
	for _, v := range strings.Split(header, ",") {
		v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
		if v == etag || v == "*" {
			return true
		}
	}
	return false
}

// Assets serves the scripts and stylesheets of an embedded page from
// assets by the route's :file parameter; any other name is 404, so nothing
// else embedded is exposed. It is NewAssets(assets, ".", "").Handler().
func Assets(assets fs.FS) fiber.Handler { return NewAssets(assets, ".", "").Handler() }
