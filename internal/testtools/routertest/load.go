package routertest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Counts are the answers to a set of requests: by version (the app's
// X-Version header) and by HTTP status; Failed counts requests that got
// no answer at all (a refused or cut connection, a timeout: status 0)
// and Errors those answered 5xx.
type Counts struct {
	Total, Failed, Errors int
	ByVersion             map[string]int
	ByStatus              map[int]int
}

// Share is the percentage of the requests version answered.
func (c Counts) Share(version string) float64 {
	if c.Total == 0 {
		return 0
	}
	return 100 * float64(c.ByVersion[version]) / float64(c.Total)
}

func (c *Counts) add(r result) {
	if c.ByVersion == nil {
		c.ByVersion, c.ByStatus = map[string]int{}, map[int]int{}
	}
	c.Total++
	c.ByStatus[r.status]++
	switch {
	case r.status == 0:
		c.Failed++
	case r.status >= 500:
		c.Errors++
	}
	if r.version != "" {
		c.ByVersion[r.version]++
	}
}

type result struct {
	seq     int64
	status  int
	version string
}

// LoadOptions bound a load. The zero value is 4 workers, each sending its
// next request as soon as the last is answered, for at most 10 minutes or
// 1,000,000 requests.
type LoadOptions struct {
	Workers     int
	Gap         time.Duration // each worker's pause between requests
	Max         time.Duration
	MaxRequests int64
}

// Load is a bounded loopback load on one URL: workers sending GETs until
// Stop, the time bound or the request bound, whichever comes first.
// Requests are numbered in the order they start; Mark and Since count
// the answers to the requests started after a point, which is how a test
// asks "did every request after the switch reach green?" without timing.
type Load struct {
	url    string
	client *http.Client
	next   atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed when every worker has returned
	mu     sync.Mutex
	res    []result
}

// StartLoad starts a load on url; it stops by itself (see LoadOptions) and
// at the latest when t ends.
func StartLoad(t testing.TB, url string, o LoadOptions) *Load {
	t.Helper()
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Max <= 0 {
		o.Max = 10 * time.Minute
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 1_000_000
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Max)
	l := &Load{url: url, client: newClient(o.Workers), cancel: cancel, done: make(chan struct{})}
	for range o.Workers {
		l.wg.Add(1)
		go l.work(ctx, o)
	}
	go func() { l.wg.Wait(); close(l.done) }()
	t.Cleanup(func() { l.Stop() })
	return l
}

func (l *Load) work(ctx context.Context, o LoadOptions) {
	defer l.wg.Done()
	for ctx.Err() == nil {
		seq := l.next.Add(1) - 1
		if seq >= o.MaxRequests {
			return
		}
		r := get(ctx, l.client, l.url)
		if r.status == 0 && ctx.Err() != nil {
			return // cut by Stop: not an answer the router failed to give
		}
		r.seq = seq
		l.mu.Lock()
		l.res = append(l.res, r)
		l.mu.Unlock()
		if o.Gap > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(o.Gap):
			}
		}
	}
}

// Mark is the number the next request started will get.
func (l *Load) Mark() int64 { return l.next.Load() }

// Since counts the answers so far to the requests started at or after mark.
func (l *Load) Since(mark int64) Counts { return l.Between(mark, -1) }

// Between counts the answers to the requests started at or after from and
// before to (to < 0: no end).
func (l *Load) Between(from, to int64) Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c Counts
	for _, r := range l.res {
		if r.seq >= from && (to < 0 || r.seq < to) {
			c.add(r)
		}
	}
	return c
}

// Await waits until n answers to requests started at or after mark are
// in, and counts them; it fails t when the load stops first.
func (l *Load) Await(t testing.TB, mark int64, n int) Counts {
	t.Helper()
	for {
		c := l.Since(mark)
		if c.Total >= n {
			return c
		}
		select {
		case <-l.done:
			if c = l.Since(mark); c.Total >= n {
				return c
			}
			t.Fatalf("load stopped with %d of %d answers after mark %d", c.Total, n, mark)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops the load, waits for its workers, and counts every answer.
func (l *Load) Stop() Counts {
	l.cancel()
	<-l.done
	return l.Since(0)
}

// Send sends n requests to url one after the other and counts the answers.
func Send(t testing.TB, url string, n int) Counts {
	t.Helper()
	client := newClient(1)
	var c Counts
	for range n {
		c.add(get(context.Background(), client, url))
	}
	return c
}

func newClient(workers int) *http.Client {
	return &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers, Proxy: nil},
	}
}

func get(ctx context.Context, client *http.Client, url string) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return result{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return result{}
	}
	v := resp.Header.Get("X-Version")
	if v == "" {
		v = strings.TrimSpace(string(body))
	}
	return result{status: resp.StatusCode, version: v}
}
