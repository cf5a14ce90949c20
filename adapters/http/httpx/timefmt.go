package httpx

import "time"

// AppendRFC3339Nano appends t as t.AppendFormat(b, time.RFC3339Nano) does,
// for a year in [0, 9999], the zone's offset 0 (written Z: every time the
// process makes or stores is UTC). It reports false, with b as it was,
// for any other t; the caller then formats it the usual way.
//
// AppendFormat walks its layout and works out the date twice (the year
// check before it once more): about 2.5 % of a memory-mode GET's handler
// CPU for the access line's time and the view's two (issue 30).
// TestAppendRFC3339NanoAsAppendFormat holds the two to the same bytes.
func AppendRFC3339Nano(b []byte, t time.Time) ([]byte, bool) {
	if _, off := t.Zone(); off != 0 {
		return b, false
	}
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return b, false
	}
	hour, minute, second := t.Clock()
	// Spelled into a fixed buffer, appended once.
	var f [30]byte
	y := uint(year)
	f[0], f[1], f[2], f[3] = byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10)
	f[4] = '-'
	put2(f[5:7], uint(month))
	f[7] = '-'
	put2(f[8:10], uint(day))
	f[10] = 'T'
	put2(f[11:13], uint(hour))
	f[13] = ':'
	put2(f[14:16], uint(minute))
	f[16] = ':'
	put2(f[17:19], uint(second))
	n := 19
	if ns := uint(t.Nanosecond()); ns != 0 {
		// Nine digits, the trailing zeros dropped (the layout's 9s).
		f[19] = '.'
		for i := 28; i >= 20; i-- {
			f[i] = byte('0' + ns%10)
			ns /= 10
		}
		n = 29
		for f[n-1] == '0' {
			n--
		}
	}
	f[n] = 'Z'
	return append(b, f[:n+1]...), true
}

func put2(b []byte, v uint) {
	_ = b[1]
	b[0], b[1] = byte('0'+v/10), byte('0'+v%10)
}
