package bench

import (
	"fmt"
	"sort"
	"time"
)

func met(b bool) *bool { return &b }

func median(ds []time.Duration) time.Duration {
	c := append([]time.Duration(nil), ds...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// pairedRatio is the median of a[i] ÷ b[i]: each pair ran back to back,
// so its ratio holds even when the machine's speed drifts between pairs,
// which a ratio of the two medians does not.
func pairedRatio(a, b []time.Duration) float64 {
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = ratio(a[i], b[i])
	}
	sort.Float64s(rs)
	if n := len(rs); n%2 == 0 {
		return (rs[n/2-1] + rs[n/2]) / 2
	}
	return rs[len(rs)/2]
}

func ms(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
