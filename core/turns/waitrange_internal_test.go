package turns

import "testing"

func TestWaitRange(t *testing.T) {
	samples := []float64{240, 300, 360}
	cases := []struct {
		name              string
		position, servers int
		samples           []float64
		want              *WaitRange
	}{
		{"no history", 1, 1, nil, nil},
		{"too little history", 3, 1, []float64{300, 300}, nil},
		// Next in line: the service times' own percentiles.
		{"next in line", 1, 1, samples, &WaitRange{P50Seconds: 300, P90Seconds: 348, P50Minutes: 5, P90Minutes: 6, Samples: 3}},
		// Second: two services, mean 600, sd 60·√2; p90 = 600 + 1.2816·84.85.
		{"second", 2, 1, samples, &WaitRange{P50Seconds: 600, P90Seconds: 709, P50Minutes: 10, P90Minutes: 12, Samples: 3}},
		// Two servers share the line: half the wait.
		{"two servers", 2, 2, samples, &WaitRange{P50Seconds: 300, P90Seconds: 354, P50Minutes: 5, P90Minutes: 6, Samples: 3}},
		// Identical service times: no spread.
		{"no spread", 4, 1, []float64{120, 120, 120}, &WaitRange{P50Seconds: 480, P90Seconds: 480, P50Minutes: 8, P90Minutes: 8, Samples: 3}},
	}
	for _, c := range cases {
		got, ok := waitRange(c.position, c.samples, c.servers)
		switch {
		case c.want == nil && ok:
			t.Errorf("%s: %+v, want none", c.name, got)
		case c.want != nil && (!ok || got != *c.want):
			t.Errorf("%s: %+v (%v), want %+v", c.name, got, ok, *c.want)
		}
	}
}

// TestWaitRangeWidensSlowerThanTheWait: further back in line, the range
// grows with the square root of the position while the wait grows with it,
// so it narrows relative to the wait, and p90 never falls below p50.
func TestWaitRangeWidensSlowerThanTheWait(t *testing.T) {
	samples := []float64{60, 600, 180, 240, 900, 120, 300}
	prev := 1.0
	for pos := 2; pos <= 50; pos++ {
		r, _ := waitRange(pos, samples, 1)
		if r.P90Seconds < r.P50Seconds {
			t.Fatalf("position %d: p90 %d < p50 %d", pos, r.P90Seconds, r.P50Seconds)
		}
		rel := float64(r.P90Seconds-r.P50Seconds) / float64(r.P50Seconds)
		if rel > prev {
			t.Fatalf("position %d: relative spread %.3f grew from %.3f", pos, rel, prev)
		}
		prev = rel
	}
}
