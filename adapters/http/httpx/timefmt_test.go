package httpx

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestAppendRFC3339NanoAsAppendFormat(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	times := []time.Time{
		{}, time.Unix(0, 0).UTC(), time.Now(), time.Now().UTC(), time.Now().In(paris),
		time.Date(2026, 11, 26, 16, 9, 57, 934332000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 120000000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 3, 29, 1, 30, 0, 0, paris),
		time.Date(2026, 3, 29, 1, 30, 0, 0, time.FixedZone("UTC0", 0)),
		time.Date(2026, 3, 29, 1, 30, 0, 0, time.FixedZone("", -1)),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		// Any second of years 0-9999, any nanosecond, a fifth with
		// whole or rounder fractions.
		ns := r.Int64N(1e9)
		switch r.IntN(5) {
		case 0:
			ns = 0
		case 1:
			ns -= ns % 1000
		}
		tm := time.Unix(r.Int64N(315537897600)-62167219200, ns)
		if r.IntN(2) == 0 {
			tm = tm.UTC()
		}
		times = append(times, tm)
	}
	for _, tm := range times {
		want := tm.AppendFormat([]byte("x"), time.RFC3339Nano)
		got, ok := AppendRFC3339Nano([]byte("x"), tm)
		_, off := tm.Zone()
		if y := tm.Year(); off != 0 || y < 0 || y > 9999 {
			if ok || string(got) != "x" {
				t.Errorf("%v: %q, %v; want it left to AppendFormat", tm, got, ok)
			}
			continue
		}
		if !ok || string(got) != string(want) {
			t.Errorf("%v: %q, %v; want %q", tm, got, ok, want)
		}
	}
}

func BenchmarkAppendRFC3339Nano(b *testing.B) {
	tm := time.Date(2026, 11, 26, 16, 9, 57, 934332000, time.UTC)
	buf := make([]byte, 0, 64)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			buf, _ = AppendRFC3339Nano(buf[:0], tm)
		}
	})
	b.Run("AppendFormat", func(b *testing.B) {
		for b.Loop() {
			buf = tm.AppendFormat(buf[:0], time.RFC3339Nano)
		}
	})
}
