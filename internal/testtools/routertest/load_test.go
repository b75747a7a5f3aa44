package routertest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"knit.dev/knit/internal/testtools"
)

// TestLoadStopsByItselfAndCountsWhatItGot: a load bounded to 60 requests
// sends exactly 60 and stops; answers are counted by version and status;
// a receiver that cuts every connection counts as failed, not as answered.
func TestLoadStopsByItselfAndCountsWhatItGot(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Version", "v9")
		n++
		if n%3 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	load := StartLoad(t, srv.URL, LoadOptions{Workers: 1, MaxRequests: 60})
	c := load.Await(t, 0, 60)
	if all := load.Stop(); all.Total != 60 || c.ByVersion["v9"] != 60 || c.ByStatus[500] != 20 || c.Errors != 20 || c.Failed != 0 {
		t.Errorf("bounded load: %+v, all %+v", c, all)
	}
	if got := load.Between(10, 20); got.Total != 10 {
		t.Errorf("requests 10 to 19: %+v", got)
	}
	if got := Send(t, testtools.DownURL(t), 3); got.Failed != 3 || got.Total != 3 || got.Share("v9") != 0 {
		t.Errorf("a receiver that is down: %+v", got)
	}
}
