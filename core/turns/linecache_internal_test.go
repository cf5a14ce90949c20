package turns

import (
	"strconv"
	"sync"
	"testing"
)

// TestLineCacheBoundAndVersions: the cache keeps at most maxCachedRuns
// runs, never replaces a snapshot with an older one, and reads while
// others store.
func TestLineCacheBoundAndVersions(t *testing.T) {
	c := newLineCache()
	for i := range maxCachedRuns + 50 {
		c.put("run_"+strconv.Itoa(i), &lineSnapshot{version: 1})
	}
	count := 0
	c.runs.Range(func(_, _ any) bool { count++; return true })
	if count != maxCachedRuns || c.n != maxCachedRuns {
		t.Fatalf("%d runs cached (n %d), want %d", count, c.n, maxCachedRuns)
	}
	last := "run_" + strconv.Itoa(maxCachedRuns+49)
	if s := c.get(last); s == nil || s.version != 1 {
		t.Fatalf("the last run stored is not cached: %v", s)
	}
	c.put(last, &lineSnapshot{version: 5})
	c.put(last, &lineSnapshot{version: 3})
	if s := c.get(last); s.version != 5 || c.n != maxCachedRuns {
		t.Fatalf("version %d (n %d), want 5: an older snapshot replaced a newer one", s.version, c.n)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for v := range 1000 {
				c.put("hot", &lineSnapshot{version: int64(v)})
				if s := c.get("hot"); s == nil {
					t.Errorf("worker %d: the hot run vanished", w)
					return
				}
			}
		})
	}
	wg.Wait()
	if s := c.get("hot"); s.version != 999 {
		t.Fatalf("hot run at version %d, want 999", s.version)
	}
}
